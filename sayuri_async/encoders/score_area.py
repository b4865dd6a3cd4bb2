"""Sayuri's score area and the safe-area planes of ``sayuri-v3``, compiled.

Vocabulary
----------
safe area   pass-alive strings, their vital regions and pass-dead regions,
            of both colours (``benson.add_safe_area``; Sayuri's
            ``Board::ComputeSafeArea``).
score area  Tromp-Taylor ownership (stones, and empty points reached by one
            colour only: a point-set fill of the empty points from those
            next to each colour), overwritten by each colour's safe area, black
            first then white (Sayuri's ``Board::ComputeScoreArea``, area
            rules).
area planes ``area_planes``: both colours' safe areas and the score area's
            owner per action, the planes 25-28 of ``sayuri-v3``; with the
            side to move's idle points from the same pass
            (``area_planes_idle``), and from a caller's stone sets and
            working memory (``area_planes_with``, an ``AREA_SCRATCH_DTYPE``
            record).

Both follow ``src/game/board.cc`` of Sayuri; arrays are on our padded board
(``go/board.py``): ``p = (y + 1) * W + x + 1``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..go.board import BLACK, EMPTY, MAX_P, WHITE
from .benson import add_safe_area
from .pointset import SET_WORDS, fill, neighbours, stone_sets

AREA_SCRATCH_DTYPE = np.dtype(
    [
        ("sets", np.uint64, (4, SET_WORDS)),  # point sets of the fills (near, far, region, open)
        ("area", np.uint8, (MAX_P,)),  # one colour's safe area, per action
    ],
    align=True,
)


@njit(cache=True)
def reach_area(rec, owner) -> None:
    """Tromp-Taylor owner per action into ``owner[N*N]`` (int8): BLACK,
    WHITE, or EMPTY for points reached by both or neither."""
    black = np.empty(SET_WORDS, np.uint64)
    white = np.empty(SET_WORDS, np.uint64)
    empty = np.empty(SET_WORDS, np.uint64)
    stone_sets(rec, black, white, empty)
    _reach_owner(rec, black, white, empty, owner, np.empty((4, SET_WORDS), np.uint64))


@njit(cache=True)
def _reach_owner(rec, black, white, empty, owner, sets) -> None:
    """``reach_area`` from ``rec``'s stone sets: the empty regions next to
    a black stone are a fill of the empty points from those next to one,
    the same for white. ``sets``: scratch, ``[4, SET_WORDS]`` uint64."""
    n = rec.n
    w = rec.w
    near = sets[0]
    by_black = sets[1]
    by_white = sets[2]
    neighbours(black, w, near)
    for i in range(SET_WORDS):
        near[i] &= empty[i]
    fill(near, empty, w, by_black)
    neighbours(white, w, near)
    for i in range(SET_WORDS):
        near[i] &= empty[i]
    fill(near, empty, w, by_white)
    color = rec.color
    for y in range(n):  # no branch per point: the colours are too mixed to predict
        row = owner[y * n:(y + 1) * n]
        for x in range(n):
            u = np.uint64((y + 1) * w + x + 1)  # unsigned: no wrap-around arithmetic
            c = color[u]
            k = u & np.uint64(63)
            i = u >> np.uint64(6)
            b = (by_black[i] >> k) & np.uint64(1)
            wh = (by_white[i] >> k) & np.uint64(1)
            reached = np.int8(BLACK) * np.int8(b & ~wh) + np.int8(WHITE) * np.int8(wh & ~b)
            row[x] = c if c != EMPTY else reached


@njit(cache=True)
def area_planes(rec, own: int, safe, owner) -> None:
    """``safe[N*N]`` (uint8): both colours' safe areas; ``owner[N*N]`` (int8):
    Sayuri's area-rule score owner (BLACK, WHITE or EMPTY)."""
    area_planes_idle(rec, own, safe, owner, safe[:0], False)


@njit(cache=True)
def area_planes_idle(rec, own: int, safe, owner, idle, want_idle: bool) -> None:
    """``area_planes``, and with ``want_idle`` the side to move's idle
    points into ``idle[N*N]`` (``pass_alive_idle``) from the same pass."""
    stones = np.empty((3, SET_WORDS), np.uint64)
    stone_sets(rec, stones[0], stones[1], stones[2])
    _area_planes(rec, own, safe, owner, idle, want_idle, stones, np.empty((4, SET_WORDS), np.uint64),
                 np.empty(rec.n * rec.n, np.uint8))


@njit(cache=True)
def area_planes_with(rec, own: int, safe, owner, idle, want_idle: bool, stones, scratch) -> None:
    """``area_planes_idle`` from ``rec``'s stone sets ``stones`` (``[3,
    SET_WORDS]``: black, white, empty; ``pointset.stone_sets``) with the
    working memory ``scratch`` (an ``AREA_SCRATCH_DTYPE`` record): no
    array made on the common path (fewer than two vital regions), for a
    caller that encodes many positions."""
    _area_planes(rec, own, safe, owner, idle, want_idle, stones, scratch.sets, scratch.area)


@njit(cache=True)
def _area_planes(rec, own: int, safe, owner, idle, want_idle: bool, stones, sets, tmp) -> None:
    """``area_planes_with``'s work: ``sets`` (``[4, SET_WORDS]``) and ``tmp``
    (at least ``N*N``) its scratch."""
    n = rec.n
    nn = n * n
    for i in range(nn):
        safe[i] = 0
    black = stones[0]
    white = stones[1]
    empty = stones[2]
    _reach_owner(rec, black, white, empty, owner, sets)
    for c in (BLACK, WHITE):
        for i in range(nn):
            tmp[i] = 0
        add_safe_area(rec, c, tmp, idle, want_idle and c == own, black, white, empty, sets)
        for i in range(nn):
            if tmp[i]:
                owner[i] = c
                safe[i] = 1
