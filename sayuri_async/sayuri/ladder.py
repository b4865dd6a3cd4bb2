"""Sayuri's ladder reader, compiled: the four ladder planes of ``sayuri-v3``.

Vocabulary
----------
prey        a string with one or two liberties whose capture by a ladder we
            read out (stones of either colour, whoever is to move).
hunter      the other colour, chasing the prey with ataris.
ladder      a prey string that the hunter captures in the read-out: with one
            liberty it is *dead* (``LADDER_DEATH``), with two it is
            *escapable* (``LADDER_ESCAPABLE``: the hunter still has to start).
vital move  for a dead ladder the capturing point (``LADDER_TAKE``), for an
            escapable one each atari that starts a working ladder
            (``LADDER_ATARI``).
scratch     the search plays moves on copies of a small board kept in
            ``S[slot, row, point]`` (int16): rows ``R_COLOR``, ``R_PARENT``,
            ``R_NEXT``, ``R_LIBS``, ``R_SIZE`` as in ``go/board.py``, and the
            ko point in ``K[slot]``. A ply copies its parent's board unless
            the parent had a single candidate move; nothing is undone.

The search follows Sayuri's ``Board::IsLadder`` (``src/game/board.cc``) rule
for rule: the prey's candidate moves are its liberty and captures of
adjacent strings in atari; it is safe with a lower bound of three liberties
or once the hunter leaves a ko point; the hunter's candidates are the prey's
two liberties, trimmed when a liberty has three or more empty neighbours; at
most ``MAX_LADDER_NODES`` nodes per string (shared by both ataris of a
two-liberty string), after which the prey is taken to escape. Two
differences of detail can only matter when that node limit is hit: moves
are tried in our string order, which need not be Sayuri's, and a read-out
deeper than ``MAX_DEPTH`` plies also counts as an escape.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..go.board import BLACK, BORDER, EMPTY, MAX_P, NO_KO, WHITE

MAX_LADDER_NODES = 2000
MAX_DEPTH = 160
SEL_WIDTH = 64  # candidate moves kept per ply (more are dropped)
R_COLOR, R_PARENT, R_NEXT, R_LIBS, R_SIZE = 0, 1, 2, 3, 4

NOT_LADDER = 0
LADDER_DEATH = 1
LADDER_ESCAPABLE = 2
LADDER_ATARI = 3
LADDER_TAKE = 4

_PREY = 1  # kGoodForPrey
_HUNTER = 2  # kGoodForHunter
_NEITHER = 0
_NULL = 0  # no move (point 0 is a border point)


@njit(cache=True, inline="always")
def _dir(w: int, k: int) -> int:
    # Sayuri's order: down (-W), left, right, up (+W)
    if k == 0:
        return -w
    if k == 1:
        return -1
    if k == 2:
        return 1
    return w


@njit(cache=True)
def _load(rec, S, K) -> None:
    """Copy the record's stones and strings into scratch level 0."""
    m = rec.w * rec.w
    for p in range(m):
        S[0, R_COLOR, p] = rec.color[p]
        S[0, R_PARENT, p] = rec.parent[p]
        S[0, R_NEXT, p] = rec.nxt[p]
        S[0, R_LIBS, p] = rec.libs[p]
        S[0, R_SIZE, p] = rec.size[p]
    K[0] = rec.ko


@njit(cache=True)
def _copy(S, K, src: int, dst: int, m: int) -> None:
    a = S[src]
    b = S[dst]
    for r in range(5):
        ar = a[r]
        br = b[r]
        for p in range(m):
            br[p] = ar[p]
    K[dst] = K[src]


@njit(cache=True)
def _empty_nbrs(b, p: int, w: int) -> int:
    c = 0
    for k in range(4):
        if b[R_COLOR, p + _dir(w, k)] == EMPTY:
            c += 1
    return c


@njit(cache=True)
def _legal(b, ko: int, p: int, c: int, w: int) -> bool:
    """Simple ko and no suicide, for colour ``c`` (not necessarily to move)."""
    if b[R_COLOR, p] != EMPTY or p == ko:
        return False
    o = 3 - c
    for k in range(4):
        q = p + _dir(w, k)
        cq = b[R_COLOR, q]
        if cq == EMPTY:
            return True
        if cq == c and b[R_LIBS, b[R_PARENT, q]] > 1:
            return True
        if cq == o and b[R_LIBS, b[R_PARENT, q]] <= 1:
            return True
    return False


