"""The GTP engine glue in-process: tree reuse only when the game moved on,
a full node pool during analysis, the clock budget, resignation."""
from __future__ import annotations

import asyncio
import time

import pytest

from gtp.commands import Dispatcher
from gtp.config import GtpConfig
from gtp.engine import RESIGN, Engine
from gtp.protocol import parse_line
from sayuri_async.go import board as B
from sayuri_async.go.coords import action_to_vertex, vertex_to_action
from sayuri_async.go.game import Game
from sayuri_async.go.sgf import set_up_position
from sayuri_async.backend_factory import make_backend


class StopAfter:
    """An inbox that receives a line ``seconds`` after it is made."""

    def __init__(self, seconds: float) -> None:
        self.t = time.perf_counter() + seconds

    def pending(self) -> bool:
        return time.perf_counter() >= self.t


LOOP = asyncio.new_event_loop()  # one loop: a Batcher keeps the loop it first ran on


def arun(coro):
    return LOOP.run_until_complete(coro)


def make(**search) -> tuple[Engine, Dispatcher, list[str]]:
    cfg = GtpConfig()
    cfg.game.board_size = 9
    cfg.search.seed = 1
    for k, v in search.items():
        setattr(cfg.search, k, v)
    engine = Engine(cfg, make_backend(None, seed=1))
    arun(engine.warmup())  # compiled code loaded before anything is timed
    out: list[str] = []
    return engine, Dispatcher(engine, out.append, cfg), out


def run(disp: Dispatcher, line: str, inbox=None) -> None:
    arun(disp.execute(parse_line(line), inbox or StopAfter(0.0)))


def test_tree_is_dropped_when_history_changes_at_the_same_length():
    engine, disp, out = make(playouts=64)

    async def go() -> None:
        await engine.genmove(B.BLACK)
        first = engine.game.moves[0][1]
        await engine.genmove(B.WHITE)  # the tree's root: the position after black's first move
        assert engine.search.root_visits() > 0
        engine.game.undo()
        engine.game.undo()
        other = vertex_to_action("D4", 9) if first != vertex_to_action("D4", 9) else vertex_to_action("E5", 9)
        engine.game.play(other, B.BLACK)  # same number of moves, another position
        pos = engine.position(None)
        engine.search.sync(pos)
        # the search starts from nothing: a stale tree would still hold the
        # visits of the old position's children
        assert engine.search.root_visits() == 0
        await engine.search.expand_root(engine.batcher)
        await engine.think(max_playouts=50, deadline=None)
        visits, _, prior = engine.search.stats(9)
        assert visits[other] == 0 and prior[other] == 0  # the occupied point is no candidate
        assert visits[first] > 0 or prior[first] > 0

    arun(go())
    engine.close()


def test_tree_is_kept_when_the_game_moves_on():
    engine, disp, out = make(playouts=200)

    async def go() -> None:
        await engine.genmove(B.BLACK)
        played = engine.game.moves[-1][1]
        kept = int(engine.search.stats(9)[0][played])  # visits of the move black played
        engine.search.sync(engine.position(None))
        assert kept > 0 and engine.search.root_visits() == kept  # its subtree is the new root

    arun(go())
    engine.close()


def visits_of(line: str) -> int:
    toks = line.split()
    return sum(int(toks[i + 1]) for i, t in enumerate(toks) if t == "visits")


def info_lines(out: list[str]) -> list[str]:
    return [ln for ln in "".join(out).split("\n") if ln.startswith("info")]


