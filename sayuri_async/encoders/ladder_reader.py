"""Sayuri's ladder reader, compiled: the read-out of one string.

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
scratch     the search plays and takes back moves on one board record
            ``S[0]`` (``BOARD_DTYPE``, a copy of the position), with
            ``go/board.py``'s own rules: ``is_simple_legal`` for either
            colour (the side to move is set first) and ``go/board_undo.py``'s
            ``play_undoable`` / ``undo_play``, one undo record per ply
            (the reader's ``undo[ply]``), undone as the search backs out of a ply; no board
            is copied (a copy per node was about a quarter of the reader's
            time). The history ring is never read or written here.
reader      the read-out's own state, one ``READER_DTYPE`` record (``ladder.py``'s cache holds it):
            per ply its candidate moves (``sel``, ``nsel``), the next one to
            try (``idx``), whose turn (``turn``), whether it played a move
            (``moved``) and its undo record (``undo``), at a hunter ply the
            prey's two liberties (``pair``: the prey's next ply knows its one
            liberty from them, without a walk of its stones), at a prey ply
            the hunter strings in atari next to the prey (``hit_*``: two plies
            down, where the moves between changed none of them, the prey's
            next ply takes its captures from there, without a walk of its
            stones, ``_hits_carried``); the point set of the
            candidates tried (``seen``) and the node count (``nodes``). One
            record, not an array each: numba counts references to every
            array argument on entry and exit of a call, about a fifth of a
            node's time when these were seven arrays; a record's fields are
            not counted.

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

from ..go.board import EMPTY, MAX_P, NO_KO, is_simple_legal
from ..go.board_undo import UNDO_LEN, UNDO_N_CAP as _UNDO_N_CAP, UNDO_P as _UNDO_P, play_undoable, undo_play
from .pointset import SET_WORDS, add

MAX_LADDER_NODES = 2000
MAX_DEPTH = 160
SEL_WIDTH = 64  # candidate moves kept per ply (more are dropped)
HITS_MAX = 8  # hunter strings in atari a prey ply remembers for the prey's next ply
PLIES = MAX_DEPTH + 1

READER_DTYPE = np.dtype(
    [
        ("sel", np.int32, (PLIES, SEL_WIDTH)),  # [ply, candidate]
        ("nsel", np.int32, (PLIES,)),
        ("idx", np.int32, (PLIES,)),
        ("turn", np.uint8, (PLIES,)),  # 1: the prey's turn at this ply (numba's records hold no bool arrays)
        ("moved", np.uint8, (PLIES,)),  # 1: the ply played a move
        ("prey_size", np.int32, (PLIES,)),  # at a prey ply: the prey's stones
        # at a prey ply: the hunter strings in atari next to the prey, in the order of a walk of its stones
        # (their first stone met): how many (-1: more than HITS_MAX), each one's head, size and liberty
        ("hit_n", np.int32, (PLIES,)),
        ("hit_head", np.int32, (PLIES, HITS_MAX)),
        ("hit_size", np.int32, (PLIES, HITS_MAX)),
        ("hit_lib", np.int32, (PLIES, HITS_MAX)),
        ("pair", np.int32, (PLIES, 2)),  # at a hunter ply (and level 0 of a two-liberty read): the prey's liberties
        ("undo", np.int64, (PLIES, UNDO_LEN)),  # [ply, go/board_undo.py slot]
        ("seen", np.uint64, (SET_WORDS,)),
        ("libbuf", np.int32, (1, 8)),
        ("hits", np.int32, (4 * MAX_P,)),  # a prey ply's hunter stones in atari next to the prey
        ("nodes", np.int64),
    ],
    align=True,
)

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
        if b.color[np.uint64(p + _dir(w, k))] == EMPTY:  # unsigned: no wrap-around arithmetic
            c += 1
    return c


@njit(cache=True, inline="always")
def _legal(b, p: int, c: int) -> bool:
    """Simple ko and no suicide, for colour ``c`` (not necessarily to move)."""
    b.to_move = c
    return is_simple_legal(b, p)


@njit(cache=True, inline="always")
def _play(b, p: int, c: int, u) -> None:
    """Colour ``c`` plays legal point ``p`` on scratch board ``b``, keeping
    what it overwrites in the undo record ``u``."""
    b.to_move = c
    play_undoable(b, p, u)


@njit(cache=True, inline="always")
def _append_new(sel, e: int, n: int, q: int) -> int:
    """Append ``q`` to ``sel[e, :n]`` unless it is there (or the row is full)."""
    for i in range(n):
        if sel[e, i] == q:
            return n
    if n < sel.shape[1]:
        sel[e, n] = q
        n += 1
    return n


@njit(cache=True)
def _string_libs(b, v: int, w: int, out, row: int, n: int) -> int:
    """Append the liberties of the string at ``v`` to ``out[row, n:]`` (no
    duplicates within ``out[row, :n]``), in the order of a walk along its stone
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
            if b.color[np.uint64(q)] == EMPTY:  # unsigned: no wrap-around arithmetic
                if q != met0 and q != met1:
                    if found == 0:
                        met0 = q
                    elif found == 1:
                        met1 = q
                    found += 1
                n = _append_new(out, row, n, q)
        if want <= 2 and found >= want:
            break
        s = b.nxt[np.uint64(s)]
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
        q = np.uint64(v + _dir(w, k))  # unsigned: no wrap-around arithmetic
        cq = b.color[q]
        if cq == c:
            a = b.libs[np.uint16(b.parent[q])] - 1
            conn += a
            if a > best:
                best = a
        elif cq == o:
            g = np.uint16(b.parent[q])
            if b.libs[g] == 1:
                caps += 1
                cap_libs += b.size[g]
    return caps + best, stone_libs + cap_libs + conn


