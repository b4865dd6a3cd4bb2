"""Scoring: Tromp-Taylor area counting and territory counting.

Vocabulary
----------
area       stones of a colour plus empty points whose region (connected empty
           points) touches stones of that colour only (Tromp-Taylor).
territory  empty points whose region touches one colour only, without stones;
           territory scoring adds the prisoners (stones captured).
score      black's points minus white's points minus komi minus white's
           handicap compensation: positive means black wins.
           ``result_string`` turns it into ``B+3.5``/``W+0.5``/``0``.
compensation  points white gets for black's handicap stones: one a stone
           under area scoring (Chinese rules; Sayuri and KataGo count the
           same and Sayuri's komi plane includes it), none under territory
           scoring (``handicap_compensation``).
ownership  per action (``N*N`` values, row 0 = GTP row 1): +1 black, -1 white,
           0 neutral, by the area rule. Used as the ownership training target.
dead stones  stones a judge (GTP's ``final_status.py``) takes for captured:
           ``score_with_dead`` takes them off a copy of the board before
           counting and counts them as prisoners of the other colour (they
           matter under territory scoring), so the region they stood in
           goes to the colour around it.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .board import BLACK, EMPTY, MAX_P, WHITE


@njit(cache=True)
def area_map(rec, out) -> None:
    """Write Tromp-Taylor owner per action into ``out`` (``[N*N]`` int8):
    1 black, 2 white, 0 neutral (a region touching both or neither)."""
    n = rec.n
    w = np.int64(rec.w)
    owner = np.zeros(MAX_P, dtype=np.int8)  # per point, 0 = not yet visited
    stack = np.empty(MAX_P, dtype=np.int32)
    region = np.empty(MAX_P, dtype=np.int32)
    visited = np.zeros(MAX_P, dtype=np.bool_)
    for y in range(n):
        for x in range(n):
            p = (y + 1) * w + x + 1
            c = rec.color[p]
            if c == BLACK or c == WHITE:
                owner[p] = c
                continue
            if visited[p]:
                continue
            # flood the empty region from p
            top = 0
            count = 0
            stack[top] = p
            top += 1
            visited[p] = True
            touch = 0
            while top > 0:
                top -= 1
                q = stack[top]
                region[count] = q
                count += 1
                for d in range(4):
                    r = q + (-1, 1, -w, w)[d]
                    cr = rec.color[r]
                    if cr == EMPTY:
                        if not visited[r]:
                            visited[r] = True
                            stack[top] = r
                            top += 1
                    elif cr == BLACK:
                        touch |= 1
                    elif cr == WHITE:
                        touch |= 2
            val = 0
            if touch == 1:
                val = BLACK
            elif touch == 2:
                val = WHITE
            for i in range(count):
                owner[region[i]] = val
    for y in range(n):
        for x in range(n):
            out[y * n + x] = owner[(y + 1) * w + x + 1]


@njit(cache=True)
def area_balance(rec) -> float:
    """Tromp-Taylor: black's area minus white's, komi not included."""
    n = rec.n
    owner = np.empty(n * n, dtype=np.int8)
    area_map(rec, owner)
    s = 0.0
    for i in range(n * n):
        if owner[i] == BLACK:
            s += 1.0
        elif owner[i] == WHITE:
            s -= 1.0
    return s


@njit(cache=True)
def handicap_compensation(rec) -> float:
    """White's points for the record's handicap stones: one a stone under
    area scoring (``rec.scoring == 0``), none under territory scoring."""
    if rec.scoring == 0:
        return float(rec.handicap)
    return 0.0


@njit(cache=True)
def area_outcome(rec) -> float:
    """The Tromp-Taylor result of the record's position with its own komi
    and handicap compensation, for the side to move: +1 win, -1 loss, 0 jigo
    (the search's value of a game that ended inside the tree)."""
    s = area_balance(rec) - rec.komi - handicap_compensation(rec)
    if rec.to_move == WHITE:
        s = -s
    if s > 0:
        return 1.0
    if s < 0:
        return -1.0
    return 0.0


def _territories(rec) -> tuple[int, int]:
    """(empty points owned by black only, by white only), Tromp-Taylor."""
    n = int(rec["n"])
    owner = np.empty(n * n, dtype=np.int8)
    area_map(rec, owner)
    w = n + 2
    empty = rec["color"][: w * w].reshape(w, w)[1:-1, 1:-1].reshape(-1) == EMPTY
    return int(np.count_nonzero(empty & (owner == BLACK))), int(np.count_nonzero(empty & (owner == WHITE)))


def area_score(rec, komi: float) -> float:
    """Tromp-Taylor: black area - white area - komi."""
    return float(area_balance(rec)) - komi


def territory_score(rec, komi: float, prisoners_black: int, prisoners_white: int) -> float:
    """Territory counting without dead-stone removal: black territory plus
    stones black captured, minus the same for white, minus komi."""
    bt, wt = _territories(rec)
    return float(bt + prisoners_black - wt - prisoners_white) - komi


def without_stones(rec, dead: np.ndarray) -> np.ndarray:
    """A copy of the board record ``rec`` (a ``[1]`` array) with the stones
    at the actions where ``dead`` (``[N*N]`` bool) is true taken off. Only
    the colours are changed: the copy is for counting, not for play."""
    n = int(rec["n"])
    w = n + 2
    clean = np.empty(1, dtype=rec.dtype)
    clean[0] = rec
    acts = np.flatnonzero(dead)
    clean["color"][0][(acts // n + 1) * w + acts % n + 1] = EMPTY
    return clean


def score_with_dead(rec, dead: np.ndarray, komi: float, territory: bool) -> float:
    """Black minus white minus komi with the stones at ``dead`` (``[N*N]``
    bool) removed first: area scoring counts the cleaned board
    (Tromp-Taylor, white's handicap compensation included), territory
    scoring its empty points plus the captures and the dead stones as
    prisoners of the other colour."""
    n = int(rec["n"])
    w = n + 2
    colour = rec["color"][: w * w].reshape(w, w)[1:-1, 1:-1].reshape(-1)
    clean = without_stones(rec, dead)[0]
    if not territory:
        return float(area_balance(clean)) - komi - float(handicap_compensation(rec))
    bt, wt = _territories(clean)
    caps = rec["captures"]
    dead_black = int(np.count_nonzero(dead & (colour == BLACK)))
    dead_white = int(np.count_nonzero(dead & (colour == WHITE)))
    return float(bt + int(caps[BLACK]) + dead_white - wt - int(caps[WHITE]) - dead_black) - komi


def ownership(rec) -> np.ndarray:
    """``[N*N]`` float32 in {-1, 0, 1}: +1 black owns the point, -1 white."""
    n = int(rec["n"])
    owner = np.empty(n * n, dtype=np.int8)
    area_map(rec, owner)
    out = np.zeros(n * n, dtype=np.float32)
    out[owner == BLACK] = 1.0
    out[owner == WHITE] = -1.0
    return out


def result_string(score: float) -> str:
    """``B+3.5``, ``W+0.5`` or ``0`` (jigo)."""
    if score > 0:
        return f"B+{_num(score)}"
    if score < 0:
        return f"W+{_num(-score)}"
    return "0"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"
