"""What a search asks of the network side: the ``Evaluator`` protocol.

Vocabulary
----------
Evaluator  the object a ``Search`` sends its leaves to (the ``Batcher`` in
           the engine, ``tests/helpers_search.InstantEvaluator`` in tests):
           ``reserve()`` gives a planes buffer ``[B, C, N, N]`` (uint8), the
           first free row ``slot`` and ``room``, how many rows the next
           commit may fill; the search encodes its leaves into rows
           ``slot ..`` and ``commit(count)`` returns an awaitable of the
           whole batch's ``NetOutput`` (a leaf's answer is its row).
counters   the evaluator's ``Counters`` (``infer/stats.py``): the search adds
           the playouts, requests and NN-cache lookups and hits of each call.
nn_cache   an ``NNCache`` (``infer/cache.py``) that the compiled search reads
           and fills itself, or None for none.
"""
from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol

import numpy as np

from ..infer.cache import NNCache
from ..infer.stats import Counters
from ..net.backends import NetOutput


class Evaluator(Protocol):
    counters: Counters
    nn_cache: NNCache | None

    def reserve(self) -> tuple[np.ndarray, int, int]:
        """``(planes [B, C, N, N] uint8, slot, room)``."""
        ...

    def commit(self, count: int = 1, final: bool = True) -> Awaitable[NetOutput]:
        """Send rows ``slot .. slot + count - 1``; the batch's answers."""
        ...
