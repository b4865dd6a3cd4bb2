"""The networks shipped in the repository, and a backend that plays each on its board size.

Vocabulary
----------
shipped network  a weights file under ``weights/`` trained by this project for
                 one board size (docs/strength.md says how): ``SHIPPED`` maps
                 the board size to its path in the repository. A checkout (or
                 an editable install) has them; an installed wheel may not,
                 and ``shipped_weights`` then answers None.
BoardSizeBackend a backend that sends each batch to the backend of its board
                 size (``by_size``) or, for the other sizes, to ``other`` (the
                 random network). All of them share one encoder, so the
                 batcher fills the same planes whatever the size.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .backends import Backend, NetOutput

REPO = Path(__file__).resolve().parents[2]
SHIPPED: dict[int, Path] = {9: REPO / "weights" / "9x9" / "distil-continue-g3-6b96c.safetensors"}


def shipped_weights(size: int) -> Path | None:
    """The shipped network of board ``size``, if there is one and its file exists."""
    path = SHIPPED.get(size)
    return path if path is not None and path.is_file() else None


class BoardSizeBackend(Backend):
    """``by_size[n]`` answers the batches of board ``n``; ``other`` the rest."""

    def __init__(self, by_size: dict[int, Backend], other: Backend) -> None:
        for n, be in by_size.items():
            if be.encoder != other.encoder or be.planes != other.planes:
                raise ValueError(f"the {n}x{n} network's encoder {be.encoder} ({be.planes} planes) differs from "
                                 f"{other.name}'s {other.encoder} ({other.planes} planes)")
        self.by_size = dict(by_size)
        self.other = other
        self.encoder = other.encoder
        self.planes = other.planes
        self.device = other.device
        self.max_batch = min([other.max_batch, *(be.max_batch for be in by_size.values())])
        sizes = ", ".join(f"{be.name} on {n}x{n}" for n, be in sorted(by_size.items()))
        self.name = f"{sizes}, {other.name} elsewhere"

    def backend_for(self, n: int) -> Backend:
        return self.by_size.get(n, self.other)

    def run(self, batch: np.ndarray) -> NetOutput:
        return self.backend_for(int(batch.shape[2])).run(batch)

    def launch(self, batch: np.ndarray):
        return self.backend_for(int(batch.shape[2])).launch(batch)

    def alloc_input(self, max_batch: int, n: int) -> np.ndarray:
        return self.backend_for(n).alloc_input(max_batch, n)

    def warmup(self, sizes: list[int], batches: list[int] | None = None) -> None:
        for n in sizes:
            self.backend_for(n).warmup([n], batches)

    def measure_rates(self, n: int, batch_size: int) -> dict[int, float]:
        return self.backend_for(n).measure_rates(n, batch_size)

    def close(self) -> None:
        for be in [*self.by_size.values(), self.other]:
            be.close()
