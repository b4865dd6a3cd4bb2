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
from __future__ import annotations

import numpy as np
from numba import njit

from ..go.board import BLACK, BOARD_DTYPE, EMPTY, MAX_P, NO_KO, WHITE, ZOBRIST, copy_position, is_simple_legal, play_position

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
    candidates are added to the point set ``seen`` (``_note``)."""
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
        _note(seen, sel[i])
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
    _note(seen, m1)
    _note(seen, m2)
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


# --------------------------------------------------------------------------
# whole boards, and the cache a search keeps for its root position

FP_WORDS = (MAX_P + 63) // 64  # a set of board points as bits
MAX_ENTRIES = MAX_P // 2 + 1  # strings a board can hold
VITAL_MAX = 2  # vital moves of one string: its capture, or its two ataris
MEMO_SETS = 64  # the memo of read-outs made at other positions: sets x ways, by string point
MEMO_WAYS = 4
MEMO = MEMO_SETS * MEMO_WAYS
_KO_SALT = np.uint64(0x9E3779B97F4A7C15)
_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)
_CTZ = np.array([0, 1, 48, 2, 57, 49, 28, 3, 61, 58, 50, 42, 38, 29, 17, 4, 62, 55, 59, 36, 53, 51, 43, 22,
                 45, 39, 33, 30, 24, 18, 12, 5, 63, 47, 56, 27, 60, 41, 37, 16, 54, 35, 52, 21, 44, 32, 23,
                 11, 46, 26, 40, 15, 34, 20, 31, 10, 25, 14, 19, 9, 13, 8, 7, 6], np.int64)

LADDER_CACHE_DTYPE = np.dtype(
    [
        ("ready", np.int32),  # 1: the entries belong to the position in color / ko
        ("n", np.int32),
        ("ko", np.int32),
        ("entries", np.int32),
        ("color", np.int8, (MAX_P,)),
        ("entry", np.int16, (MAX_P,)),  # per point: the entry of the string first met there, -1 none
        ("fp", np.uint64, (MAX_ENTRIES, FP_WORDS)),  # each entry's footprint
        ("nv", np.int8, (MAX_ENTRIES,)),  # its vital moves (0: not a ladder)
        ("vital", np.int16, (MAX_ENTRIES, VITAL_MAX)),
        ("memo_n", np.int32),  # board size of the memo's entries (0: empty)
        ("m_p", np.int16, (MEMO,)),  # the string's first point (0: a free slot)
        ("m_key", np.uint64, (MEMO,)),  # hash of the stones on its footprint (and the ko point in it)
        ("m_fp", np.uint64, (MEMO, FP_WORDS)),
        ("m_nv", np.int8, (MEMO,)),
        ("m_vital", np.int16, (MEMO, VITAL_MAX)),
        ("m_next", np.int8, (MEMO_SETS,)),  # the way a set replaces next
        ("reused", np.int64),  # strings taken from the entries at other positions (statistics)
        ("remembered", np.int64),  # strings taken from the memo
        ("read", np.int64),  # strings read out there
    ],
    align=True,
)


@njit(cache=True)
def _fp_key(rec, fp) -> np.uint64:
    """Zobrist hash of ``rec``'s stones on the points of ``fp``, and of the
    ko point when it is one of them (empty points add nothing)."""
    k = np.uint64(0)
    color = rec.color
    for i in range(fp.shape[0]):
        wd = fp[i]
        while wd:
            low = wd & (~wd + np.uint64(1))
            q = i * 64 + _CTZ[(low * _DEBRUIJN) >> np.uint64(58)]
            c = color[q]
            if c == BLACK or c == WHITE:
                k ^= ZOBRIST[c, q]
            wd ^= low
    ko = rec.ko
    if ko != 0 and fp[ko >> 6] & (np.uint64(1) << np.uint64(ko & 63)):
        k ^= np.uint64(ko) * _KO_SALT
    return k


@njit(cache=True, inline="always")
def _note(seen, p: int) -> None:
    """Add point ``p`` to the bit set ``seen`` (``FP_WORDS`` words)."""
    seen[p >> 6] |= np.uint64(1) << np.uint64(p & 63)


@njit(cache=True)
def _read_string(rec, S, SEL, NSEL, IDX, TURN, BI, nodes, p: int, c: int, libs: int, w: int, vital,
                 seen) -> int:
    """Read out the string of colour ``c`` at ``p`` (``libs`` 1 or 2) on
    ``S[0]`` (a copy of ``rec``); its vital moves go to ``vital``, their
    number is returned (0: no ladder). Every point a read-out looks at is a
    candidate noted in ``seen``, or next to one, or in a string next to one
    (``_footprint`` makes a set of it)."""
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
            _note(seen, a)
            if _legal(S[0], a, 3 - c):
                if _read(S, SEL, NSEL, IDX, TURN, BI, c, p, w, a, nodes, seen) == _HUNTER:
                    vital[nv] = a
                    nv += 1
    return nv


@njit(cache=True, inline="always")
def _set_near(fp, p: int, w: int) -> None:
    """Points within distance 2 of ``p`` into the bit set ``fp``."""
    m = w * w
    p = np.int64(p)
    w = np.int64(w)
    for q in (p, p - 1, p + 1, p - w, p + w, p - 2, p + 2, p - 2 * w, p + 2 * w,
              p - w - 1, p - w + 1, p + w - 1, p + w + 1):
        if 0 <= q < m:
            fp[q >> 6] |= np.uint64(1) << np.uint64(q & 63)


@njit(cache=True)
def _footprint(rec, p: int, c: int, seen, fp, mark) -> None:
    """The points whose stones decide the read-out of the string at ``p``
    (colour ``c``) on ``rec``, as the bit set ``fp``. A read-out plays and
    tests moves only at its candidate points (``seen``); the board
    operations behind them (legality, liberty bounds, a move with its
    captures and joins) look at the points within distance 2 of the move
    and at the strings next to it, which may join or be captured, so the
    points within distance 2 of their stones too; and the prey, once joined
    to such a string of its colour, counts the liberties of the strings
    next to it, which depend on their stones and the points next to them.
    So ``fp`` holds the points within distance 2 of each candidate, of each
    stone of the string itself and of the strings on or next to a
    candidate, and the stones and their neighbours of the strings next to
    those of colour ``c``. Two positions with the same stones on ``fp``,
    and the same ko point or one outside ``fp``, read the same (an
    untouched string also keeps its stone ring, whose order the read-out
    follows). ``mark`` (``[MAX_P]`` bool, all false) is scratch, left all
    false."""
    w = np.int64(rec.w)
    for i in range(fp.shape[0]):
        fp[i] = 0
    color = rec.color
    parent = rec.parent
    heads = np.empty(MAX_ENTRIES + 1, np.int32)
    nh = 0
    heads[0] = parent[p]
    mark[parent[p]] = True
    nh = 1
    for x in range(w * w):
        if not seen[x >> 6] & (np.uint64(1) << np.uint64(x & 63)):
            continue
        _set_near(fp, x, w)
        for q in (x, x - 1, x + 1, x - w, x + w):
            cq = color[q]
            if cq == BLACK or cq == WHITE:
                h = parent[q]
                if not mark[h]:
                    mark[h] = True
                    heads[nh] = h
                    nh += 1
    base = nh
    for j in range(base):  # the strings next to the prey's colour among them
        h = heads[j]
        if color[h] != c:
            continue
        s = np.int64(h)
        while True:
            for q in (s - 1, s + 1, s - w, s + w):
                cq = color[q]
                if (cq == BLACK or cq == WHITE) and not mark[parent[q]]:
                    mark[parent[q]] = True
                    heads[nh] = parent[q]
                    nh += 1
            s = rec.nxt[s]
            if s == h:
                break
    for j in range(nh):
        h = heads[j]
        mark[h] = False
        s = np.int64(h)
        while True:
            if j < base:
                _set_near(fp, s, w)
            else:  # next to the prey's side only: the stones and their neighbours
                for q in (s, s - 1, s + 1, s - w, s + w):
                    fp[q >> 6] |= np.uint64(1) << np.uint64(q & 63)
            s = rec.nxt[s]
            if s == h:
                break


@njit(cache=True)
def _ladder_pass(rec, out, cache, mode: int) -> None:
    """``ladder_map``'s loop. ``mode`` 0: read every string; 1: also keep
    each string's result and footprint in ``cache`` for this position; 2:
    take a string's result from ``cache`` (made with mode 1 for another
    position) when none of its footprint's points nor the ko point changed,
    else from the cache's memo when the stones on a remembered footprint
    for the string's point hash the same, else read it (and remember it)."""
    n = rec.n
    w = rec.w
    for i in range(n * n):
        out[i] = NOT_LADDER
    D = MAX_DEPTH + 1
    S = np.empty(0, BOARD_DTYPE)
    SEL = np.empty((0, SEL_WIDTH), np.int32)
    NSEL = np.zeros(D, np.int32)
    IDX = np.zeros(D, np.int32)
    TURN = np.zeros(D, np.bool_)
    BI = np.zeros(D, np.int32)
    nodes = np.zeros(1, np.int64)
    verdict = np.zeros(MAX_P, np.int8)  # per string head: 0 unknown, 1 ladder, 2 not
    vital = np.empty((MAX_P, VITAL_MAX), np.int32)  # per string head
    nvital = np.zeros(MAX_P, np.int8)
    seen = np.zeros(FP_WORDS, np.uint64)
    changed = np.zeros(FP_WORDS, np.uint64)
    mark = np.zeros(0, np.bool_)
    if mode == 1:
        cache.ready = 0
        cache.entries = 0
        mark = np.zeros(MAX_P, np.bool_)
        for p in range(w * w):
            cache.entry[p] = -1
    ko_moved = False
    use_root = False
    if mode == 2:
        mark = np.zeros(MAX_P, np.bool_)
        if cache.memo_n != n:
            for e in range(MEMO):
                cache.m_p[e] = 0
            cache.memo_n = n
        if cache.ready == 1 and cache.n == n:
            use_root = True
            for p in range(w * w):
                if rec.color[p] != cache.color[p]:
                    changed[p >> 6] |= np.uint64(1) << np.uint64(p & 63)
            ko_moved = rec.ko != cache.ko
    loaded = False
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
                nv = -1
                if use_root:
                    e = cache.entry[p]
                    if e >= 0:
                        fp = cache.fp[e]
                        ok = True
                        for i in range(FP_WORDS):
                            if fp[i] & changed[i]:
                                ok = False
                                break
                        if ok and ko_moved:
                            for k in (rec.ko, cache.ko):
                                if k != 0 and fp[k >> 6] & (np.uint64(1) << np.uint64(k & 63)):
                                    ok = False
                        if ok:
                            nv = cache.nv[e]
                            for i in range(nv):
                                vital[g, i] = cache.vital[e, i]
                            cache.reused += 1
                if nv < 0 and mode == 2:
                    base = (p % MEMO_SETS) * MEMO_WAYS
                    for e in range(base, base + MEMO_WAYS):
                        if cache.m_p[e] == p and _fp_key(rec, cache.m_fp[e]) == cache.m_key[e]:
                            nv = cache.m_nv[e]
                            for i in range(nv):
                                vital[g, i] = cache.m_vital[e, i]
                            cache.remembered += 1
                            break
                if nv < 0:
                    if not loaded:
                        S = np.empty(D, BOARD_DTYPE)
                        SEL = np.empty((D, SEL_WIDTH), np.int32)
                        copy_position(S[0], rec)
                        loaded = True
                    for i in range(FP_WORDS):
                        seen[i] = 0
                    nv = _read_string(rec, S, SEL, NSEL, IDX, TURN, BI, nodes, p, c, libs, w, vital[g], seen)
                    if mode == 2:
                        cache.read += 1
                        st = p % MEMO_SETS
                        e = st * MEMO_WAYS + cache.m_next[st]
                        cache.m_next[st] = (cache.m_next[st] + 1) % MEMO_WAYS
                        _footprint(rec, p, c, seen, cache.m_fp[e], mark)
                        cache.m_p[e] = p
                        cache.m_key[e] = _fp_key(rec, cache.m_fp[e])
                        cache.m_nv[e] = nv
                        for i in range(nv):
                            cache.m_vital[e, i] = vital[g, i]
                    elif mode == 1:
                        e = cache.entries
                        cache.entries = e + 1
                        cache.entry[p] = e
                        _footprint(rec, p, c, seen, cache.fp[e], mark)
                        cache.nv[e] = nv
                        for i in range(nv):
                            cache.vital[e, i] = vital[g, i]
                nvital[g] = nv
                if nv == 0:
                    verdict[g] = 2
                    continue
                verdict[g] = 1
            out[y * n + x] = LADDER_DEATH if libs == 1 else LADDER_ESCAPABLE
            if not first:  # the vital moves are written once, at the string's first stone
                continue
            for i in range(nvital[g]):
                a = vital[g, i]
                out[(a // w - 1) * n + a % w - 1] = LADDER_TAKE if libs == 1 else LADDER_ATARI
    if mode == 1:
        for p in range(w * w):
            cache.color[p] = rec.color[p]
        cache.n = n
        cache.ko = rec.ko
        cache.ready = 1


@njit(cache=True)
def ladder_map(rec, out) -> None:
    """Fill ``out[N*N]`` (int8) with Sayuri's ladder codes (``NOT_LADDER`` ...
    ``LADDER_TAKE``) for the board record ``rec``."""
    cache = np.empty(1, LADDER_CACHE_DTYPE)  # not read in this mode
    _ladder_pass(rec, out, cache[0], 0)


@njit(cache=True)
def ladder_map_keep(rec, out, cache) -> None:
    """``ladder_map``, keeping every read-out with its footprint in
    ``cache`` (a ``LADDER_CACHE_DTYPE`` record) for ``ladder_map_reuse`` at
    positions that follow from this one."""
    _ladder_pass(rec, out, cache, 1)


@njit(cache=True)
def ladder_map_reuse(rec, out, cache) -> None:
    """``ladder_map`` for ``rec``, taking the read-outs of ``cache`` (kept by
    ``ladder_map_keep`` at another position) for the strings whose
    footprint holds the same stones (and the ko point did not move into
    it), or from its memo of read-outs made by earlier calls, kept with the
    hash of the stones on their footprint (a 64-bit Zobrist hash, as
    superko uses); the others are read and remembered. The same map as
    ``ladder_map``, cheaper when positions differ by a few moves far from
    most strings or share strings and their surroundings (siblings in a
    search tree)."""
    _ladder_pass(rec, out, cache, 2)


def new_ladder_cache() -> np.ndarray:
    """An empty cache (an array of one ``LADDER_CACHE_DTYPE`` record)."""
    return np.zeros(1, LADDER_CACHE_DTYPE)