@njit(cache=True, inline="always")
def _hits_carried(b, r, e: int, size: int, hunter: int, w: int) -> bool:
    """Whether, at the prey ply ``e``, the hunter strings in atari next to
    the prey are those of the prey ply two levels up (``r.hit_*[e - 2]``),
    in the same order and with the same liberties, known without walking
    the prey: the prey then played its liberty (``r.undo[e - 1]``'s move)
    joining no other string (its size grew by one), neither that move's
    hunter neighbours nor the string of the hunter's reply (``r.undo[e]``'s
    move) are in atari, and each string listed there still has the same
    head, size and one liberty, that point still empty. Only those two
    moves placed stones: the move's hunter neighbours are the only strings
    it took a liberty from, the reply only joins hunter strings, the only
    strings newly next to the prey are theirs, and a listed string that
    lost its liberty or gained one (a capture) or joined the reply fails
    the test; the move, inserted into the prey's stone ring, has no hunter
    neighbour in atari, so the walk of the prey's stones would meet the
    same strings in the same order (it then lists the same captures).
    Copies the list to ply ``e`` when it holds."""
    if e < 3:
        return False
    k = r.hit_n[e - 2]
    if k < 0 or r.prey_size[e - 2] + 1 != size:
        return False
    m1 = r.undo[e - 1, _UNDO_P]
    m2 = r.undo[e, _UNDO_P]
    if b.libs[b.parent[m2]] == 1:
        return False
    for d in range(4):
        q = m1 + _dir(w, d)
        if b.color[q] == hunter and b.libs[b.parent[q]] == 1:
            return False
    for i in range(k):
        h = r.hit_head[e - 2, i]
        lib = r.hit_lib[e - 2, i]
        if (b.color[h] != hunter or b.parent[h] != h or b.libs[h] != 1 or b.size[h] != r.hit_size[e - 2, i]
                or b.color[lib] != EMPTY):
            return False
    for i in range(k):
        r.hit_head[e, i] = r.hit_head[e - 2, i]
        r.hit_size[e, i] = r.hit_size[e - 2, i]
        r.hit_lib[e, i] = r.hit_lib[e - 2, i]
    r.hit_n[e] = k
    return True


@njit(cache=True)
def _only_lib(b, v: int, w: int) -> int:
    """The liberty of the string at ``v``, which has one: the first empty
    neighbour of a walk along its stone ring (``_string_libs``'s order)."""
    s = v
    while True:
        for k in range(4):
            q = s + _dir(w, k)
            if b.color[np.uint64(q)] == EMPTY:
                return q
        s = b.nxt[np.uint64(s)]
        if s == v:
            return _NULL


