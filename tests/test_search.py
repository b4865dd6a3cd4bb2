import asyncio
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sayuri_async.go import board as B
from sayuri_async.go.coords import vertex_to_action
from sayuri_async.go.game import Game
from sayuri_async.search import gumbel as G
from sayuri_async.search.config import SearchConfig
from sayuri_async.search.mcts import Search

from helpers_search import InstantEvaluator, material


def run(coro):
    return asyncio.run(coro)


def setup(game: Game, black: list[str], white: list[str]) -> None:
    for v in black:
        game.play_vertex(v, B.BLACK)
        game.play_vertex("pass", B.WHITE)
    for v in white:
        game.play_vertex("pass", B.BLACK)
        game.play_vertex(v, B.WHITE)


def test_puct_captures_the_big_group_in_atari():
    g = Game(9)
    # white group C3 D3 E3 in atari at F3 (black around it), black to move
    setup(g, ["B3", "C2", "D2", "E2", "C4", "D4", "E4"], ["C3", "D3", "E3"])
    assert g.to_move == B.BLACK
    s = Search(SearchConfig(), "simple-v1", rng=np.random.default_rng(1))
    ev = InstantEvaluator(9, value_fn=material)
    res = run(s.run(g, ev, 300))
    assert res.action == 5 + 2 * 9  # F3: x=5, y=2


def test_pass_wins_when_ahead_and_opponent_passed():
    g = Game(7, komi=0.5)
    # black owns the left part: a wall on column D; white has nothing
    for v in ["D1", "D2", "D3", "D4", "D5", "D6", "D7"]:
        g.play_vertex(v, B.BLACK)
        g.play_vertex("pass", B.WHITE)
    # white just passed; black passing ends the game with B+49.5 (all area)
    s = Search(SearchConfig(), "simple-v1", rng=np.random.default_rng(2))
    ev = InstantEvaluator(7)  # value 0 everywhere: only the terminal result is informative
    res = run(s.run(g, ev, 200))
    assert res.action == 49
    assert res.q[49] == pytest.approx(1.0)


@pytest.mark.parametrize("budget,k", [(16, 16), (50, 16), (100, 8), (7, 4), (200, 16), (33, 3)])
def test_gumbel_spends_exactly_the_budget(budget, k):
    g = Game(9)
    g.play_vertex("E5")
    cfg = SearchConfig(gumbel_considered_moves=k)
    s = Search(cfg, "simple-v1", rng=np.random.default_rng(3))
    ev = InstantEvaluator(9, value_fn=material)
    res = run(s.run(g, ev, budget, use_gumbel=True))
    assert res.playouts == budget
    assert s.root_visits() == budget
    assert ev.requests == budget  # no terminal positions this early


def test_policy_targets_sum_to_one_over_legal_moves():
    g = Game(9)
    for v in ["E5", "D5", "E4", "D4"]:
        g.play_vertex(v)
    legal = g.legal_actions().astype(bool)
    for gum in (False, True):
        s = Search(SearchConfig(), "simple-v1", rng=np.random.default_rng(4))
        res = run(s.run(g, InstantEvaluator(9, value_fn=material), 64, use_gumbel=gum, noise=not gum))
        assert res.policy.sum() == pytest.approx(1.0, abs=1e-5)
        assert np.all(res.policy[~legal] == 0)
        assert legal[res.action]


def test_tree_is_reused_after_the_chosen_move():
    g = Game(9)
    s = Search(SearchConfig(), "simple-v1", rng=np.random.default_rng(5))
    ev = InstantEvaluator(9, value_fn=material)
    res = run(s.run(g, ev, 200))
    child_visits = int(res.visits[res.action])
    g.play(res.action)
    s.sync(g)
    assert s.root_visits() == child_visits > 0


def test_search_never_plays_into_superko():
    # black E4 takes a ko (captures D4); white may not retake at once, and
    # whatever the search picks afterwards must be legal (superko included)
    g = Game(7)
    for v in ["C4", "D4", "D5", "E5", "D3", "E3", "pass", "F4"]:
        g.play_vertex(v)
    g.play_vertex("E4")
    assert g.why_illegal(3 + 3 * 7) == "ko"
    s = Search(SearchConfig(), "simple-v1", rng=np.random.default_rng(6))
    for _ in range(6):
        res = run(s.run(g, InstantEvaluator(7, value_fn=material), 40))
        assert g.is_legal(res.action)
        assert res.visits[~g.legal_actions().astype(bool)].sum() == 0
        g.play(res.action)


