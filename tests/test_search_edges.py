"""The tree's two pools: edges for every child of an expanded position, node
records only for the children a playout went into; either pool full; the
memory of a sized self-play pool."""
import asyncio

import numpy as np
import pytest

from sayuri_async.go.game import Game
from sayuri_async.search.config import SearchConfig
from sayuri_async.search.mcts import Search
from sayuri_async.search.tree import EDGE_DTYPE, NODE_DTYPE
from sayuri_async.selfplay.config import SelfplayConfig

from helpers_search import InstantEvaluator, check_tree, material


def test_records_are_small_and_edges_smaller():
    assert NODE_DTYPE.itemsize == 24 and EDGE_DTYPE.itemsize == 12


def test_a_child_gets_a_node_record_only_on_its_first_visit():
    g = Game(9)
    g.play_vertex("E5")
    s = Search(SearchConfig(), "simple-v1", rng=np.random.default_rng(0))
    ev = InstantEvaluator(9, value_fn=material)
    s.sync(g)
    asyncio.run(s.playout(ev))  # the root's expansion: edges for its moves, no child record
    w = s.ws[0]
    assert int(w["nodes_used"]) == 1 and int(w["edges_used"]) == s.root_children() == 81
    assert (s.edges[:81]["child"] == -1).all()
    asyncio.run(s.playouts(ev, 60))
    visits, _, _ = s.stats(9)
    # one record per position a playout went into: the root and each visited child, no more
    assert int(w["nodes_used"]) == 1 + check_tree(s)
    assert int(w["nodes_used"]) <= 61
    assert int((visits > 0).sum()) == int((s.edges[:81]["child"] >= 0).sum())


def test_gumbel_forces_root_edges_and_keeps_the_tree_consistent():
    g = Game(9)
    s = Search(SearchConfig(gumbel_considered_moves=8), "simple-v1", rng=np.random.default_rng(1))
    ev = InstantEvaluator(9, value_fn=material)
    res = asyncio.run(s.run(g, ev, 64, use_gumbel=True))
    assert s.root_visits() == 64 and res.visits.sum() == 63  # the first playout expanded the root
    assert (res.visits > 0).sum() == 8  # exactly the considered moves were forced
    check_tree(s)
    pv = s.pv(res.action)
    assert pv[0] == res.action and len(pv) > 1


def test_a_full_node_pool_ends_descents_early_and_the_search_goes_on():
    g = Game(9)
    s = Search(SearchConfig(node_records=6), "simple-v1", rng=np.random.default_rng(2))
    ev = InstantEvaluator(9, value_fn=material)
    res = asyncio.run(s.run(g, ev, 80))
    w = s.ws[0]
    assert int(w["nodes_used"]) == 6
    assert res.playouts == 80 and s.root_visits() >= 80
    # no sixth position was entered: descents that wanted one ended above it
    assert (res.visits > 0).sum() <= 5 and int(res.visits.sum()) < s.root_visits()
    assert s.pool_full(9)
    check_tree(s)


def test_a_full_edge_pool_leaves_leaves_unexpanded_and_records_stay_consistent():
    g = Game(9)
    s = Search(SearchConfig(edge_capacity=300), "simple-v1", rng=np.random.default_rng(3))
    ev = InstantEvaluator(9, value_fn=material)
    res = asyncio.run(s.run(g, ev, 120))
    assert int(s.ws[0]["edges_used"]) <= 300
    assert res.playouts == 120 and s.root_visits() >= 120
    assert s.pool_full(9) and not int(s.ws[0]["nodes_used"]) >= s.nodes.shape[0]
    check_tree(s)


def test_a_kept_tree_is_dropped_when_the_node_pool_lacks_the_next_searchs_share():
    g = Game(9)
    ev = InstantEvaluator(9, value_fn=material)
    # edge room 50,000 of 100,000: the records' room is the same half of their pool
    tight = Search(SearchConfig(edge_capacity=100_000, search_edges=50_000, node_records=300), "simple-v1",
                   rng=np.random.default_rng(4))
    roomy = Search(SearchConfig(edge_capacity=100_000, search_edges=50_000, node_records=1000), "simple-v1",
                   rng=np.random.default_rng(4))
    for s in (tight, roomy):
        s.sync(g)
        asyncio.run(s.playouts(ev, 200))
        assert int(s.ws[0]["edges_used"]) < 50_000  # the edges alone would keep the tree
        s.sync(g)
    assert tight.root_visits() == 0  # over 150 of 300 records used: started afresh
    assert roomy.root_visits() == 200


def test_a_sized_selfplay_pool_costs_under_half_the_memory_of_full_child_records():
    for n, playouts, most in ((9, 100, 330_000), (19, 400, 5_700_000)):
        cfg = SelfplayConfig(board_sizes=[n], playouts=playouts, search=SearchConfig(edge_capacity=0))
        sc = cfg.search_config()
        s = Search(sc, "simple-v1")
        edges = 3 * (playouts + 1) * (n * n + 1)
        assert s.edges.shape[0] == sc.edge_capacity == edges
        assert s.nodes.shape[0] == edges // 32
        assert s.pool_bytes() == edges * 12 + (edges // 32) * 24 <= most
        assert s.pool_bytes() < 0.45 * edges * 32  # a 32-byte record per child before


class CountingEvaluator(InstantEvaluator):
    """Counts the awaits (commits) and the leaves each one carries."""

    def __init__(self, *a, **kw) -> None:
        super().__init__(*a, **kw)
        self.rounds: list[int] = []

    def commit(self, count: int = 1, final: bool = True, prepare=None):
        self.rounds.append(count)
        return super().commit(count, final, prepare)


def test_gumbel_rounds_batch_leaves_as_puct_rounds_do():
    g = Game(9)
    g.play_vertex("E5")
    cfg = SearchConfig(gumbel_considered_moves=16, leaves_per_await=4)
    s = Search(cfg, "simple-v1", rng=np.random.default_rng(2))
    ev = CountingEvaluator(9, value_fn=material)
    res = asyncio.run(s.run(g, ev, 200, use_gumbel=True))
    assert res.playouts == 200 and s.root_visits() == 200
    # every leaf after the root's own evaluation comes in rounds of up to 4:
    # far fewer awaits than playouts (one a playout before the visit plan)
    assert max(ev.rounds) == 4 and sum(ev.rounds) == 200
    assert len(ev.rounds) <= 200 // 4 + 20  # a collision ends a round early now and then
    check_tree(s)


@pytest.mark.parametrize("k, budget", [(16, 200), (16, 15), (8, 64), (2, 7), (1, 5), (16, 1000), (5, 33)])
def test_the_visit_plan_spends_the_budget_round_the_candidates(k, budget):
    from sayuri_async.search.gumbel import phase_sizes, visit_plan

    plan = visit_plan(k, budget)
    assert sum(n for _, n in plan) == budget
    assert [size for size, _ in plan] == phase_sizes(k)[: len(plan)]
    for size, n in plan[:-1]:
        assert n % size == 0 and n >= size  # each candidate of an early phase gets the same visits