@njit(cache=True)
def _prey_selections(b, prey: int, v: int, think_ko: bool, w: int, r, e: int, known: int) -> tuple[int, int]:
    """(verdict, number of candidate moves written to ``r.sel[e]``); the
    candidates are added to the point set ``r.seen`` (``pointset.add``).
    ``known``: the prey's liberty when the caller knows it, else _NULL.
    After a hunter's move it does: the prey had two liberties, the move
    took one, and a capture next to the prey would have given it a second
    (it is then safe, below), so one liberty left is the other of the two,
    which the walk of the prey's stones would list alone."""
    if b.libs[b.parent[v]] >= 2 or (b.ko != NO_KO and think_ko):
        return _PREY, 0
    sel = r.sel
    if known != _NULL:
        sel[e, 0] = known
        n = 1
    else:
        n = _string_libs(b, v, w, sel, e, 0)
    not_cap = sel[e, 0]
    hunter = 3 - prey
    size = b.size[b.parent[v]]
    r.prey_size[e] = size
    if _hits_carried(b, r, e, size, hunter, w):
        for i in range(r.hit_n[e]):  # their liberties: the captures
            n = _append_new(sel, e, n, r.hit_lib[e, i])
    else:
        # the hunter stones in atari next to the prey, in the order of a
        # walk of its stones: listed without a branch per neighbour (about
        # half of them are taken: no branch predictor guesses that)
        color = b.color
        libs = b.libs
        parent = b.parent
        nxt = b.nxt
        hits = r.hits
        # unsigned points and offsets (Sayuri's order): numba then adds no
        # wrap-around arithmetic for a negative index at each load
        m = np.uint64(0)
        su = np.uint64(v)
        vu = su
        wu = np.uint64(w)
        one = np.uint64(1)
        offsets = (np.uint64(0) - wu, np.uint64(0) - one, one, wu)
        while True:
            for k in range(4):
                q = su + offsets[k]
                hits[m] = q
                m += np.uint64((color[q] == hunter) & (libs[np.uint16(parent[q])] == 1))
            su = np.uint64(np.uint16(nxt[su]))
            if su == vu:
                break
        k = 0  # their strings, each once, in the order first met
        over = False  # more than HITS_MAX of them: the list is not kept
        for i in range(int(m)):
            h = parent[hits[i]]
            met = False
            for j in range(k):
                if r.hit_head[e, j] == h:
                    met = True
                    break
            if met:
                continue
            lib = _only_lib(b, hits[i], w)
            n = _append_new(sel, e, n, lib)
            if k < HITS_MAX:
                r.hit_head[e, k] = h
                r.hit_size[e, k] = b.size[h]
                r.hit_lib[e, k] = lib
                k += 1
            else:
                over = True
        r.hit_n[e] = -1 if over else k
    for i in range(n):
        add(r.seen, sel[e, i])
    m = 0
    has_not_cap = False
    for i in range(n):
        if _legal(b, sel[e, i], prey):
            sel[e, m] = sel[e, i]
            if sel[e, i] == not_cap:
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


@njit(cache=True, inline="always")
def _libs_beside_move(b, r, v: int, w: int, e: int) -> bool:
    """At the hunter ply ``e``, where the prey has two liberties: write
    them into ``r.sel[e, :2]`` in the order of a walk of its stones
    (``_string_libs``) without the walk, when the prey's move (``r.undo[e]``'s)
    captured nothing and joined no other string (the prey grew by one
    stone since its ply ``e - 1``). The prey then had one liberty, that
    move's point, so no other stone of it has an empty neighbour: both
    liberties are the move's empty neighbours, met in their order."""
    if r.prey_size[e - 1] + 1 != b.size[b.parent[v]] or r.undo[e, _UNDO_N_CAP] != 0:
        return False
    m = r.undo[e, _UNDO_P]
    n = 0
    for k in range(4):
        q = m + _dir(w, k)
        if b.color[np.uint64(q)] == EMPTY and n < 2:  # unsigned: no wrap-around arithmetic
            r.sel[e, n] = q
            n += 1
    return n == 2


@njit(cache=True)
def _hunter_selections(b, prey: int, v: int, w: int, r, e: int) -> tuple[int, int]:
    libs = b.libs[b.parent[v]]
    if libs >= 3:
        return _PREY, 0
    if libs <= 1:
        return _HUNTER, 0
    sel = r.sel
    if not _libs_beside_move(b, r, v, w, e):
        _string_libs(b, v, w, sel, e, 0)
    m1 = sel[e, 0]
    m2 = sel[e, 1]
    r.pair[e, 0] = m1  # for the prey's ply after the hunter's move (``_prey_selections``'s ``known``)
    r.pair[e, 1] = m2
    add(r.seen, m1)
    add(r.seen, m2)
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
            sel[e, n] = m1
            n += 1
    elif l2 >= 3:
        if _legal(b, m2, hunter):
            sel[e, n] = m2
            n += 1
    else:
        ok1 = _legal(b, m1, hunter)
        ok2 = _legal(b, m2, hunter)
        if ok1:
            sel[e, n] = m1
            n += 1
        if ok2:
            sel[e, n] = m2
            n += 1
    if n == 0:
        return _PREY, 0
    return _NEITHER, n