def test_sequential_halving_phases():
    assert G.phase_sizes(16) == [16, 8, 4, 2]
    assert G.phase_sizes(3) == [3, 2]
    assert G.phase_sizes(1) == [1]


def test_completed_q_uses_v_mix_for_unvisited():
    q = np.array([0.5, 0.0, 0.0])
    visits = np.array([2, 0, 0])
    prior = np.array([0.5, 0.25, 0.25])
    cq = G.completed_q(q, visits, prior, root_value=-0.1)
    # v_mix = (v + N * q_weighted) / (1 + N) = (-0.1 + 2 * 0.5) / 3
    assert cq[1] == pytest.approx(0.3)
    assert cq[0] == 0.5


def test_tree_is_dropped_after_undo_and_a_different_move():
    g = Game(9)
    s = Search(SearchConfig(), "simple-v1", rng=np.random.default_rng(7))
    ev = InstantEvaluator(9, value_fn=material)
    res = run(s.run(g, ev, 200))
    g.play(res.action)
    s.sync(g)
    kept = s.root_visits()
    assert kept > 0  # the chosen move's subtree was reused
    other = next(a for a in range(81) if a != res.action and res.visits[a] > 0)
    g.undo()
    g.play(other)  # same move count, another position
    s.sync(g)
    s.sync(g)
    assert s.root_visits() == 0


def test_restricted_root_moves_are_never_searched():
    g = Game(9)
    s = Search(SearchConfig(), "simple-v1", rng=np.random.default_rng(8))
    ev = InstantEvaluator(9, value_fn=material)
    s.sync(g)
    run(s.playout(ev))  # expand the root
    banned = set(range(0, 81, 2))
    assert s.restrict_root(banned)
    run(s.playouts(ev, 200))
    visits, _, _ = s.stats(9)
    assert visits[sorted(banned)].sum() == 0
    assert visits.sum() == 200  # every playout after the root's expansion went to an allowed move


def test_komi_change_survives_undo():
    g = Game(9, komi=7.5)
    g.play_vertex("E5")
    g.set_komi(0.5)
    g.undo()
    assert g.komi == 0.5 and float(g.rec["komi"]) == 0.5
    assert g.score() == -0.5  # empty board: white wins by komi


def test_search_never_visits_a_superko_move_of_a_triple_ko():
    from conftest import build_game
    from test_game import TRIPLE_KO, play_cycle, va

    g = build_game(TRIPLE_KO)
    play_cycle(g)
    superko = va("B2")
    assert g.why_illegal(superko) == "superko"
    s = Search(SearchConfig(), "simple-v1", rng=np.random.default_rng(9))
    # a policy that puts almost everything on the superko retake
    def policy(planes):
        p = np.full(82, 1e-4, dtype=np.float32)
        p[superko] = 1.0
        return p / p.sum()

    res = run(s.run(g, InstantEvaluator(9, value_fn=material, policy_fn=policy), 100))
    assert res.visits[superko] == 0
    assert res.action != superko and g.is_legal(res.action)


def test_no_pass_when_pass_is_not_allowed():
    g = Game(7, komi=0.5)
    for v in ["D1", "D2", "D3", "D4", "D5", "D6", "D7"]:
        g.play_vertex(v, B.BLACK)
        g.play_vertex("pass", B.WHITE)
    # the same position where passing wins at once (see the pass test above)
    s = Search(SearchConfig(), "simple-v1", rng=np.random.default_rng(2))
    res = run(s.run(g, InstantEvaluator(7), 200, allow_pass=False))
    assert res.action != 49 and res.visits[49] == 0 and res.policy[49] == 0
    assert g.is_legal(res.action)


def test_random_symmetry_reads_the_policy_back_in_the_board_frame():
    # the network's policy puts all its mass on the 4 neighbours of the only
    # stone, in whatever orientation it was shown; mapped back, the root's
    # priors must sit on the neighbours of C3 in the real board
    g = Game(9)
    g.play_vertex("C3")
    want = {vertex_to_action(v, 9) for v in ("B3", "D3", "C2", "C4")}

    def policy(planes):
        opp = planes[1]  # the stone is the opponent's for white to move
        (ys,), (xs,) = np.nonzero(opp.any(axis=1))[0:1], np.nonzero(opp.any(axis=0))[0:1]
        y, x = int(ys[0]), int(xs[0])
        p = np.zeros(82, dtype=np.float32)
        for dy, dx in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            p[(y + dy) * 9 + x + dx] = 0.25
        return p

    seen = set()
    for seed in range(24):
        cfg = SearchConfig(random_symmetry=True)
        s = Search(cfg, "simple-v1", rng=np.random.default_rng(seed))
        ev = InstantEvaluator(9, policy_fn=policy)
        s.sync(g)
        run(s.playout(ev))
        _, _, prior = s.stats(9)
        assert prior[sorted(want)].sum() == pytest.approx(1.0, abs=1e-5)
        seen.add(int(s.ws[0]["leaf_sym"][0]))
    assert len(seen) > 3  # several orientations were really used


