"""The tree's pools under a memory budget and positions expanded a few edges
at a time: the search makes the same choices as with every edge, the pools
grow and are pruned within the budget, the visits never stop growing, and a
kept tree follows the game down several moves."""
import asyncio

import numpy as np
import pytest

from sayuri_async.go.game import Game
from sayuri_async.search.config import SearchConfig
from sayuri_async.search.mcts import Search
from sayuri_async.search.pools import MB, size_pools

from helpers_search import InstantEvaluator, check_tree, material

GRID = np.arange(81).reshape(9, 9)


def position_policy(planes) -> np.ndarray:
    """A policy that depends on the position only (the same answer when a
    position is looked at again, as a network gives)."""
    seed = int((planes[0] * GRID).sum()) * 100_003 + int((planes[1] * GRID).sum())
    return np.random.default_rng(seed).random(82).astype(np.float32)


def search_to(visits: int, **cfg) -> tuple[Search, InstantEvaluator]:
    s = Search(SearchConfig(leaves_per_await=1, edge_capacity=3_000_000, **cfg), "simple-v1",
               rng=np.random.default_rng(0))
    ev = InstantEvaluator(9, value_fn=material, policy_fn=position_policy)
    s.sync(Game(9))

    async def go() -> None:
        while s.root_visits() < visits:
            await s.playouts(ev, 1)

    asyncio.run(go())
    return s, ev


@pytest.mark.parametrize("per_expansion", [2, 8])
def test_a_few_edges_per_expansion_make_the_same_search_as_every_edge(per_expansion):
    """With one leaf per round and a policy that is a function of the
    position, writing the top priors first and more on demand gives the
    same visits and values at the root and the same principal variation as
    writing every legal move, with a fraction of the edges; the widenings
    cost a few extra evaluations and no visit."""
    full, full_ev = search_to(2000)
    part, part_ev = search_to(2000, edges_per_expansion=per_expansion)
    v_full, q_full, _ = full.stats(9)
    v_part, q_part, _ = part.stats(9)
    np.testing.assert_array_equal(v_part, v_full)
    np.testing.assert_array_equal(q_part, q_full)
    best = int(v_full.argmax())
    assert part.pv_line(best) == full.pv_line(best) and len(full.pv(best)) > 3
    used = int(part.ws[0]["edges_used"])
    assert used < int(full.ws[0]["edges_used"]) / 4
    assert full_ev.requests < part_ev.requests < full_ev.requests * 1.1
    check_tree(part)


def test_a_budget_bounds_the_pools_and_the_visits_keep_growing():
    s = Search(SearchConfig(tree_memory_mb=1, edges_per_expansion=4), "simple-v1", rng=np.random.default_rng(5))
    ev = InstantEvaluator(9, value_fn=material)
    g = Game(9)
    res = asyncio.run(s.run(g, ev, 1))
    assert s.pool_bytes() <= 1 * MB
    seen = [s.root_visits()]
    for _ in range(30):
        asyncio.run(s.playouts(ev, 1000))
        assert s.pool_bytes() <= 1 * MB  # never above the budget
        seen.append(s.root_visits())
    assert all(b > a + 900 for a, b in zip(seen, seen[1:]))  # the visits never stop growing
    assert s.prunes >= 1 and s.root_visits() > s.nodes.shape[0]  # more visits than records fit at once
    assert s.root_expanded() and res.playouts == 1
    check_tree(s)
    # what is kept: the root and its most visited children stay expanded
    visits, _, _ = s.stats(9)
    best = int(visits.argmax())
    assert len(s.pv(best)) > 1


@pytest.mark.slow
def test_pruning_keeps_the_statistics_of_what_it_keeps():
    s = Search(SearchConfig(tree_memory_mb=1, edges_per_expansion=4), "simple-v1", rng=np.random.default_rng(6))
    ev = InstantEvaluator(9, value_fn=material)
    s.sync(Game(9))
    while not s.prunes:
        before = s.stats(9)
        root = s.root_visits(), s.root_value()
        asyncio.run(s.playouts(ev, 1))
    # the pruning ran before the last playout: the root's children lost no visit
    after = s.stats(9)
    assert int(after[0].sum()) == int(before[0].sum()) + 1
    assert s.root_visits() == root[0] + 1 and abs(s.root_value() - root[1]) < 0.01
    check_tree(s)


def test_budget_pools_start_small_and_fixed_pools_keep_their_size():
    grown = size_pools(0, 0, 0, 1024)
    assert grown.budget_bytes == 1024 * MB and grown.edge_room == grown.node_room == 0
    assert grown.edges * 12 + grown.node_records * 32 <= 8 * MB
    fixed = size_pools(30_000, 0, 0, 0)
    assert (fixed.edges, fixed.node_records, fixed.edge_room, fixed.budget_bytes) == (30_000, 937, 15_000, 0)


def test_a_partly_expanded_child_that_becomes_the_root_gets_every_edge():
    g = Game(9)
    s = Search(SearchConfig(edges_per_expansion=3), "simple-v1", rng=np.random.default_rng(7))
    ev = InstantEvaluator(9, value_fn=material)
    res = asyncio.run(s.run(g, ev, 200))
    g.play(res.action)
    s.sync(g)
    assert s.root_visits() > 0 and not s.root_expanded()  # kept, with a few edges
    res = asyncio.run(s.run(g, ev, 50))
    assert s.root_expanded() and s.root_children() == 81  # 80 points and pass
    check_tree(s)


def test_a_kept_tree_follows_several_moves_by_alternate_colours():
    g = Game(9)
    s = Search(SearchConfig(), "simple-v1", rng=np.random.default_rng(8))
    ev = InstantEvaluator(9, value_fn=material)
    res = asyncio.run(s.run(g, ev, 600))
    pv, pv_visits = s.pv_line(res.action)
    assert len(pv) >= 3
    for a in pv[:3]:
        g.play(a)
    s.sync(g)
    assert s.root_visits() == pv_visits[2] > 0
    # the same colour twice is not a position of the tree: started afresh
    g2 = Game(9)
    s2 = Search(SearchConfig(), "simple-v1", rng=np.random.default_rng(8))
    res = asyncio.run(s2.run(g2, ev, 200))
    pv = s2.pv(res.action)
    g2.play(pv[0], 1)
    g2.play(pv[1], 1)  # black again
    s2.sync(g2)
    assert s2.root_visits() == 0
