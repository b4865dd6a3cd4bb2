"""Test helpers: an evaluator that answers at once from a value function of
the encoded planes (simple-v1: plane 0 own stones, plane 1 opponent stones)."""
from __future__ import annotations

import asyncio

import numpy as np

from sayuri_async.infer.stats import Counters
from sayuri_async.net.backends import NetOutput


class InstantEvaluator:
    def __init__(self, n: int, planes: int = 25, value_fn=None, policy_fn=None) -> None:
        self.n = n
        self.buf = np.zeros((16, planes, n, n), dtype=np.uint8)
        self.counters = Counters()
        self.value_fn = value_fn or (lambda p: 0.0)
        self.policy_fn = policy_fn
        self.requests = 0

    def reserve(self):
        return self.buf, 0, self.buf.shape[0]

    def commit(self, count: int = 1, final: bool = True):
        """Answer slots ``0 .. count - 1`` at once."""
        self.requests += count
        a = self.n * self.n + 1
        pol = np.empty((count, a), dtype=np.float32)
        wdl = np.empty((count, 3), dtype=np.float32)
        for i in range(count):
            planes = self.buf[i]
            v = float(np.clip(self.value_fn(planes), -1.0, 1.0))
            pol[i] = 1.0 / a if self.policy_fn is None else self.policy_fn(planes)
            wdl[i] = ((1 + v) / 2, 0.0, (1 - v) / 2)
        out = NetOutput(pol, wdl, np.zeros(count, np.float32), np.zeros((count, self.n * self.n), np.float32))
        fut = asyncio.get_running_loop().create_future()
        fut.set_result(out)
        return fut


def material(planes) -> float:
    """Own stones minus opponent stones, squashed: a trivial value function."""
    return float(np.tanh((int(planes[0].sum()) - int(planes[1].sum())) / 3.0))