def test_a_restriction_that_would_leave_no_open_root_move_is_refused():
    g = Game(9)
    s = Search(SearchConfig(), "simple-v1", rng=np.random.default_rng(8))
    s.sync(g)
    run(s.playout(InstantEvaluator(9)))
    assert s.restrict_root(set(range(40)))
    assert not s.restrict_root(set(range(40, 82)))  # only already-closed moves would be left
    _, _, prior = s.stats(9)
    assert (prior[40:] > 0).all() and (prior[:40] < 0).all()  # the refused call changed nothing


def _choose(visits, prior, temperature, u):
    from sayuri_async.search.root import choose_by_visits

    v = np.array(visits, dtype=np.int32)
    policy = np.full(len(v), -1.0, dtype=np.float32)
    a = choose_by_visits(v, np.array(prior, dtype=np.float32), temperature, u, policy)
    return int(a), v, policy


def test_the_most_visited_open_move_is_chosen_and_the_policy_is_the_visit_share():
    a, v, policy = _choose([5, 30, 10, 50, 0], [0.2, 0.2, 0.2, -1.0, 0.1], 0.0, 0.99)
    assert a == 1  # action 3 has more visits but is restricted
    assert v.tolist() == [5, 30, 10, 0, 0]
    np.testing.assert_allclose(policy, [5 / 45, 30 / 45, 10 / 45, 0, 0], rtol=1e-6)


def test_ties_for_most_visits_are_broken_by_the_draw():
    picks = {_choose([7, 3, 7, 7, 0], [0.25] * 5, 0.0, u)[0] for u in (0.0, 0.34, 0.67, 0.999)}
    assert picks == {0, 2, 3}


def test_with_a_temperature_moves_are_drawn_in_proportion_to_visits_to_the_power_one_over_it():
    visits = [10, 0, 30, 60, 0]
    grid = (np.arange(1000) + 0.5) / 1000  # evenly spread draws
    counts = np.bincount([_choose(visits, [0.2] * 5, 1.0, u)[0] for u in grid], minlength=5)
    assert counts.tolist() == [100, 0, 300, 600, 0]
    for t in (0.5, 2.0):
        w = np.array(visits, dtype=np.float64) ** (1 / t)
        edges = np.cumsum(w) / w.sum()  # the draw u picks the first action whose edge is above it
        want = np.bincount(np.searchsorted(edges, grid, side="right"), minlength=5)
        got = np.bincount([_choose(visits, [0.2] * 5, t, u)[0] for u in grid], minlength=5)
        assert got.tolist() == want.tolist()


def test_no_visits_means_pass():
    a, _, policy = _choose([0, 0, 0, 0, 0], [0.2] * 5, 0.0, 0.5)
    assert a == 4 and not policy.any()


def test_a_restricted_tree_is_not_reused_by_the_next_search():
    g = Game(9)
    s = Search(SearchConfig(), "simple-v1", rng=np.random.default_rng(8))
    ev = InstantEvaluator(9, value_fn=material)
    s.sync(g)
    run(s.playout(ev))
    assert s.restrict_root({0, 1, 2})
    run(s.playouts(ev, 50))
    s.sync(g)  # the same position, searched again without the ban
    assert s.root_visits() == 0
    run(s.playouts(ev, 100))
    _, _, prior = s.stats(9)
    assert (prior[[0, 1, 2]] > 0).all()


def test_the_tree_is_kept_for_the_same_position_and_dropped_under_other_rules():
    from sayuri_async.go.game import Rules

    g = Game(9)
    s = Search(SearchConfig(), "simple-v1", rng=np.random.default_rng(8))
    ev = InstantEvaluator(9, value_fn=material)
    s.sync(g)
    run(s.playouts(ev, 40))
    s.sync(g)
    assert s.root_visits() == 40
    g.rules = Rules(superko=False)
    s.sync(g)
    assert s.root_visits() == 0


