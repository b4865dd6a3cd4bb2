"""A backend whose network can be replaced while the engine runs.

Vocabulary
----------
SwappableBackend  holds the ``current`` backend and passes every call to it
            (``launch``, ``run``, ``alloc_input``, ``measure_rates``, ...).
            ``swap(new)`` puts ``new`` in its place and returns the old one.
between batches   a batch reads ``current`` once, when it is launched, so
            each batch runs wholly on one network. The engine calls ``swap``
            from its inference worker's launcher thread, in the order of the
            batches handed to it (``selfplay/switch.py``): every batch
            handed before the swap gets the old network, every batch after
            it the new one.
compatible  a new backend must read the same encoder and planes as the
            first: the batchers' input buffers and the searches' encoder
            stay as they are (``incompatibility`` says why not, in words).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .backends import Backend, NetOutput


class SwappableBackend(Backend):
    def __init__(self, backend: Backend) -> None:
        self.current = backend
        self.encoder = backend.encoder
        self.planes = backend.planes
        self.device = backend.device
        self.max_batch = backend.max_batch

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.current.name

    @property
    def cheap(self) -> bool:  # type: ignore[override]
        return self.current.cheap

    def incompatibility(self, new: Backend) -> str | None:
        """Why ``new`` cannot replace the current network, or None."""
        if new.encoder != self.encoder or new.planes != self.planes:
            return (f"it reads {new.encoder} ({new.planes} planes), this engine plays "
                    f"{self.encoder} ({self.planes} planes)")
        return None

    def swap(self, new: Backend) -> Backend:
        """Put ``new`` in place (see "between batches"); returns the old backend."""
        old, self.current = self.current, new
        return old

    def run(self, batch: np.ndarray) -> NetOutput:
        return self.current.run(batch)

    def launch(self, batch: np.ndarray) -> "NetOutput | Callable[[], NetOutput]":
        return self.current.launch(batch)

    def alloc_input(self, max_batch: int, n: int) -> np.ndarray:
        return self.current.alloc_input(max_batch, n)

    def warmup(self, sizes: list[int], batches: list[int] | None = None) -> None:
        self.current.warmup(sizes, batches)

    def measure_rates(self, n: int, batch_size: int) -> dict[int, float]:
        return self.current.measure_rates(n, batch_size)

    def close(self) -> None:
        self.current.close()
