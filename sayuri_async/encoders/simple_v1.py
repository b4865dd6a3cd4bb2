"""The ``simple-v1`` encoder: 25 AlphaZero-style planes plus ko and liberties.

Vocabulary
----------
own/opp    colours relative to the side to move at the current position
           (also for the history planes).
history k  the position ``k`` plies ago, ``k = 0..7``: own stones (plane
           ``2k``) and opponent stones (``2k + 1``); empty before the game
           began.
liberty planes  the stones of own (``P_OWN_LIBS``) and opponent
           (``P_OPP_LIBS``) strings with 1, 2 and 3 or more liberties.

``docs/features.md`` lists every plane; the package docstring
(``encoders/__init__.py``) says what an encoder and its ``encode`` are.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..go.board import BLACK, HISTORY, MAX_P, NO_KO
from .planes import eq_planes, fill

SIMPLE_V1_PLANES = 2 * HISTORY + 1 + 1 + 1 + 6  # 25
# plane indices (see docs/features.md)
# planes 0 .. 2 * HISTORY - 1: 2k own stones k plies ago, 2k+1 opponent stones k plies ago
P_BLACK_TO_MOVE = 2 * HISTORY  # 16
P_ONES = P_BLACK_TO_MOVE + 1  # 17
P_KO = P_ONES + 1  # 18
P_OWN_LIBS = P_KO + 1  # 19, 20, 21: own strings with 1, 2, 3+ liberties
P_OPP_LIBS = P_OWN_LIBS + 3  # 22, 23, 24: opponent strings with 1, 2, 3+


@njit(cache=True)
def encode_simple_v1(rec, out) -> None:
    """AlphaZero-style planes plus ko and liberty planes; 25 planes."""
    n = rec.n
    w = rec.w
    nn = n * n
    own = np.int8(rec.to_move)
    opp = np.int8(3 - rec.to_move)
    o = out.reshape(out.size)  # flat view: plane c starts at c * nn
    hist = rec.hist  # [HISTORY, MAX_P] int8 colours on the padded board
    for k in range(HISTORY):
        d = 2 * k * nn
        if k <= rec.move_num:
            eq_planes(hist[(rec.hist_pos - k) % HISTORY], w, n, o, d, d + nn, own, opp)
        else:
            fill(o, d, 2 * nn, np.uint8(0))
    fill(o, P_BLACK_TO_MOVE * nn, nn, np.uint8(1) if rec.to_move == BLACK else np.uint8(0))
    fill(o, P_ONES * nn, nn, np.uint8(1))
    fill(o, P_KO * nn, nn, np.uint8(0))
    ko = rec.ko
    if ko != NO_KO:
        o[P_KO * nn + (ko // w - 1) * n + ko % w - 1] = 1
    # liberty code per padded point: 0 empty/border, 1..3 own string with
    # 1, 2, 3+ liberties, 5..7 the same for the opponent; then 6 planes by compare
    code = np.empty(MAX_P, np.int8)
    lo = w + 1
    m = n * w + n + 1 - lo  # from the first to the last interior point
    cs = rec.color[lo:lo + m]
    ps = rec.parent[lo:lo + m]
    cd = code[lo:lo + m]
    libs = rec.libs
    for i in range(m):
        c = cs[i]
        lib = np.int8(min(libs[np.uint16(ps[i])], 3))  # unsigned index: no wraparound check
        cd[i] = np.int8(c == own) * lib + np.int8(c == opp) * (lib + np.int8(4))
    b = P_OWN_LIBS * nn
    eq_planes(code, w, n, o, b, b + 3 * nn, np.int8(1), np.int8(5))
    eq_planes(code, w, n, o, b + nn, b + 4 * nn, np.int8(2), np.int8(6))
    eq_planes(code, w, n, o, b + 2 * nn, b + 5 * nn, np.int8(3), np.int8(7))


@njit(cache=True)
def encode_simple_v1_arr(arr, out) -> None:
    """``encode_simple_v1(arr[0], out)`` for Python callers holding ``Game.arr``."""
    encode_simple_v1(arr[0], out)