def as_if_to_move(game: Game, color: int) -> Game:
    """``game`` with ``color`` to move (ko cleared), as GTP searches for the
    colour not on turn (``genmove w`` with black to move)."""
    pos = game.copy()
    pos.rec["to_move"] = color
    pos.rec["ko"] = B.NO_KO
    return pos


def test_a_tree_is_not_advanced_to_a_child_searched_for_the_wrong_side():
    # White searches the empty 2x2 board (black on turn), then passes; asked
    # for white again, the tree's child "white passed" is a black-to-move
    # position: its subtree must not be the new root.
    g = Game(2)
    s = Search(SearchConfig(), "simple-v1", rng=np.random.default_rng(9))
    ev = InstantEvaluator(2, value_fn=material)
    s.sync(as_if_to_move(g, B.WHITE))
    run(s.playouts(ev, 60))
    assert s.stats(2)[0][4] > 0  # the pass child has a subtree
    g.play(4, B.WHITE)
    s.sync(as_if_to_move(g, B.WHITE))
    assert s.root_visits() == 0
    # the same move, then the colour that is on turn: the subtree is kept
    g2 = Game(2)
    s.reset()
    s.sync(as_if_to_move(g2, B.WHITE))
    run(s.playouts(ev, 60))
    kept = int(s.stats(2)[0][4])
    g2.play(4, B.WHITE)
    s.sync(g2)
    assert s.root_visits() == kept > 0


def test_a_searched_side_other_than_the_one_on_turn_keeps_only_its_own_tree():
    g = Game(3)
    s = Search(SearchConfig(), "simple-v1", rng=np.random.default_rng(10))
    ev = InstantEvaluator(3, value_fn=material)
    s.sync(as_if_to_move(g, B.WHITE))
    run(s.playouts(ev, 30))
    s.sync(as_if_to_move(g, B.WHITE))
    assert s.root_visits() == 30  # the same position and side: kept
    s.sync(g)
    assert s.root_visits() == 0  # black to move: another position


def search_from_a_foreign_tree() -> None:
    """A tree grown for the empty 2x2 board made the root of another
    position (black stones on A1 and B1, white to move) through the compiled
    ``set_root``: its edges A1 and B1 are occupied there. The descent must
    close (prior -1) every edge that is not a legal move where it stands,
    never play it, and the search must end."""
    from sayuri_async.search.tree import set_root

    g = Game(2)
    s = Search(SearchConfig(leaves_per_await=1), "simple-v1", rng=np.random.default_rng(11))
    ev = InstantEvaluator(2, value_fn=material)
    s.sync(g)
    run(s.playouts(ev, 40))
    other = Game(2)
    other.play_vertex("A1", B.BLACK)
    other.play_vertex("pass", B.WHITE)
    other.play_vertex("B1", B.BLACK)
    set_root(s.ws, s.nodes, s.edges, other.arr, other.history_hashes(), 8, True, 0, 0)
    run(s.playouts(ev, 200))
    _, _, prior = s.stats(2)
    assert prior[vertex_to_action("A1", 2)] < 0 and prior[vertex_to_action("B1", 2)] < 0


@pytest.mark.slow
def test_a_descent_never_plays_an_edge_that_is_illegal_at_its_position():
    # In a child process: a descent that played an occupied point broke a
    # group's stone ring on its scratch board and then looped forever in
    # compiled code, which nothing in this process could interrupt.
    tests = str(Path(__file__).resolve().parent)
    code = f"import sys; sys.path.insert(0, {tests!r}); import test_search; test_search.search_from_a_foreign_tree()"
    r = subprocess.run([sys.executable, "-c", code], timeout=120, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]


def test_search_run_never_returns_an_illegal_gumbel_pick():
    """Should sequential halving name a move that is not legal (an
    unvisited superko move), ``Search.run`` answers the best legal one, so
    every caller (self-play, match, GTP) gets a legal move."""
    g = Game(9)
    g.play_vertex("E5")
    occupied = vertex_to_action("E5", 9)

    class BadPick(Search):
        async def _gumbel(self, ev, budget, n):
            _, policy, spent = await super()._gumbel(ev, budget, n)
            return occupied, policy, spent

    s = BadPick(SearchConfig(gumbel_considered_moves=8), "simple-v1", rng=np.random.default_rng(3))
    res = run(s.run(g, InstantEvaluator(9, value_fn=material), 32, use_gumbel=True))
    assert res.action != occupied and g.is_legal(res.action)
    assert res.visits[res.action] == res.visits.max()
