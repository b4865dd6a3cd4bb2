"""Long analysis keeps its promises: a line at least every interval while
the network is slow, and a tree that stays within its memory budget (at
most 1.5 x while it grows or is pruned) however long the analysis runs."""
from __future__ import annotations

import asyncio
import time
import tracemalloc

import numpy as np
import pytest

from gtp.analyze_cmds import AnalysisCommands
from gtp.config import GtpConfig
from gtp.context import Context
from gtp.engine import Engine
from gtp.tree_memory import PEAK_FACTOR, bounded_make_room, footprint
from sayuri_async.net.backends import NetOutput, RandomBackend
from sayuri_async.search.pools import MB

ROUND_S = 1.0  # the slow network's time per batch
INTERVAL_CS = 10


class SlowBackend(RandomBackend):
    """The random network, taking ROUND_S per batch (in the worker thread)."""

    cheap = False

    def run(self, batch: np.ndarray) -> NetOutput:
        time.sleep(ROUND_S)
        return super().run(batch)


class StopAfter:
    """An inbox whose input arrives ``seconds`` after the first look."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.start: float | None = None

    def pending(self) -> bool:
        now = time.perf_counter()
        self.start = self.start or now
        return now - self.start >= self.seconds


def engine(backend, **search) -> Engine:
    cfg = GtpConfig()
    cfg.game.board_size = 9
    for key, value in search.items():
        setattr(cfg.search, key, value)
    return Engine(cfg, backend)


@pytest.mark.slow
def test_lines_come_every_interval_while_the_network_is_slow():
    async def run() -> tuple[list[tuple[float, str]], float]:
        e = engine(SlowBackend(seed=1), seed=1)
        out: list[tuple[float, str]] = []
        ctx = Context(None, e, StopAfter(5 * ROUND_S), lambda text: out.append((time.perf_counter(), text)),
                      name="lz-analyze")
        try:
            await AnalysisCommands(e, e.cfg).analyze(ctx, ["b", str(INTERVAL_CS)])
            return out, time.perf_counter()
        finally:
            e.close()

    out, ended = asyncio.run(run())
    info = [t for t, text in out if text.startswith("info move")]
    gaps = np.diff(info)
    # a round takes ROUND_S: one line a round would leave gaps of a second
    assert len(info) >= 15, f"{len(info)} lines in {5 * ROUND_S} s"
    assert gaps.max() < 0.6 * ROUND_S, f"a silence of {gaps.max():.2f} s"
    assert ended - info[-1] < 2 * ROUND_S  # the analysis stops within a round of the input


@pytest.mark.slow
def test_a_long_analysis_stays_within_its_memory_budget():
    budget_mb = 2.0
    budget = int(budget_mb * MB)

    async def until_pruned(e: Engine, prunes: int, seconds: float) -> list[tuple[int, int]]:
        """Analysis until ``prunes`` prunings: (pool footprint, root visits) after each step."""
        s = e.search
        steps = []
        deadline = time.perf_counter() + seconds
        while s.prunes < prunes and time.perf_counter() < deadline:
            await e.think(max_playouts=2000, deadline=None)
            steps.append((footprint(s.edges.shape[0], s.nodes.shape[0]), s.root_visits()))
        return steps

    async def run() -> tuple[int, int, list[int], list[int]]:
        warm = engine(RandomBackend(seed=2), seed=2, tree_memory_mb=1.0, cache_size=0)
        await warm.begin_search(warm.game)
        await until_pruned(warm, 1, 240)  # loads the compiled pruning (its code is memory too)
        warm.close()
        tracemalloc.start()
        try:
            e = engine(RandomBackend(seed=2), seed=2, tree_memory_mb=budget_mb, cache_size=0)
            s = e.search
            await e.begin_search(e.game)
            base = tracemalloc.get_traced_memory()[0] - s.pool_bytes()
            tracemalloc.reset_peak()
            steps = await until_pruned(e, 4, 240)
            peak = tracemalloc.get_traced_memory()[1]
            e.close()
            return peak - base, s.prunes, [v for _, v in steps], [held for held, _ in steps]
        finally:
            tracemalloc.stop()

    peak, prunes, visits, held = asyncio.run(run())
    assert prunes >= 4, f"only {prunes} prunings: the test did not reach the budget"
    assert max(held) <= budget  # between rounds the pools fit the budget
    assert peak <= PEAK_FACTOR * budget, f"peak {peak / MB:.2f} MB for a {budget_mb} MB budget"
    assert all(b > a for a, b in zip(visits, visits[1:])), "the visits stopped growing"


def test_growing_and_pruning_allocate_within_one_and_a_half_budgets():
    """The rule on its own: pools that doubled up to the budget are pruned
    into halves, never grown past it, and a growth's new pool plus the old
    ones stay within 1.5 budgets."""
    from sayuri_async.search.tree import EDGE_DTYPE, NODE_DTYPE, new_workspace

    budget = 1 * MB
    ws = new_workspace()
    nodes, edges = np.zeros(1024, NODE_DTYPE), np.zeros(4096, EDGE_DTYPE)
    nodes["first"] = -1
    w = ws[0]
    w["root_node"] = 0
    sizes = []
    for _ in range(12):
        w["edges_used"], w["nodes_used"] = edges.shape[0], 1  # full edges: the next round needs more
        before = edges.nbytes + nodes.nbytes
        nodes2, edges2, pruned = bounded_make_room(ws, nodes, edges, 400, 4, budget)
        added = (edges2.nbytes if edges2 is not edges else 0) + (nodes2.nbytes if nodes2 is not nodes else 0)
        assert before + added <= PEAK_FACTOR * budget
        assert footprint(edges2.shape[0], nodes2.shape[0]) <= budget
        sizes.append((edges2.shape[0], pruned))
        nodes, edges = nodes2, edges2
    assert any(p for _, p in sizes) and max(e for e, _ in sizes) * EDGE_DTYPE.itemsize <= budget
