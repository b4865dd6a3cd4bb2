"""The ``sayuri-v3`` encoder: Sayuri's 43 input planes (networks of version 3-5).

Vocabulary
----------
plane        ``out[c, y, x]``, row ``y = 0`` = GTP row 1, the orientation
             Sayuri uses too (its index ``y * N + x`` is our action).
own/opp      colours relative to the side to move now (also in the history).
history k    the position ``k`` plies ago, ``k = 0..7``, three planes each:
             own stones, opponent stones, the move that produced it (empty
             for a pass, the start position, or before the game began).
komi code    the four real-valued planes (wave, komi/20, -komi/20, N*N/361)
             do not fit in 0/1 planes, and our chunks store planes as bits.
             They depend only on the side to move's komi and the board size,
             so the encoder writes the komi as a *count*: plane
             ``P_KOMI`` has ``round(2 * komi)`` cells set when the komi (for
             the side to move) is positive, plane ``P_NEG_KOMI`` the same
             for a negative komi (in raster order; the count survives the
             dihedral symmetries). ``decode_inputs`` in ``sayuri/inputs.py``
             turns the planes back into Sayuri's floats on the device, so an
             imported network sees exactly what Sayuri feeds it. Komi is in
             half points and at most ``N*N / 2`` points either way.

Planes (0-based; Sayuri's ``src/neural/encoder.h`` counts from 1):

== ======================================================================
0  own stones now; 1 opponent stones now; 2 last move (3k..3k+2: k plies ago)
24 ko point (the point the side to move may not take back)
25 safe area owned by the side to move (pass-alive or pass-dead, Benson)
26 safe area owned by the opponent
27 area-rule owner = side to move (Tromp-Taylor, safe areas overriding)
28 area-rule owner = opponent
29 stones of strings with 1 liberty; 30: 2; 31: 3; 32: 4 (both colours)
33 ladder: string captured by a ladder already (one liberty)
34 ladder: string with two liberties that a ladder can capture
35 ladder: an atari that starts such a ladder
36 ladder: the move that captures a string of plane 33
37 scoring rule: 0 (area; our engine plays area scoring)
38 wave (written 0 here; computed from komi and N by ``decode_inputs``)
39 komi code (positive komi count), becomes komi/20
40 komi code (negative komi count), becomes -komi/20
41 written 0, becomes N*N/361
42 ones
== ======================================================================

The last-move plane of the oldest history step (7 plies ago) needs the
move that led to it; it is read from the record's ``hist_move`` ring when
``BOARD_DTYPE`` has one, and otherwise left empty (the other steps take it
from the difference of consecutive positions). Handicap komi compensation
(Sayuri adds the handicap stone count to komi under area rules) is not
added: ``rec.komi`` is used as it is.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .. import features
from ..go.board import BLACK, BOARD_DTYPE, EMPTY, HISTORY, NO_KO, PASS, WHITE
from .benson import area_planes
from .ladder import LADDER_ATARI, LADDER_DEATH, LADDER_ESCAPABLE, LADDER_TAKE, ladder_map

NAME = "sayuri-v3"
PLANES = 43
P_HISTORY = 0
P_KO = 24
P_AREA = 25
P_LIBS = 29
P_LADDER = 33
P_RULE = 37
P_WAVE = 38
P_KOMI = 39
P_NEG_KOMI = 40
P_SIZE = 41
P_ONES = 42
MISC_PLANES = 6  # 37..42 are not stored in Sayuri's training data
HAS_HIST_MOVE = "hist_move" in BOARD_DTYPE.names


@njit(cache=True)
def komi_count(komi_stm: float, n: int) -> tuple[int, int]:
    """(cells of P_KOMI, cells of P_NEG_KOMI) for the side to move's komi."""
    h = int(np.round(2.0 * komi_stm))
    cap = n * n
    if h >= 0:
        return min(h, cap), 0
    return 0, min(-h, cap)


@njit(cache=True)
def _fill(o, start: int, count: int, v: np.uint8) -> None:
    z = o[start:start + count]
    for i in range(count):
        z[i] = v