@njit(cache=True)
def _enter(b, r, d: int, prey_turn: bool, move: int, prey: int, v: int, w: int) -> int:
    """Start Sayuri's PreyMove (``prey_turn``; ``move`` is the hunter's move,
    or none) or HunterMove (``move`` is the prey's) from the frame at level
    ``d``, playing ``move`` on the scratch board ``b`` with undo record
    ``r.undo[d + 1]``. Returns the verdict (the move already taken back),
    or _NEITHER with a frame pushed at level ``d + 1`` (its move stays on
    the board until ``_read`` pops the frame; ``r.moved`` says whether it
    played one)."""
    r.nodes += 1
    if r.nodes >= MAX_LADDER_NODES or d + 1 >= PLIES:
        return _PREY
    e = d + 1
    moved = (not prey_turn) or move != _NULL
    if prey_turn:
        known = _NULL
        if moved:  # the hunter's move, one of the prey's two liberties at level d
            _play(b, move, 3 - prey, r.undo[e])
            known = r.pair[d, 1] if move == r.pair[d, 0] else r.pair[d, 0]
        res, n = _prey_selections(b, prey, v, move != _NULL, w, r, e, known)
    else:
        _play(b, move, prey, r.undo[e])
        res, n = _hunter_selections(b, prey, v, w, r, e)
    if res != _NEITHER:
        if moved:
            undo_play(b, r.undo[e])
        return res
    r.nsel[e] = n
    r.idx[e] = 0
    r.turn[e] = 1 if prey_turn else 0
    r.moved[e] = 1 if moved else 0
    return _NEITHER


@njit(cache=True)
def _pop(b, r, e: int) -> None:
    """Take back the move of the frame at level ``e``."""
    if r.moved[e] != 0:
        undo_play(b, r.undo[e])


@njit(cache=True)
def _read(b, r, prey: int, v: int, w: int, first: int) -> int:
    """Read the ladder of the string at ``v`` from level 0, the prey to play
    after the hunter's ``first`` move (or with none): _PREY or _HUNTER. An
    explicit stack of frames (level ``e`` of ``r`` holds its candidate
    moves, next candidate, whose turn and its move's undo record), no
    recursion; the scratch board ``b`` is as it was when it returns."""
    res = _enter(b, r, 0, True, first, prey, v, w)
    if res != _NEITHER:
        return res
    top = 1
    while True:
        e = top
        if res != _NEITHER and ((r.turn[e] != 0 and res == _PREY) or (r.turn[e] == 0 and res == _HUNTER)):
            _pop(b, r, e)
            if e == 1:
                return res
            top -= 1
            continue
        if r.idx[e] >= r.nsel[e]:
            res = _HUNTER if r.turn[e] != 0 else _PREY
            _pop(b, r, e)
            if e == 1:
                return res
            top -= 1
            continue
        mv = r.sel[e, r.idx[e]]
        r.idx[e] += 1
        res = _enter(b, r, e, r.turn[e] == 0, mv, prey, v, w)
        if res == _NEITHER:
            top = e + 1


@njit(cache=True)
def read_string(b, r, p: int, c: int, libs: int, w: int, vital) -> int:
    """Read out the string of colour ``c`` at ``p`` (``libs`` 1 or 2) on the
    scratch board ``b`` (a copy of the position, left as it was) with the
    reader record ``r`` (``READER_DTYPE``). Its vital moves go to
    ``vital``, their number is returned (0: no ladder). Every point a
    read-out looks at is a candidate noted in ``r.seen`` (which it does
    not clear), or next to one, or in a string next to one
    (``ladder_footprint.footprint`` makes a set of it)."""
    libbuf = r.libbuf
    r.nodes = 0
    nv = 0
    if libs == 1:
        if _read(b, r, c, p, w, _NULL) == _HUNTER:
            vital[nv] = _only_lib(b, p, w)
            nv += 1
    else:
        k = _string_libs(b, p, w, libbuf, 0, 0)
        r.pair[0, 0] = libbuf[0, 0]  # level 0 of both reads: the hunter's first move is one of these
        r.pair[0, 1] = libbuf[0, 1]
        for i in range(k):
            a = libbuf[0, i]
            add(r.seen, a)
            if _legal(b, a, 3 - c):
                if _read(b, r, c, p, w, a) == _HUNTER:
                    vital[nv] = a
                    nv += 1
    return nv