@njit(cache=True)
def _remove(b, g: int, w: int) -> int:
    o = b[R_COLOR, g]
    c = 3 - o
    n = 0
    s = g
    while True:
        b[R_COLOR, s] = EMPTY
        n += 1
        h0 = -1
        h1 = -1
        h2 = -1
        for k in range(4):
            q = s + _dir(w, k)
            if b[R_COLOR, q] == c:
                h = b[R_PARENT, q]
                if h != h0 and h != h1 and h != h2:
                    b[R_LIBS, h] += 1
                    if h0 < 0:
                        h0 = h
                    elif h1 < 0:
                        h1 = h
                    else:
                        h2 = h
        s = b[R_NEXT, s]
        if s == g:
            break
    return n


@njit(cache=True)
def _merge(b, big: int, small: int, w: int) -> None:
    s = small
    while True:
        for k in range(4):
            e = s + _dir(w, k)
            if b[R_COLOR, e] == EMPTY:
                shared = False
                for k2 in range(4):
                    q = e + _dir(w, k2)
                    cq = b[R_COLOR, q]
                    if cq != EMPTY and cq != BORDER and b[R_PARENT, q] == big:
                        shared = True
                        break
                if not shared:
                    b[R_LIBS, big] += 1
        b[R_PARENT, s] = big
        s = b[R_NEXT, s]
        if s == small:
            break
    t = b[R_NEXT, big]
    b[R_NEXT, big] = b[R_NEXT, small]
    b[R_NEXT, small] = t
    b[R_SIZE, big] += b[R_SIZE, small]


@njit(cache=True)
def _play(b, K, d: int, p: int, c: int, w: int) -> None:
    """Colour ``c`` plays legal point ``p`` on scratch level ``d``."""
    o = 3 - c
    b[R_COLOR, p] = c
    b[R_PARENT, p] = p
    b[R_NEXT, p] = p
    b[R_SIZE, p] = 1
    libs = 0
    h0 = -1
    h1 = -1
    h2 = -1
    for k in range(4):
        q = p + _dir(w, k)
        cq = b[R_COLOR, q]
        if cq == EMPTY:
            libs += 1
        elif cq == c or cq == o:
            g = b[R_PARENT, q]
            if g != h0 and g != h1 and g != h2:
                b[R_LIBS, g] -= 1
                if h0 < 0:
                    h0 = g
                elif h1 < 0:
                    h1 = g
                else:
                    h2 = g
    b[R_LIBS, p] = libs
    captured = 0
    cap = NO_KO
    for k in range(4):
        q = p + _dir(w, k)
        if b[R_COLOR, q] == o and b[R_LIBS, b[R_PARENT, q]] == 0:
            captured += _remove(b, b[R_PARENT, q], w)
            cap = q
    for k in range(4):
        q = p + _dir(w, k)
        if b[R_COLOR, q] == c:
            g = b[R_PARENT, q]
            mine = b[R_PARENT, p]
            if g != mine:
                if b[R_SIZE, g] >= b[R_SIZE, mine]:
                    _merge(b, g, mine, w)
                else:
                    _merge(b, mine, g, w)
    head = b[R_PARENT, p]
    if captured == 1 and b[R_SIZE, head] == 1 and b[R_LIBS, head] == 1:
        K[d] = cap
    else:
        K[d] = NO_KO


@njit(cache=True)
def _string_libs(b, v: int, w: int, out, n: int) -> int:
    """Append the liberties of the string at ``v`` to ``out[n:]`` (no
    duplicates within ``out[:n]``); returns the new length."""
    s = v
    while True:
        for k in range(4):
            q = s + _dir(w, k)
            if b[R_COLOR, q] == EMPTY:
                seen = False
                for i in range(n):
                    if out[i] == q:
                        seen = True
                        break
                if not seen and n < out.shape[0]:
                    out[n] = q
                    n += 1
        s = b[R_NEXT, s]
        if s == v:
            break
    return n


