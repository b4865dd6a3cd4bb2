"""The search never generates a move into the mover's own pass-alive eyes.

Black has a pass-alive string on the left edge (columns A and B) with four
one-point eyes A1, A3, A5, A7; the only bad moves on the board are those
eye fills, and the network's policy puts nearly all its weight on them.
The root never gets a child there and the chosen move is never one of them,
for both encoders, in a fresh tree and in a tree kept from the move before
(whose positions were expanded below the old root); with ``sayuri-v3``,
whose planes compute the safe areas anyway, no position of the tree has an
edge into them (Sayuri's rule).
"""
from __future__ import annotations

import asyncio

import numpy as np
import pytest

from sayuri_async.go import board as B
from sayuri_async.go.coords import vertex_to_action
from sayuri_async.go.game import Game
from sayuri_async.encoders.benson import pass_alive_idle
from sayuri_async.search.config import SearchConfig
from sayuri_async.search.mcts import Search

from helpers_search import InstantEvaluator

N = 7
EYES = [vertex_to_action(v, N) for v in ("A1", "A3", "A5", "A7")]


def eye_position() -> Game:
    g = Game(N, komi=7.5)
    for v in ["B1", "B2", "B3", "B4", "B5", "B6", "B7", "A2", "A4", "A6"]:
        g.play_vertex(v, B.BLACK)
        g.play_vertex("pass", B.WHITE)
    return g


def eye_policy(planes) -> np.ndarray:
    p = np.full(N * N + 1, 0.02 / (N * N + 1), np.float32)
    p[EYES] += 0.98 / len(EYES)
    return p


def test_the_eyes_are_the_idle_points():
    g = eye_position()
    idle = np.zeros(N * N, np.uint8)
    assert pass_alive_idle(g.rec, B.BLACK, idle) == 4
    assert sorted(np.flatnonzero(idle)) == sorted(EYES)
    assert pass_alive_idle(g.rec, B.WHITE, idle) == 0


@pytest.mark.parametrize("encoder,planes", [("simple-v1", 25), ("sayuri-v3", 43)])
def test_no_eye_fill_is_generated(encoder, planes):
    g = eye_position()
    s = Search(SearchConfig(), encoder, rng=np.random.default_rng(3))
    ev = InstantEvaluator(N, planes=planes, policy_fn=eye_policy)
    for turn in range(3):
        res = asyncio.run(s.run(g, ev, 120))
        assert res.action not in EYES
        kids = s.root_actions()
        pri = res.prior
        assert all(pri[a] < 0 or a not in kids for a in EYES), f"turn {turn}: a root child fills an eye"
        assert res.visits[EYES].sum() == 0
        if encoder == "sayuri-v3":
            used = s.edges[: int(s.ws[0]["edges_used"])]
            assert not np.isin(used["action"], EYES).any(), "an eye fill somewhere in the tree"
        if res.action == g.pass_action:
            break
        g.play(res.action)
        white = [a for a in np.flatnonzero(g.legal_actions()) if a != g.pass_action]
        g.play(int(white[-1]))  # the tree is kept: the new root was expanded below the old one
    assert s.root_children() > 0
