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
             dihedral symmetries). ``decode_inputs`` in ``sayuri_v3_decode.py``
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
37 scoring rule: 0 area, 1 territory (all ones)
38 wave (written 0 here; computed from komi and N by ``decode_inputs``)
39 komi code (positive komi count), becomes komi/20
40 komi code (negative komi count), becomes -komi/20
41 written 0, becomes N*N/361
42 ones
== ======================================================================

Rules (the board record's ``scoring``, ``handicap``, ``handicap_last``,
set by ``go/game.py``), as Sayuri encodes them:

- territory scoring: planes 25-28 stay empty, plane 37 is all ones (wave 0
  after decoding), and the komi is Sayuri's komi with its stone-count
  penalty: black's komi plus the stones black played minus the stones
  white played (stones on the board plus those the other side captured);
- handicap: under area scoring white gets one komi point per handicap
  stone; under both rules the last handicap stone counts as a move (Sayuri
  plays it, KataGo-style): the start position has it as its last move, and
  the step before it (when the history reaches that far) is the start
  position without it.

``encoded_komi`` gives that komi (black's). The search encodes its leaves
with ``encode_sayuri_v3_reuse``, which takes the ladder read-outs of the
search's root (``ladder.ladder_map_reuse``) and also returns the side to
move's idle points (``benson.py``) for the legal-move list: the same planes
as ``encode_sayuri_v3``.

scratch      a ``SCRATCH_DTYPE`` record a search keeps beside its workspace
             (``new_scratch``, the encoder's ``Encoder.new_scratch``; the
             leaf dispatch ``leaf.py`` hands it here): the ladder cache
             (``ladders``) with the search root it was made for
             (``root_serial``), the position's stone sets, computed once
             for the area planes and the ladders, and the working memory of
             both, so that encoding a leaf makes no array (some thirty small
             ones were made and freed at every leaf: with the reference
             counts, about a tenth of 19x19 self-play's samples in perf).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..go.board import BLACK, HISTORY, MAX_P, NO_KO, PASS, WHITE, liberties_per_action
from .ladder import (LADDER_ATARI, LADDER_CACHE_DTYPE, LADDER_DEATH, LADDER_ESCAPABLE, LADDER_TAKE, ladder_map,
                     ladder_map_reuse)
from .planes import eq_planes, fill
from .pointset import SET_WORDS, stone_sets
from .score_area import AREA_SCRATCH_DTYPE, area_planes, area_planes_with

NAME = "sayuri-v3"
PLANES = 43
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

SCRATCH_DTYPE = np.dtype(
    [
        ("ladders", LADDER_CACHE_DTYPE),  # the ladder read-outs kept for later positions (ladder.py)
        ("root_serial", np.int64),  # the search root (its ``set_root`` count) the ladder cache's root entries are for
        ("area", AREA_SCRATCH_DTYPE),  # the safe areas' working memory (score_area.py)
        ("stones", np.uint64, (3, SET_WORDS)),  # the leaf's black, white and empty points (pointset.py)
        ("safe", np.uint8, (MAX_P,)),  # per action: in a safe area of either colour
        ("owner", np.int8, (MAX_P,)),  # per action: Sayuri's area-rule owner
        ("lad", np.int8, (MAX_P,)),  # per action: the ladder code
        ("libs_at", np.int16, (MAX_P,)),  # per action: its string's liberties (``board.liberties_per_action``)
    ],
    align=True,
)


def new_scratch() -> np.ndarray:
    """An empty scratch (an array of one ``SCRATCH_DTYPE`` record)."""
    return np.zeros(1, SCRATCH_DTYPE)


@njit(cache=True)
def komi_count(komi_stm: float, n: int) -> tuple[int, int]:
    """(cells of P_KOMI, cells of P_NEG_KOMI) for the side to move's komi."""
    h = int(np.round(2.0 * komi_stm))
    cap = n * n
    if h >= 0:
        return min(h, cap), 0
    return 0, min(-h, cap)


@njit(cache=True)
def encoded_komi(rec) -> float:
    """Black's komi as Sayuri encodes it (``GetKomiWithPenalty``): plus the
    handicap stones under area scoring; under territory scoring plus the
    stones black played minus those white played."""
    komi = np.float64(rec.komi)
    if rec.scoring == 1:
        n = rec.n
        w = rec.w
        black = 0
        white = 0
        for y in range(n):
            for x in range(n):
                c = rec.color[(y + 1) * w + x + 1]
                if c == BLACK:
                    black += 1
                elif c == WHITE:
                    white += 1
        # stones played = stones on the board + those the opponent captured
        komi += (black + rec.captures[WHITE]) - (white + rec.captures[BLACK])
    else:
        komi += rec.handicap
    return komi


@njit(cache=True, inline="always")
def _move_cell(o, mv: int, p: int, n: int, w: int) -> None:
    if p != PASS and p > 0:
        o[mv + (p // w - 1) * n + p % w - 1] = 1


@njit(cache=True)
def _history(rec, o, nn: int) -> None:
    """Planes 0-23. The move that led to history step ``k`` is the ring's
    ``hist_move`` of that step (the stone that appeared since the step
    before); the start position has none, except the last handicap stone."""
    n = rec.n
    w = rec.w
    own = np.int8(rec.to_move)
    opp = np.int8(3 - rec.to_move)
    hist = rec.hist
    m = rec.move_num
    for k in range(HISTORY):
        base = 3 * k * nn
        mv = base + 2 * nn
        if k <= m:
            slot = (rec.hist_pos - k) % HISTORY
            eq_planes(hist[slot], w, n, o, base, base + nn, own, opp)
            fill(o, mv, nn, np.uint8(0))
            if k < m:
                _move_cell(o, mv, rec.hist_move[slot], n, w)
            elif rec.handicap > 0:
                _move_cell(o, mv, rec.handicap_last, n, w)
        elif k == m + 1 and rec.handicap > 0:
            # Sayuri plays the last handicap stone as a move: the step before
            # the start position is the start without it
            start = hist[(rec.hist_pos - m) % HISTORY]
            eq_planes(start, w, n, o, base, base + nn, own, opp)
            fill(o, mv, nn, np.uint8(0))
            p = rec.handicap_last
            if p > 0:
                o[base + (0 if own == BLACK else nn) + (p // w - 1) * n + p % w - 1] = 0
        else:
            fill(o, base, 3 * nn, np.uint8(0))


@njit(cache=True)
def _planes(rec, o, nn: int, lad, safe, owner, libs_at) -> None:
    """Planes 24-42 from the ladder map ``lad``, the area planes
    (``safe``, ``owner``; not read under territory scoring) and each
    action's liberties ``libs_at`` (``[N*N]`` int16,
    ``board.liberties_per_action``, which the ladder pass reads too)."""
    n = rec.n
    w = rec.w
    own = rec.to_move
    opp = 3 - own
    territory = rec.scoring == 1
    fill(o, P_KO * nn, (P_LIBS - P_KO) * nn, np.uint8(0))  # planes 29-36 are written whole below
    if rec.ko != NO_KO:
        o[P_KO * nn + (rec.ko // w - 1) * n + rec.ko % w - 1] = 1
    # slices of ``o`` and ``range`` indices only below: numba then knows no
    # index is negative and skips its wrap-around arithmetic at every store
    if not territory:
        safe_own = o[P_AREA * nn:(P_AREA + 1) * nn]
        safe_opp = o[(P_AREA + 1) * nn:(P_AREA + 2) * nn]
        own_area = o[(P_AREA + 2) * nn:(P_AREA + 3) * nn]
        opp_area = o[(P_AREA + 3) * nn:(P_AREA + 4) * nn]
        for i in range(nn):
            mine = owner[i] == own
            theirs = owner[i] == opp
            safe_own[i] = np.uint8((safe[i] != 0) & mine)
            safe_opp[i] = np.uint8((safe[i] != 0) & theirs)
            own_area[i] = np.uint8(mine)
            opp_area[i] = np.uint8(theirs)
    lib_planes = o[P_LIBS * nn:(P_LIBS + 4) * nn]
    for k in range(4):
        plane = lib_planes[k * nn:(k + 1) * nn]
        want = np.int16(k + 1)
        for i in range(nn):
            plane[i] = np.uint8(libs_at[i] == want)
    dead = o[P_LADDER * nn:(P_LADDER + 1) * nn]
    escapable = o[(P_LADDER + 1) * nn:(P_LADDER + 2) * nn]
    atari = o[(P_LADDER + 2) * nn:(P_LADDER + 3) * nn]
    take = o[(P_LADDER + 3) * nn:(P_LADDER + 4) * nn]
    for i in range(nn):
        v = lad[i]
        dead[i] = np.uint8(v == LADDER_DEATH)
        escapable[i] = np.uint8(v == LADDER_ESCAPABLE)
        atari[i] = np.uint8(v == LADDER_ATARI)
        take[i] = np.uint8(v == LADDER_TAKE)
    fill(o, P_RULE * nn, (P_ONES - P_RULE) * nn, np.uint8(0))
    if territory:
        fill(o, P_RULE * nn, nn, np.uint8(1))
    komi = encoded_komi(rec)
    pos, neg = komi_count(komi if own == BLACK else -komi, n)
    fill(o, P_KOMI * nn, pos, np.uint8(1))
    fill(o, P_NEG_KOMI * nn, neg, np.uint8(1))
    fill(o, P_ONES * nn, nn, np.uint8(1))


@njit(cache=True)
def encode_sayuri_v3(rec, out) -> None:
    """Sayuri's 43 planes for the side to move (see the module docstring)."""
    nn = rec.n * rec.n
    o = out.reshape(out.size)
    _history(rec, o, nn)
    safe = np.empty(nn, np.uint8)
    owner = np.empty(nn, np.int8)
    if rec.scoring != 1:
        area_planes(rec, rec.to_move, safe, owner)
    lad = np.empty(nn, np.int8)
    ladder_map(rec, lad)
    libs_at = np.empty(nn, np.int16)
    liberties_per_action(rec, libs_at)
    _planes(rec, o, nn, lad, safe, owner, libs_at)


@njit(cache=True)
def encode_sayuri_v3_reuse(rec, out, leaf, idle) -> int:
    """``encode_sayuri_v3(rec, out)`` with the scratch ``leaf`` (a
    ``SCRATCH_DTYPE`` record), reading ladders with the read-outs of its
    ladder cache (kept at an earlier position by ``ladder.ladder_map_keep``;
    an empty cache reads every string), and the side to move's idle points
    into ``idle[N*N]`` (uint8) from the same safe-area pass (all 0 under
    territory scoring, where no safe area is computed). Returns how many
    idle points there are."""
    nn = rec.n * rec.n
    o = out.reshape(out.size)
    _history(rec, o, nn)
    stones = leaf.stones
    stone_sets(rec, stones[0], stones[1], stones[2])
    safe = leaf.safe[:nn]
    owner = leaf.owner[:nn]
    k = 0
    if rec.scoring != 1:
        area_planes_with(rec, rec.to_move, safe, owner, idle, True, stones, leaf.area)
        for i in range(nn):
            k += idle[i]
    else:
        for i in range(nn):
            idle[i] = 0
    lad = leaf.lad[:nn]
    libs_at = leaf.libs_at[:nn]
    liberties_per_action(rec, libs_at)  # once, for the ladder pass's short strings and planes 29-32
    ladder_map_reuse(rec, lad, leaf.ladders, stones, libs_at)
    _planes(rec, o, nn, lad, safe, owner, libs_at)
    return k


@njit(cache=True)
def encode_sayuri_v3_arr(arr, out) -> None:
    """``encode_sayuri_v3(arr[0], out)`` for Python callers holding ``Game.arr``."""
    encode_sayuri_v3(arr[0], out)