@njit(cache=True)
def _ladder_libs(b, v: int, c: int, w: int) -> tuple[int, int]:
    """Sayuri's GetLadderLiberties: (lower, upper) bound of the liberties
    colour ``c`` gets by playing ``v`` (neighbours counted per direction)."""
    stone_libs = _empty_nbrs(b, v, w)
    o = 3 - c
    caps = 0
    cap_libs = 0
    conn = 0
    best = stone_libs
    for k in range(4):
        q = v + _dir(w, k)
        cq = b[R_COLOR, q]
        if cq == c:
            a = b[R_LIBS, b[R_PARENT, q]] - 1
            conn += a
            if a > best:
                best = a
        elif cq == o:
            g = b[R_PARENT, q]
            if b[R_LIBS, g] == 1:
                caps += 1
                cap_libs += b[R_SIZE, g]
    return caps + best, stone_libs + cap_libs + conn


@njit(cache=True)
def _prey_selections(S, K, d: int, prey: int, v: int, think_ko: bool, w: int, sel) -> tuple[int, int]:
    """(verdict, number of candidate moves written to ``sel``)."""
    b = S[d]
    if b[R_LIBS, b[R_PARENT, v]] >= 2 or (K[d] != NO_KO and think_ko):
        return _PREY, 0
    n = _string_libs(b, v, w, sel, 0)
    not_cap = sel[0]
    hunter = 3 - prey
    s = v
    while True:  # liberties of adjacent hunter strings in atari: the captures
        for k in range(4):
            q = s + _dir(w, k)
            if b[R_COLOR, q] == hunter and b[R_LIBS, b[R_PARENT, q]] == 1:
                n = _string_libs(b, q, w, sel, n)
        s = b[R_NEXT, s]
        if s == v:
            break
    m = 0
    has_not_cap = False
    for i in range(n):
        if _legal(b, K[d], sel[i], prey, w):
            sel[m] = sel[i]
            if sel[i] == not_cap:
                has_not_cap = True
            m += 1
    if m == 0:
        return _HUNTER, 0
    if has_not_cap:
        lo, hi = _ladder_libs(b, not_cap, prey, w)
        if lo >= 3:
            return _PREY, 0
        if m == 1 and hi == 1:
            return _HUNTER, 0
    return _NEITHER, m


@njit(cache=True)
def _hunter_selections(S, K, d: int, prey: int, v: int, w: int, sel) -> tuple[int, int]:
    b = S[d]
    libs = b[R_LIBS, b[R_PARENT, v]]
    if libs >= 3:
        return _PREY, 0
    if libs <= 1:
        return _HUNTER, 0
    _string_libs(b, v, w, sel, 0)
    m1 = sel[0]
    m2 = sel[1]
    adjacent = False
    for k in range(4):
        if m1 + _dir(w, k) == m2:
            adjacent = True
    if adjacent:
        return _NEITHER, 2
    hunter = 3 - prey
    l1 = _empty_nbrs(b, m1, w)
    l2 = _empty_nbrs(b, m2, w)
    n = 0
    if l1 >= 3 and l2 >= 3:
        return _PREY, 0
    if l1 >= 3:
        if _legal(b, K[d], m1, hunter, w):
            sel[n] = m1
            n += 1
    elif l2 >= 3:
        if _legal(b, K[d], m2, hunter, w):
            sel[n] = m2
            n += 1
    else:
        ok1 = _legal(b, K[d], m1, hunter, w)
        ok2 = _legal(b, K[d], m2, hunter, w)
        if ok1:
            sel[n] = m1
            n += 1
        if ok2:
            sel[n] = m2
            n += 1
    if n == 0:
        return _PREY, 0
    return _NEITHER, n


@njit(cache=True)
def _enter(S, K, SEL, NSEL, IDX, TURN, BI, d: int, prey_turn: bool, move: int, prey: int, v: int, w: int,
           nodes) -> int:
    """Start Sayuri's PreyMove (``prey_turn``; ``move`` is the hunter's move,
    or none) or HunterMove (``move`` is the prey's) from the frame at level
    ``d``. Returns the verdict, or _NEITHER with a frame pushed at level
    ``d + 1``. The new frame plays on a copy of its parent's board, or on
    the parent's board itself when that frame has a single candidate (it
    will not look at its board again; Sayuri does the same)."""
    nodes[0] += 1
    if nodes[0] >= MAX_LADDER_NODES or d + 1 >= S.shape[0]:
        return _PREY
    e = d + 1
    src = BI[d]
    if d > 0 and NSEL[d] == 1:
        b = src
    else:
        b = e
        _copy(S, K, src, b, w * w)
    BI[e] = b
    if prey_turn:
        if move != _NULL:
            _play(S[b], K, b, move, 3 - prey, w)
        res, n = _prey_selections(S, K, b, prey, v, move != _NULL, w, SEL[e])
    else:
        _play(S[b], K, b, move, prey, w)
        res, n = _hunter_selections(S, K, b, prey, v, w, SEL[e])
    if res != _NEITHER:
        return res
    NSEL[e] = n
    IDX[e] = 0
    TURN[e] = prey_turn
    return _NEITHER


