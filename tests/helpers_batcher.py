"""Test helpers for the batcher: a backend that can be held, and a client
that sends one request and returns its answer."""
import threading

import numpy as np

from sayuri_async.infer.batcher import Batcher
from sayuri_async.net.backends import Backend, NetOutput


class FakeBackend(Backend):
    """Echoes plane [0,0,0] of each request as its score; can be held."""

    encoder = "simple-v1"
    planes = 2
    name = "fake"
    device = "cpu"

    def __init__(self) -> None:
        self.calls: list[int] = []
        self.release = threading.Event()
        self.release.set()

    def alloc_input(self, max_batch, n):
        return np.zeros((max_batch, self.planes, n, n), dtype=np.uint8)

    def run(self, batch):
        self.release.wait(5)
        b, _, n, _ = batch.shape
        self.calls.append(b)
        return NetOutput(
            np.full((b, n * n + 1), 1.0 / (n * n + 1), np.float32),
            np.tile(np.array([0.5, 0, 0.5], np.float32), (b, 1)),
            batch[:, 0, 0, 0].astype(np.float32),
            np.zeros((b, n * n), np.float32),
        )


async def request(bt: Batcher, tag: int):
    arr, slot, _ = bt.reserve()
    arr[slot, 0, 0, 0] = tag
    out = await bt.commit()
    return float(out.score[slot])  # a request's row is its slot
