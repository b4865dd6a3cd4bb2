"""No root move into the opponent's pass-alive area.

White has a pass-alive string on the left edge of a 7x7 board (column B
and A3, A6) with the eyes A1-A2, A4-A5 and A7; black is to move. A1, A2,
A4 and A5 are legal for black (A7 would be suicide) and the policy puts
70% of its weight there, yet no stone can live there: the root never
searches or plays one, for both encoders, in a fresh tree (the search's
first expansion, as self-play and match run it) and in GTP's trees kept
from the move before (``Engine.begin_search`` closes them); with
``sayuri-v3`` no position of the tree has such an edge.
"""
from __future__ import annotations

import asyncio

import numpy as np
import pytest

from gtp.config import GtpConfig
from gtp.engine import Engine
from sayuri_async.go import board as B
from sayuri_async.go.coords import vertex_to_action
from sayuri_async.go.game import Game
from sayuri_async.net.backends import NetOutput, RandomBackend
from sayuri_async.encoders.benson import opponent_safe_points, pass_alive_idle
from sayuri_async.search.config import SearchConfig
from sayuri_async.search.mcts import Search
from sayuri_async.search.root import child_index

from helpers_search import InstantEvaluator

N = 7
BARRED = [vertex_to_action(v, N) for v in ("A1", "A2", "A4", "A5")]
ENCODERS = [("simple-v1", 25), ("sayuri-v3", 43)]


def white_fortress() -> Game:
    g = Game(N, komi=7.5)
    for v in ["B1", "B2", "B3", "B4", "B5", "B6", "B7", "A3", "A6"]:
        g.play_vertex("pass", B.BLACK)
        g.play_vertex(v, B.WHITE)
    return g  # black to move


def barred_policy(_planes=None) -> np.ndarray:
    p = np.full(N * N + 1, 0.3 / (N * N + 1), np.float32)
    p[BARRED] += 0.7 / len(BARRED)
    return p


class BarredBackend(RandomBackend):
    """The random network with the policy of ``barred_policy``."""

    def run(self, batch: np.ndarray) -> NetOutput:
        out = super().run(batch)
        return NetOutput(np.tile(barred_policy(), (batch.shape[0], 1)), out.wdl, out.score, out.ownership)


@pytest.mark.slow
def test_the_barred_points_are_the_opponents_safe_empty_points():
    g = white_fortress()
    barred = np.zeros(N * N, np.uint8)
    assert opponent_safe_points(g.rec, B.BLACK, barred) == 5
    assert sorted(np.flatnonzero(barred)) == sorted(BARRED + [vertex_to_action("A7", N)])
    assert all(g.is_legal(a) for a in BARRED)
    idle = np.zeros(N * N, np.uint8)
    assert pass_alive_idle(g.rec, B.BLACK, idle) == 0  # black's own eyes: none


@pytest.mark.parametrize("encoder,planes", ENCODERS)
def test_a_fresh_root_never_gets_a_barred_move(encoder, planes):
    g = white_fortress()
    s = Search(SearchConfig(), encoder, rng=np.random.default_rng(5))
    ev = InstantEvaluator(N, planes=planes, policy_fn=barred_policy)
    res = asyncio.run(s.run(g, ev, 150))
    assert res.action not in BARRED
    assert not np.isin(s.root_actions(), BARRED).any(), "a barred root child"
    assert res.visits[BARRED].sum() == 0
    if encoder == "sayuri-v3":
        used = s.edges[: int(s.ws[0]["edges_used"])]
        assert not np.isin(used["action"], BARRED).any(), "a barred edge somewhere in the tree"


def expected_reply(s: Search, action: int) -> int:
    """White's most visited expanded answer to ``action`` in the tree (with
    ``simple-v1`` often a fill of its own eye: below the root it writes
    every move; the string stays pass-alive)."""
    nd = s.nodes[child_index(s.ws, s.nodes, s.edges, action)]
    kids = s.edges[int(nd["first"]) : int(nd["first"]) + int(nd["nchild"])]
    best, most = -1, 0
    for k in kids:
        c = int(k["child"])
        if c >= 0 and s.nodes[c]["nchild"] > 0 and s.nodes[c]["visits"] > most:
            best, most = int(k["action"]), int(s.nodes[c]["visits"])
    assert best >= 0, "no expanded answer in the tree"
    return best


@pytest.mark.parametrize("encoder,planes", ENCODERS)
def test_gtp_never_searches_or_plays_a_barred_move_in_a_kept_tree(encoder, planes):
    async def play() -> None:
        cfg = GtpConfig()
        cfg.game.board_size = N
        cfg.search.playouts = 200
        cfg.search.seed = 9
        e = Engine(cfg, BarredBackend(encoder=encoder, seed=9))
        kept = 0
        try:
            e.replace_game(white_fortress())
            for turn in range(3):
                await e.begin_search(e.game)
                kept += turn > 0 and e.search.root_visits() > 1
                before, _, prior = e.search.stats(N)
                assert (prior[BARRED] <= 0).all(), f"turn {turn}: a barred root move is open"
                action = await e.genmove(B.BLACK)
                after, _, prior = e.search.stats(N)
                assert action not in BARRED, f"turn {turn}: played a barred move"
                assert (after[BARRED] == before[BARRED]).all() and (prior[BARRED] <= 0).all(), \
                    f"turn {turn}: searched a barred move"
                e.game.play(expected_reply(e.search, action), B.WHITE)  # its position is in the tree
        finally:
            e.close()
        assert kept == 2, "the trees were not kept"

    asyncio.run(play())