@pytest.mark.slow
def test_long_analysis_keeps_growing_its_visits_past_a_full_budget():
    """The old pool froze analysis once it filled (the visits stayed the
    same, line after line); with a 1 MB budget the tree is pruned and the
    visits keep growing, past what the pools could ever hold at once, while
    the pools stay within the budget."""
    engine, disp, out = make(tree_memory_mb=1)
    s = engine.search
    sizes = []
    report = engine.report

    def watched(*args, **kw):
        sizes.append(s.pool_bytes())
        return report(*args, **kw)

    engine.report = watched
    run(disp, "lz-analyze b 5", StopAfter(4.0))
    lines = info_lines(out)
    assert len(lines) >= 20  # about one every 50 ms
    assert s.prunes >= 1
    assert max(sizes) <= 1 << 20
    seen = [visits_of(ln) for ln in lines]
    tail = seen[len(seen) // 2:]
    assert all(b > a for a, b in zip(tail, tail[1:])), tail  # never frozen
    assert s.root_visits() > s.nodes.shape[0]  # more visits than records fit at once
    assert "".join(out).endswith("\n\n")
    engine.close()


def test_analysing_the_same_position_again_goes_on_from_its_tree():
    engine, disp, out = make()
    run(disp, "lz-analyze b 5", StopAfter(0.5))
    first, last_line = engine.search.root_visits(), info_lines(out)[-1]
    out.clear()
    run(disp, "lz-analyze b 5", StopAfter(0.3))
    lines = info_lines(out)
    # the candidates' visits carry over (the lines show the 20 most visited)
    assert first > 100 and visits_of(lines[0]) >= visits_of(last_line) > 100
    assert engine.search.root_visits() > first
    # two plays later (the move most searched and its most searched reply)
    # the subtree of that position is the new root
    best = int(engine.search.stats(9)[0].argmax())
    pv, pv_visits = engine.search.pv_line(best)
    run(disp, f"play b {action_to_vertex(pv[0], 9)}")
    run(disp, f"play w {action_to_vertex(pv[1], 9)}")
    engine.search.sync(engine.position(None))
    assert pv_visits[0] > pv_visits[1] > 0 and engine.search.root_visits() == pv_visits[1]
    engine.close()


def test_genmove_keeps_to_the_clock():
    engine, disp, out = make(playouts=10_000_000)
    run(disp, "time_settings 0 1 1")  # Canadian: 1 s per move
    t0 = time.perf_counter()
    run(disp, "genmove b")
    spent = time.perf_counter() - t0
    # budget 1 * 0.95 - 0.1 = 0.85 s; the search checks the clock every few
    # milliseconds (the bound leaves room for a loaded machine)
    assert 0.6 < spent < 1.3
    assert out[-1].startswith("= ")
    engine.close()


def test_resigns_a_hopeless_position():
    engine, disp, out = make(playouts=300, resign_threshold=0.1, resign_min_visits=100)
    # White everywhere but single-point eyes; black can only pass, and white
    # wins by area whatever happens.
    eyes = {"A1", "C1", "E1", "G1", "J1", "B9", "F9", "J9"}
    game = Game(9, 7.5)
    white = [a for a in range(81) if not any(a == vertex_to_action(v, 9) for v in eyes)]
    set_up_position(game, [], white, B.BLACK)
    engine.replace_game(game)

    async def go() -> int:
        return await engine.genmove(B.BLACK)

    assert arun(go()) == RESIGN
    assert engine.game.moves == []  # nothing was played
    engine.close()


@pytest.mark.parametrize("threshold", [0.0])
def test_never_resigns_by_default(threshold):
    engine, disp, out = make(playouts=100, resign_threshold=threshold)
    eyes = {"A1", "C1", "E1", "G1", "J1", "B9", "F9", "J9"}
    game = Game(9, 7.5)
    white = [a for a in range(81) if not any(a == vertex_to_action(v, 9) for v in eyes)]
    set_up_position(game, [], white, B.BLACK)
    engine.replace_game(game)
    assert arun(engine.genmove(B.BLACK)) == 81  # the only legal move: pass
    engine.close()


def test_the_colour_that_just_moved_searches_afresh():
    # genmove w, then the same colour again: the tree's child for white's
    # move is a black-to-move position, so nothing of it may be reused
    # (it once looped forever on 2x2 and listed black's replies as white's
    # moves on 9x9)
    engine, disp, out = make(playouts=400)
    engine.new_game(9)

    async def go() -> None:
        action = await engine.genmove(B.WHITE)
        assert int(engine.search.stats(9)[0][action]) > 1  # a subtree that could be (wrongly) kept
        await engine.begin_search(engine.position(B.WHITE))
        assert engine.search.root_visits() <= 1  # only the root's own evaluation
        await engine.begin_search(engine.position(B.BLACK))
        await engine.think(max_playouts=20, deadline=None)
        await engine.begin_search(engine.position(B.BLACK))
        assert engine.search.root_visits() >= 20  # the same side again: kept

    arun(go())
    engine.close()


def test_clear_cache_drops_the_tree_and_the_network_answers():
    engine, disp, out = make(playouts=100)
    run(disp, "play b E5")
    run(disp, "genmove w")
    engine.search.sync(engine.position(None))
    assert engine.search.root_visits() > 0 and engine.batcher.nn_cache.keys.any()
    run(disp, "clear_cache")
    assert out[-1] == "=\n\n"
    engine.search.sync(engine.position(None))
    assert engine.search.root_visits() == 0 and not engine.batcher.nn_cache.keys.any()
    assert len(engine.game.moves) == 2  # the game stays
    engine.close()