@njit(cache=True)
def _read(S, K, SEL, NSEL, IDX, TURN, BI, prey: int, v: int, w: int, first: int, nodes) -> int:
    """Read the ladder of the string at ``v`` from level 0, the prey to play
    after the hunter's ``first`` move (or with none): _PREY or _HUNTER. An
    explicit stack of frames (level ``e`` holds its board, candidate moves,
    next candidate and whose turn), no recursion."""
    BI[0] = 0
    r = _enter(S, K, SEL, NSEL, IDX, TURN, BI, 0, True, first, prey, v, w, nodes)
    if r != _NEITHER:
        return r
    top = 1
    res = _NEITHER
    while True:
        e = top
        if res != _NEITHER and ((TURN[e] and res == _PREY) or (not TURN[e] and res == _HUNTER)):
            if e == 1:
                return res
            top -= 1
            continue
        if IDX[e] >= NSEL[e]:
            res = _HUNTER if TURN[e] else _PREY
            if e == 1:
                return res
            top -= 1
            continue
        mv = SEL[e, IDX[e]]
        IDX[e] += 1
        r = _enter(S, K, SEL, NSEL, IDX, TURN, BI, e, not TURN[e], mv, prey, v, w, nodes)
        if r == _NEITHER:
            top = e + 1
        res = r


@njit(cache=True)
def ladder_map(rec, out) -> None:
    """Fill ``out[N*N]`` (int8) with Sayuri's ladder codes (``NOT_LADDER`` ...
    ``LADDER_TAKE``) for the board record ``rec``."""
    n = rec.n
    w = rec.w
    for i in range(n * n):
        out[i] = NOT_LADDER
    D = MAX_DEPTH + 1
    S = np.empty((0, 5, MAX_P), np.int16)
    SEL = np.empty((0, SEL_WIDTH), np.int32)
    NSEL = np.zeros(D, np.int32)
    IDX = np.zeros(D, np.int32)
    TURN = np.zeros(D, np.bool_)
    BI = np.zeros(D, np.int32)
    K = np.empty(D, np.int32)
    nodes = np.zeros(1, np.int64)
    libbuf = np.empty(8, np.int32)
    verdict = np.zeros(MAX_P, np.int8)  # per string head: 0 unknown, 1 ladder, 2 not
    vital = np.empty(8, np.int32)
    loaded = False
    for y in range(n):
        for x in range(n):
            p = (y + 1) * w + x + 1
            c = rec.color[p]
            if c != BLACK and c != WHITE:
                continue
            g = rec.parent[p]
            libs = rec.libs[g]
            if verdict[g] == 2:
                continue
            nv = 0
            if verdict[g] == 0:
                if libs >= 3:
                    verdict[g] = 2
                    continue
                if not loaded:
                    S = np.empty((D, 5, MAX_P), np.int16)
                    SEL = np.empty((D, SEL_WIDTH), np.int32)
                    _load(rec, S, K)
                    loaded = True
                nodes[0] = 0
                if libs == 1:
                    if _read(S, K, SEL, NSEL, IDX, TURN, BI, c, p, w, _NULL, nodes) == _HUNTER:
                        _string_libs(S[0], p, w, libbuf, 0)
                        vital[nv] = libbuf[0]
                        nv += 1
                else:
                    k = _string_libs(S[0], p, w, libbuf, 0)
                    for i in range(k):
                        a = libbuf[i]
                        if _legal(S[0], K[0], a, 3 - c, w):
                            if _read(S, K, SEL, NSEL, IDX, TURN, BI, c, p, w, a, nodes) == _HUNTER:
                                vital[nv] = a
                                nv += 1
                if nv == 0:
                    verdict[g] = 2
                    continue
                verdict[g] = 1
            out[y * n + x] = LADDER_DEATH if libs == 1 else LADDER_ESCAPABLE
            for i in range(nv):
                a = vital[i]
                out[(a // w - 1) * n + a % w - 1] = LADDER_TAKE if libs == 1 else LADDER_ATARI
