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
        self.buf = np.zeros((1, planes, n, n), dtype=np.uint8)
        self.counters = Counters()
        self.value_fn = value_fn or (lambda p: 0.0)
        self.policy_fn = policy_fn
        self.requests = 0

    def current(self):
        return self.buf, 0

    def cache_get(self, key):
        return None

    def cache_put(self, key, out, row):
        pass

    def block(self):
        pass

    def commit(self, final: bool = True):
        self.requests += 1
        a = self.n * self.n + 1
        planes = self.buf[0]
        v = float(np.clip(self.value_fn(planes), -1.0, 1.0))
        pol = np.full((1, a), 1.0 / a, dtype=np.float32) if self.policy_fn is None else self.policy_fn(planes)[None]
        wdl = np.array([[(1 + v) / 2, 0.0, (1 - v) / 2]], dtype=np.float32)
        out = NetOutput(pol, wdl, np.zeros(1, np.float32), np.zeros((1, self.n * self.n), np.float32))
        fut = asyncio.get_running_loop().create_future()
        fut.set_result((out, 0))
        return fut


def material(planes) -> float:
    """Own stones minus opponent stones, squashed: a trivial value function."""
    return float(np.tanh((int(planes[0].sum()) - int(planes[1].sum())) / 3.0))
