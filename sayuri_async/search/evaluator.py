"""What a search asks of the network side: the ``Evaluator`` protocol.

Vocabulary
----------
Evaluator  the object a ``Search`` sends its leaves to (the ``Batcher`` in
           the engine, ``tests/helpers_search.InstantEvaluator`` in tests):
           ``reserve()`` gives a planes buffer ``[B, C, N, N]`` (uint8), the
           first free row ``slot`` and ``room``, how many rows the next
           commit may fill; the search walks to its leaves, and
           ``commit(count, prepare=(run, item))`` returns an awaitable of
           the whole batch's ``NetOutput`` (a leaf's answer is its row).
preparation  ``(run, item)``: ``run(items, planes)`` writes the rows of each
           of ``items`` into the batch's planes. The evaluator calls it
           before the network reads those rows, once for each item, in any
           thread and with the items of consecutive commits that share
           ``run`` together (the batcher: in its worker thread, a batch's
           in one call, when the batch leaves). ``run_preparations`` does
           it for a list of them
           (``infer/batcher.py``).
counters   the evaluator's ``Counters`` (``infer/stats.py``): the search adds
           the playouts, requests and NN-cache lookups and hits of each call.
nn_cache   an ``NNCache`` (``infer/cache.py``) that the compiled search reads
           and fills itself, or None for none.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

import numpy as np

from ..infer.cache import NNCache
from ..infer.stats import Counters
from ..net.backends import NetOutput


Preparation = tuple[Callable[[list, np.ndarray], None], object]  # (run, item): see "preparation"


class Evaluator(Protocol):
    counters: Counters
    nn_cache: NNCache | None

    def reserve(self) -> tuple[np.ndarray, int, int]:
        """``(planes [B, C, N, N] uint8, slot, room)``."""
        ...

    def commit(self, count: int = 1, final: bool = True,
               prepare: Preparation | None = None) -> Awaitable[NetOutput]:
        """Send rows ``slot .. slot + count - 1`` (written by ``prepare``
        when given); the batch's answers."""
        ...

