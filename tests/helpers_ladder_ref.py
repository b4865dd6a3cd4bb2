"""The oracle ladder reader: ``sayuri_async/encoders/ladder_reader.py`` as it
was at commit 34b084d (one board copy per search node, no undo), copied
verbatim below its imports, and ``ladder_map_ref``, the whole-board map over
it with no cache (``ladder.ladder_map``'s mode 0).

Vocabulary (the reader's own docstring, as it was, follows in ``READER_DOC``)
----------
prey, hunter, vital move   as in ``ladder_reader.py``.
oracle     what the sayuri-v3 planes are checked against
           (``helpers_sayuri_ref.py``); the library's reader plays and undoes
           moves on one scratch board and must give the same maps.
"""
from __future__ import annotations

READER_DOC = """Sayuri's ladder reader, compiled: the read-out of one string.

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
scratch     the search plays moves on a stack of board records ``S[slot]``
            (``BOARD_DTYPE``), with ``go/board.py``'s own rules: ``play_position`` and
            ``is_simple_legal`` for either colour (the side to move is set
            first), ``copy_position`` to copy a board (its history ring is
            never read here, so it is not copied). A ply copies its parent's
            board unless the parent had a single candidate move; nothing is
            undone.

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

import numpy as np
from numba import njit

from sayuri_async.go.board import (BLACK, BOARD_DTYPE, EMPTY, MAX_P, NO_KO, WHITE, copy_position, is_simple_legal,
                                   play_position)
from sayuri_async.encoders.pointset import SET_WORDS, add

MAX_LADDER_NODES = 2000
MAX_DEPTH = 160
SEL_WIDTH = 64  # candidate moves kept per ply (more are dropped)

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
def _empty_nbrs(b, p: int, w: int) -> int:
    c = 0
    for k in range(4):
        if b.color[p + _dir(w, k)] == EMPTY:
            c += 1
    return c


@njit(cache=True, inline="always")
def _legal(b, p: int, c: int) -> bool:
    """Simple ko and no suicide, for colour ``c`` (not necessarily to move)."""
    b.to_move = c
    return is_simple_legal(b, p)


@njit(cache=True, inline="always")
def _play(b, p: int, c: int) -> None:
    """Colour ``c`` plays legal point ``p`` on scratch board ``b``."""
    b.to_move = c
    play_position(b, p)


@njit(cache=True)
def _string_libs(b, v: int, w: int, out, n: int) -> int:
    """Append the liberties of the string at ``v`` to ``out[n:]`` (no
    duplicates within ``out[:n]``), in the order of a walk along its stone
    ring; returns the new length. The reader only asks for strings of one
    or two liberties, so the walk stops once it has met as many distinct
    ones as the string has (the same list, sooner; a string of more
    liberties is walked whole)."""
    want = b.libs[b.parent[v]]
    met0 = -1
    met1 = -1
    found = 0
    s = v
    while True:
        for k in range(4):
            q = s + _dir(w, k)
            if b.color[q] == EMPTY:
                if q != met0 and q != met1:
                    if found == 0:
                        met0 = q
                    elif found == 1:
                        met1 = q
                    found += 1
                seen = False
                for i in range(n):
                    if out[i] == q:
                        seen = True
                        break
                if not seen and n < out.shape[0]:
                    out[n] = q
                    n += 1
        if want <= 2 and found >= want:
            break
        s = b.nxt[s]
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
        cq = b.color[q]
        if cq == c:
            a = b.libs[b.parent[q]] - 1
            conn += a
            if a > best:
                best = a
        elif cq == o:
            g = b.parent[q]
            if b.libs[g] == 1:
                caps += 1
                cap_libs += b.size[g]
    return caps + best, stone_libs + cap_libs + conn


@njit(cache=True)
def _prey_selections(S, d: int, prey: int, v: int, think_ko: bool, w: int, sel, seen) -> tuple[int, int]:
    """(verdict, number of candidate moves written to ``sel``); the
    candidates are added to the point set ``seen`` (``pointset.add``)."""
    b = S[d]
    if b.libs[b.parent[v]] >= 2 or (b.ko != NO_KO and think_ko):
        return _PREY, 0
    n = _string_libs(b, v, w, sel, 0)
    not_cap = sel[0]
    hunter = 3 - prey
    s = v
    while True:  # liberties of adjacent hunter strings in atari: the captures
        for k in range(4):
            q = s + _dir(w, k)
            if b.color[q] == hunter and b.libs[b.parent[q]] == 1:
                n = _string_libs(b, q, w, sel, n)
        s = b.nxt[s]
        if s == v:
            break
    for i in range(n):
        add(seen, sel[i])
    m = 0
    has_not_cap = False
    for i in range(n):
        if _legal(b, sel[i], prey):
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
def _hunter_selections(S, d: int, prey: int, v: int, w: int, sel, seen) -> tuple[int, int]:
    b = S[d]
    libs = b.libs[b.parent[v]]
    if libs >= 3:
        return _PREY, 0
    if libs <= 1:
        return _HUNTER, 0
    _string_libs(b, v, w, sel, 0)
    m1 = sel[0]
    m2 = sel[1]
    add(seen, m1)
    add(seen, m2)
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
        if _legal(b, m1, hunter):
            sel[n] = m1
            n += 1
    elif l2 >= 3:
        if _legal(b, m2, hunter):
            sel[n] = m2
            n += 1
    else:
        ok1 = _legal(b, m1, hunter)
        ok2 = _legal(b, m2, hunter)
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
def _enter(S, SEL, NSEL, IDX, TURN, BI, d: int, prey_turn: bool, move: int, prey: int, v: int, w: int,
           nodes, seen) -> int:
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
        copy_position(S[b], S[src])
    BI[e] = b
    if prey_turn:
        if move != _NULL:
            _play(S[b], move, 3 - prey)
        res, n = _prey_selections(S, b, prey, v, move != _NULL, w, SEL[e], seen)
    else:
        _play(S[b], move, prey)
        res, n = _hunter_selections(S, b, prey, v, w, SEL[e], seen)
    if res != _NEITHER:
        return res
    NSEL[e] = n
    IDX[e] = 0
    TURN[e] = prey_turn
    return _NEITHER


@njit(cache=True)
def _read(S, SEL, NSEL, IDX, TURN, BI, prey: int, v: int, w: int, first: int, nodes, seen) -> int:
    """Read the ladder of the string at ``v`` from level 0, the prey to play
    after the hunter's ``first`` move (or with none): _PREY or _HUNTER. An
    explicit stack of frames (level ``e`` holds its board, candidate moves,
    next candidate and whose turn), no recursion."""
    BI[0] = 0
    r = _enter(S, SEL, NSEL, IDX, TURN, BI, 0, True, first, prey, v, w, nodes, seen)
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
        r = _enter(S, SEL, NSEL, IDX, TURN, BI, e, not TURN[e], mv, prey, v, w, nodes, seen)
        if r == _NEITHER:
            top = e + 1
        res = r


@njit(cache=True)
def read_string(rec, S, SEL, NSEL, IDX, TURN, BI, nodes, p: int, c: int, libs: int, w: int, vital,
                 seen) -> int:
    """Read out the string of colour ``c`` at ``p`` (``libs`` 1 or 2) on
    ``S[0]`` (a copy of ``rec``); its vital moves go to ``vital``, their
    number is returned (0: no ladder). Every point a read-out looks at is a
    candidate noted in ``seen``, or next to one, or in a string next to one
    (``ladder_footprint.footprint`` makes a set of it)."""
    libbuf = np.empty(8, np.int32)
    nodes[0] = 0
    nv = 0
    if libs == 1:
        if _read(S, SEL, NSEL, IDX, TURN, BI, c, p, w, _NULL, nodes, seen) == _HUNTER:
            _string_libs(S[0], p, w, libbuf, 0)
            vital[nv] = libbuf[0]
            nv += 1
    else:
        k = _string_libs(S[0], p, w, libbuf, 0)
        for i in range(k):
            a = libbuf[i]
            add(seen, a)
            if _legal(S[0], a, 3 - c):
                if _read(S, SEL, NSEL, IDX, TURN, BI, c, p, w, a, nodes, seen) == _HUNTER:
                    vital[nv] = a
                    nv += 1
    return nv


VITAL_MAX = 2


@njit(cache=True)
def ladder_map_ref(rec, out) -> None:
    """Fill ``out[N*N]`` (int8) with the ladder codes of every string of one
    or two liberties on ``rec``, each read out by the copy above."""
    n = rec.n
    w = rec.w
    for i in range(n * n):
        out[i] = NOT_LADDER
    D = MAX_DEPTH + 1
    S = np.empty(D, BOARD_DTYPE)
    SEL = np.empty((D, SEL_WIDTH), np.int32)
    NSEL = np.zeros(D, np.int32)
    IDX = np.zeros(D, np.int32)
    TURN = np.zeros(D, np.bool_)
    BI = np.zeros(D, np.int32)
    nodes = np.zeros(1, np.int64)
    verdict = np.zeros(MAX_P, np.int8)  # per string head: 0 unknown, 1 ladder, 2 not
    vital = np.empty((MAX_P, VITAL_MAX), np.int32)
    nvital = np.zeros(MAX_P, np.int8)
    seen = np.zeros(SET_WORDS, np.uint64)
    copy_position(S[0], rec)
    for y in range(n):
        for x in range(n):
            p = (y + 1) * w + x + 1
            c = rec.color[p]
            if c != BLACK and c != WHITE:
                continue
            g = rec.parent[p]
            if verdict[g] == 2:
                continue
            libs = rec.libs[g]
            first = verdict[g] == 0
            if first:
                if libs >= 3:
                    verdict[g] = 2
                    continue
                nv = read_string(rec, S, SEL, NSEL, IDX, TURN, BI, nodes, p, c, libs, w, vital[g], seen)
                nvital[g] = nv
                if nv == 0:
                    verdict[g] = 2
                    continue
                verdict[g] = 1
            out[y * n + x] = LADDER_DEATH if libs == 1 else LADDER_ESCAPABLE
            if not first:
                continue
            for i in range(nvital[g]):
                a = vital[g, i]
                out[(a // w - 1) * n + a % w - 1] = LADDER_TAKE if libs == 1 else LADDER_ATARI