@njit(cache=True)
def _history(rec, o, nn: int, use_ring: bool) -> None:
    n = rec.n
    w = rec.w
    own = rec.to_move
    opp = 3 - own
    hist = rec.hist
    for k in range(HISTORY):
        base = 3 * k * nn
        if k > rec.move_num:
            _fill(o, base, 3 * nn, np.uint8(0))
            continue
        cur = hist[(rec.hist_pos - k) % HISTORY]
        for y in range(n):
            row = (y + 1) * w + 1
            r = y * n
            for x in range(n):
                c = cur[row + x]
                o[base + r + x] = np.uint8(c == own)
                o[base + nn + r + x] = np.uint8(c == opp)
        mv = base + 2 * nn
        _fill(o, mv, nn, np.uint8(0))
        if k == 0:
            p = rec.last_move
            if p != PASS and p > 0:
                o[mv + (p // w - 1) * n + p % w - 1] = 1
        elif k + 1 <= rec.move_num and k + 1 < HISTORY:
            prev = hist[(rec.hist_pos - k - 1) % HISTORY]
            for y in range(n):
                row = (y + 1) * w + 1
                for x in range(n):
                    if prev[row + x] == EMPTY and cur[row + x] != EMPTY:
                        o[mv + y * n + x] = 1
        elif use_ring and k + 1 <= rec.move_num:
            p = _ring_move(rec, k)
            if p != PASS and p > 0:
                o[mv + (p // w - 1) * n + p % w - 1] = 1


if HAS_HIST_MOVE:
    @njit(cache=True)
    def _ring_move(rec, k: int) -> int:
        return rec.hist_move[(rec.hist_pos - k) % HISTORY]
else:
    @njit(cache=True)
    def _ring_move(rec, k: int) -> int:
        return PASS


@njit(cache=True)
def encode_sayuri_v3(rec, out) -> None:
    """Sayuri's 43 planes for the side to move (see the module docstring)."""
    n = rec.n
    w = rec.w
    nn = n * n
    o = out.reshape(out.size)
    _history(rec, o, nn, HAS_HIST_MOVE)
    own = rec.to_move
    opp = 3 - own
    _fill(o, P_KO * nn, (P_RULE - P_KO) * nn, np.uint8(0))
    if rec.ko != NO_KO:
        o[P_KO * nn + (rec.ko // w - 1) * n + rec.ko % w - 1] = 1
    safe = np.empty(nn, np.uint8)
    owner = np.empty(nn, np.int8)
    area_planes(rec, own, safe, owner)
    a = P_AREA * nn
    for i in range(nn):
        mine = owner[i] == own
        theirs = owner[i] == opp
        o[a + i] = np.uint8(safe[i] != 0 and mine)
        o[a + nn + i] = np.uint8(safe[i] != 0 and theirs)
        o[a + 2 * nn + i] = np.uint8(mine)
        o[a + 3 * nn + i] = np.uint8(theirs)
    b = P_LIBS * nn
    for y in range(n):
        for x in range(n):
            p = (y + 1) * w + x + 1
            c = rec.color[p]
            if c == BLACK or c == WHITE:
                lib = rec.libs[rec.parent[p]]
                if 1 <= lib <= 4:
                    o[b + (lib - 1) * nn + y * n + x] = 1
    lad = np.empty(nn, np.int8)
    ladder_map(rec, lad)
    d = P_LADDER * nn
    for i in range(nn):
        v = lad[i]
        if v == LADDER_DEATH:
            o[d + i] = 1
        elif v == LADDER_ESCAPABLE:
            o[d + nn + i] = 1
        elif v == LADDER_ATARI:
            o[d + 2 * nn + i] = 1
        elif v == LADDER_TAKE:
            o[d + 3 * nn + i] = 1
    _fill(o, P_RULE * nn, (P_ONES - P_RULE) * nn, np.uint8(0))
    komi = rec.komi if own == BLACK else -rec.komi
    pos, neg = komi_count(komi, n)
    _fill(o, P_KOMI * nn, pos, np.uint8(1))
    _fill(o, P_NEG_KOMI * nn, neg, np.uint8(1))
    _fill(o, P_ONES * nn, nn, np.uint8(1))


@njit(cache=True)
def encode_sayuri_v3_arr(arr, out) -> None:
    """``encode_sayuri_v3(arr[0], out)`` for Python callers holding ``Game.arr``."""
    encode_sayuri_v3(arr[0], out)


IDENT = 1  # features.Encoder.ident
ENCODER = features.Encoder(NAME, PLANES, encode_sayuri_v3, encode_sayuri_v3_arr, ident=IDENT)


def register() -> features.Encoder:
    """Add ``sayuri-v3`` to ``features.ENCODERS`` (idempotent)."""
    features.ENCODERS.setdefault(NAME, ENCODER)
    return features.ENCODERS[NAME]


register()
