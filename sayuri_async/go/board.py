"""The Go board core: rules over one flat record, compiled with numba.

Vocabulary
----------
point     index into the padded board: ``p = (y + 1) * W + (x + 1)`` with
          ``W = N + 2``. Row ``y = 0`` is GTP row 1 (the bottom), column
          ``x = 0`` is GTP column A. Points outside the board hold BORDER.
action    index in ``0 .. N*N``: ``a = y * N + x``, and ``a = N*N`` is pass.
          Networks, policies and training data speak in actions.
PASS      the point value used for a pass (-1).
record    one board: a numpy record of dtype ``BOARD_DTYPE`` (fixed size for
          every board size up to MAX_N, so one compiled function serves all).
          Python code holds it as an array of shape ``(1,)``; compiled code
          takes ``rec = arr[0]``.
group     a string of connected stones: ``parent[p]`` is its head, ``nxt``
          links its stones in a circle, ``libs[head]`` and ``size[head]`` are
          exact liberty and stone counts, updated incrementally (no flood fill
          per move).
hash      Zobrist hash of the stones alone (positional, for superko);
          ``hist_hash`` keeps the last HISTORY positions' hashes.
hist      ring of the last HISTORY colour arrays (for the network's history
          planes): ``hist[(hist_pos - k) % HISTORY]`` is the position k plies
          ago, valid for ``k <= move_num``; ``hist_move`` at the same index is
          the point played to reach it (PASS for a pass or the start).
rules     ``scoring`` (0 area, 1 territory), ``handicap`` (stones placed
          before the first move) and ``handicap_last`` (the point of the
          last of them, 0 without): copied with the board, read by the
          ``sayuri-v3`` encoder only (Sayuri encodes both); ``go/game.py``
          sets them.

Everything in this module is a plain function over records so that search and
feature encoding can call it from compiled code. ``go/game.py`` wraps it in a
Python class with history, undo and superko.
"""
from __future__ import annotations

import numpy as np
from numba import njit

EMPTY, BLACK, WHITE, BORDER = 0, 1, 2, 3
PASS = -1
NO_KO = 0  # point 0 is a border point, never a ko
MIN_N, MAX_N = 2, 25
MAX_W = MAX_N + 2
MAX_P = MAX_W * MAX_W
HISTORY = 8

BOARD_DTYPE = np.dtype(
    [
        ("color", np.int8, (MAX_P,)),
        ("parent", np.int16, (MAX_P,)),
        ("nxt", np.int16, (MAX_P,)),
        ("libs", np.int16, (MAX_P,)),
        ("size", np.int16, (MAX_P,)),
        ("hist", np.int8, (HISTORY, MAX_P)),
        ("hist_hash", np.uint64, (HISTORY,)),
        ("hist_move", np.int32, (HISTORY,)),
        ("hash", np.uint64),
        ("komi", np.float32),
        ("n", np.int32),
        ("w", np.int32),
        ("ko", np.int32),
        ("to_move", np.int32),
        ("passes", np.int32),
        ("move_num", np.int32),
        ("last_move", np.int32),
        ("hist_pos", np.int32),
        ("captures", np.int32, (3,)),
        ("scoring", np.int32),
        ("handicap", np.int32),
        ("handicap_last", np.int32),
    ],
    align=True,
)


def _make_zobrist() -> np.ndarray:
    rng = np.random.Generator(np.random.PCG64(0x5A_1E_C0DE))
    z = rng.integers(1, np.iinfo(np.uint64).max, size=(4, MAX_P), dtype=np.uint64)
    z[EMPTY, :] = 0
    z[BORDER, :] = 0
    return z


ZOBRIST = _make_zobrist()  # [color, point]; constant, baked into compiled code
# Mixed into hashes that also depend on the side to move (NN cache keys).


# --------------------------------------------------------------------------
# set-up


@njit(cache=True)
def rec_init(rec, n: int, komi: float) -> None:
    """Clear ``rec`` to an empty ``n x n`` board, black to move."""
    w = n + 2
    rec.color[:] = BORDER
    rec.parent[:] = 0
    rec.nxt[:] = 0
    rec.libs[:] = 0
    rec.size[:] = 0
    for y in range(n):
        for x in range(n):
            rec.color[(y + 1) * w + x + 1] = EMPTY
    for k in range(HISTORY):
        for p in range(MAX_P):
            rec.hist[k, p] = 0
        rec.hist_hash[k] = 0
        rec.hist_move[k] = PASS
    rec.hash = 0
    rec.komi = komi
    rec.n = n
    rec.w = w
    rec.ko = NO_KO
    rec.to_move = BLACK
    rec.passes = 0
    rec.move_num = 0
    rec.last_move = PASS
    rec.hist_pos = 0
    for c in range(3):
        rec.captures[c] = 0
    rec.scoring = 0
    rec.handicap = 0
    rec.handicap_last = 0
    for p in range(w * w):
        rec.hist[0, p] = rec.color[p]


def new_board(n: int, komi: float = 7.5) -> np.ndarray:
    """A fresh board record array of shape (1,)."""
    if not MIN_N <= n <= MAX_N:
        raise ValueError(f"board size {n} is outside {MIN_N}..{MAX_N}")
    arr = np.zeros(1, dtype=BOARD_DTYPE)
    rec_init(arr[0], n, komi)
    return arr


# --------------------------------------------------------------------------
# coordinates


@njit(cache=True, inline="always")
def copy_position(dst, src) -> None:
    """``dst = src`` except the history ring (``hist``, ``hist_hash``,
    ``hist_move``), for the points of ``src``'s board only: the stones, the
    strings and every scalar field, so the copy plays exactly like the
    original (``play`` writes only the ring slot it moves to). For a stack
    of scratch boards that never look at their history (the ladder reader);
    ``copy_board`` is this plus the ring."""
    m = src.w * src.w
    # explicit loops, one per array (numba's slice assignment is several
    # times slower here, and one loop over all five does not vectorise)
    a, b = dst.color, src.color
    for i in range(m):
        a[i] = b[i]
    a, b = dst.parent, src.parent
    for i in range(m):
        a[i] = b[i]
    a, b = dst.nxt, src.nxt
    for i in range(m):
        a[i] = b[i]
    a, b = dst.libs, src.libs
    for i in range(m):
        a[i] = b[i]
    a, b = dst.size, src.size
    for i in range(m):
        a[i] = b[i]
    dst.hash = src.hash
    dst.komi = src.komi
    dst.n = src.n
    dst.w = src.w
    dst.ko = src.ko
    dst.to_move = src.to_move
    dst.passes = src.passes
    dst.move_num = src.move_num
    dst.last_move = src.last_move
    dst.hist_pos = src.hist_pos
    for i in range(3):
        dst.captures[i] = src.captures[i]
    dst.scoring = src.scoring
    dst.handicap = src.handicap
    dst.handicap_last = src.handicap_last


@njit(cache=True)
def copy_board(dst, src) -> None:
    """``dst = src`` for the points of ``src``'s board only: the record has
    room for MAX_N, and copying all of it costs 12.5 KB of memory traffic
    where a 9x9 board uses 2 KB. Points past ``W * W`` are never read for a
    board of that size, so the copy plays exactly like the original."""
    copy_position(dst, src)
    m = src.w * src.w
    sh, dh = src.hist, dst.hist
    for k in range(HISTORY):
        for i in range(m):
            dh[k, i] = sh[k, i]
        dst.hist_hash[k] = src.hist_hash[k]
        dst.hist_move[k] = src.hist_move[k]


@njit(cache=True)
def action_to_point(n: int, a: int) -> int:
    if a == n * n:
        return PASS
    return (a // n + 1) * (n + 2) + a % n + 1


@njit(cache=True)
def point_to_action(n: int, p: int) -> int:
    if p == PASS:
        return n * n
    w = n + 2
    return (p // w - 1) * n + (p % w - 1)


# --------------------------------------------------------------------------
# rules


@njit(cache=True, inline="always")
def neighbour(p, w, d: int) -> np.uint64:
    """Point ``p``'s neighbour ``d`` (0-3: ``p - 1``, ``p + 1``, ``p - w``,
    ``p + w``; ``w`` the padded width) as an unsigned index: numba adds a test and a
    conditional move for the wrap-around of a negative index at every
    load through a signed one (``p`` is on the board, so its neighbours
    are points of the padded board)."""
    return np.uint64(p + (-1, 1, -w, w)[d])


@njit(cache=True)
def is_simple_legal(rec, p: int) -> bool:
    """Legal under simple ko and no-suicide (superko is checked by callers)."""
    if p == PASS:
        return True
    if p <= 0 or p >= rec.w * rec.w or rec.color[np.uint64(p)] != EMPTY or p == rec.ko:
        return False
    c = rec.to_move
    o = 3 - c
    w = np.int64(rec.w)
    for d in range(4):
        q = neighbour(p, w, d)
        cq = rec.color[q]
        if cq == EMPTY:
            return True
        if cq == c:
            if rec.libs[np.uint16(rec.parent[q])] > 1:
                return True
        elif cq == o:
            if rec.libs[np.uint16(rec.parent[q])] == 1:
                return True
    return False


@njit(cache=True)
def hash_after(rec, p: int) -> np.uint64:
    """Positional hash after the side to move plays legal point ``p``."""
    if p == PASS:
        return rec.hash
    c = rec.to_move
    o = 3 - c
    w = np.int64(rec.w)
    h = rec.hash ^ ZOBRIST[c, p]
    seen0 = -1
    seen1 = -1
    seen2 = -1
    for d in range(4):
        q = p + (-1, 1, -w, w)[d]
        if rec.color[q] != o:
            continue
        g = rec.parent[q]
        if rec.libs[g] != 1 or g == seen0 or g == seen1 or g == seen2:
            continue
        if seen0 < 0:
            seen0 = g
        elif seen1 < 0:
            seen1 = g
        else:
            seen2 = g
        s = g
        while True:
            h ^= ZOBRIST[o, s]
            s = rec.nxt[s]
            if s == g:
                break
    return h


@njit(cache=True)
def remove_group(rec, g: int) -> int:
    """Remove the group headed by ``g``; returns the stones removed."""
    w = np.int64(rec.w)
    o = rec.color[g]
    c = 3 - o
    removed = 0
    s = g
    while True:
        rec.color[np.uint64(s)] = EMPTY
        rec.hash ^= ZOBRIST[o, s]
        removed += 1
        # s becomes a liberty of each distinct adjacent group of colour c
        h0 = -1
        h1 = -1
        h2 = -1
        for d in range(4):
            q = neighbour(s, w, d)
            if rec.color[q] == c:
                h = rec.parent[q]
                if h != h0 and h != h1 and h != h2:
                    rec.libs[h] += 1
                    if h0 < 0:
                        h0 = h
                    elif h1 < 0:
                        h1 = h
                    else:
                        h2 = h
        s = rec.nxt[s]
        if s == g:
            break
    return removed


@njit(cache=True)
def merge_groups(rec, big: int, small: int) -> None:
    """Merge group ``small`` into group ``big`` (both heads, same colour)."""
    w = np.int64(rec.w)
    s = small
    while True:  # unsigned indices (``neighbour``)
        for d in range(4):
            e = s + (-1, 1, -w, w)[d]  # signed: ``neighbour`` adds to it below
            if rec.color[np.uint64(e)] == EMPTY:
                shared = False
                for d2 in range(4):
                    k = neighbour(e, w, d2)
                    if rec.color[k] != EMPTY and rec.color[k] != BORDER and rec.parent[k] == big:
                        shared = True
                        break
                if not shared:
                    rec.libs[big] += 1
        rec.parent[np.uint64(s)] = big
        s = rec.nxt[np.uint64(s)]
        if s == small:
            break
    # splice the two circular lists
    tmp = rec.nxt[big]
    rec.nxt[big] = rec.nxt[small]
    rec.nxt[small] = tmp
    rec.size[big] += rec.size[small]


@njit(cache=True)
def _push_history(rec) -> None:
    rec.hist_pos = (rec.hist_pos + 1) % HISTORY
    k = rec.hist_pos
    for p in range(rec.w * rec.w):
        rec.hist[k, p] = rec.color[p]
    rec.hist_hash[k] = rec.hash
    rec.hist_move[k] = rec.last_move


@njit(cache=True)
def play(rec, p: int) -> int:
    """Play point ``p`` (or PASS) for the side to move; returns stones captured.

    The caller guarantees ``is_simple_legal(rec, p)``.
    """
    captured = play_position(rec, p)
    _push_history(rec)
    return captured


# slots of an undo record (``go/board_undo.py``), which ``play_position``
# fills when it is given one
UNDO_KO, UNDO_TO_MOVE, UNDO_PASSES, UNDO_MOVE_NUM, UNDO_LAST, UNDO_HASH, UNDO_CAPS = 0, 1, 2, 3, 4, 5, 6
UNDO_P, UNDO_OLD_PARENT, UNDO_OLD_NXT, UNDO_OLD_SIZE, UNDO_OLD_LIBS = 7, 8, 9, 10, 11
UNDO_N_ADJ, UNDO_ADJ = 12, 13  # 4 x (head, liberties before)
UNDO_N_CAP, UNDO_CAP = 21, 22  # 4 x head
UNDO_N_MERGE, UNDO_MERGE = 26, 27  # 4 x (big, small, big's liberties before)
UNDO_LEN = 39


@njit(cache=True)
def play_position(rec, p: int, u=None) -> int:
    """``play`` without the history ring (``hist``, ``hist_hash``,
    ``hist_move`` stay as they were): for scratch boards that never read it
    (the ladder reader). With an undo record ``u`` (``go/board_undo.py``)
    it writes what the move overwrites there; without one, numba compiles
    the recording away."""
    c = rec.to_move
    o = 3 - c
    if u is not None:
        u[UNDO_KO] = rec.ko
        u[UNDO_TO_MOVE] = c
        u[UNDO_PASSES] = rec.passes
        u[UNDO_MOVE_NUM] = rec.move_num
        u[UNDO_LAST] = rec.last_move
        u[UNDO_HASH] = np.int64(rec.hash)
        u[UNDO_CAPS] = rec.captures[c]
        u[UNDO_P] = p
    rec.move_num += 1
    rec.last_move = p
    rec.to_move = o
    if p == PASS:
        rec.passes += 1
        rec.ko = NO_KO
        return 0
    rec.passes = 0
    w = np.int64(rec.w)
    if u is not None:
        u[UNDO_OLD_PARENT] = rec.parent[p]
        u[UNDO_OLD_NXT] = rec.nxt[p]
        u[UNDO_OLD_SIZE] = rec.size[p]
        u[UNDO_OLD_LIBS] = rec.libs[p]
    rec.color[p] = c
    rec.parent[p] = p
    rec.nxt[p] = p
    rec.size[p] = 1
    rec.hash ^= ZOBRIST[c, p]
    libs = 0
    h0 = -1
    h1 = -1
    h2 = -1
    n_adj = 0
    for d in range(4):
        q = p + (-1, 1, -w, w)[d]
        cq = rec.color[q]
        if cq == EMPTY:
            libs += 1
        elif cq == c or cq == o:
            g = rec.parent[q]
            if g != h0 and g != h1 and g != h2:
                if u is not None:
                    u[UNDO_ADJ + 2 * n_adj] = g
                    u[UNDO_ADJ + 2 * n_adj + 1] = rec.libs[g]
                    n_adj += 1
                rec.libs[g] -= 1
                if h0 < 0:
                    h0 = g
                elif h1 < 0:
                    h1 = g
                else:
                    h2 = g
    rec.libs[p] = libs
    captured = 0
    cap_point = NO_KO
    n_cap = 0
    for d in range(4):
        q = p + (-1, 1, -w, w)[d]
        if rec.color[q] == o and rec.libs[rec.parent[q]] == 0:
            if u is not None:
                u[UNDO_CAP + n_cap] = rec.parent[q]
                n_cap += 1
            captured += remove_group(rec, rec.parent[q])
            cap_point = q
    n_merge = 0
    for d in range(4):
        q = p + (-1, 1, -w, w)[d]
        if rec.color[q] == c:
            g = rec.parent[q]
            mine = rec.parent[p]
            if g != mine:
                if rec.size[g] >= rec.size[mine]:
                    big = g
                    small = mine
                else:
                    big = mine
                    small = g
                if u is not None:
                    u[UNDO_MERGE + 3 * n_merge] = big
                    u[UNDO_MERGE + 3 * n_merge + 1] = small
                    u[UNDO_MERGE + 3 * n_merge + 2] = rec.libs[big]
                    n_merge += 1
                merge_groups(rec, big, small)
    if u is not None:
        u[UNDO_N_ADJ] = n_adj
        u[UNDO_N_CAP] = n_cap
        u[UNDO_N_MERGE] = n_merge
    rec.captures[c] += captured
    head = rec.parent[p]
    if captured == 1 and rec.size[head] == 1 and rec.libs[head] == 1:
        rec.ko = cap_point
    else:
        rec.ko = NO_KO
    return captured


LEGAL, OCCUPIED, KO, SUICIDE, SUPERKO = 0, 1, 2, 3, 4  # illegal_reason's answers


@njit(cache=True)
def illegal_reason(arr, p: int, hashes, n_hashes: int, superko: bool) -> int:
    """Why the side to move may not play point ``p`` on ``arr[0]`` (LEGAL
    when it may); ``hashes[:n_hashes]`` are the game's earlier positions
    for positional superko. Takes the ``(1,)`` array: from Python that is
    about 1 us per call against about 5 us for a record argument."""
    rec = arr[0]
    if p == PASS:
        return LEGAL
    if rec.color[p] != EMPTY:
        return OCCUPIED
    if p == rec.ko:
        return KO
    if not is_simple_legal(rec, p):
        return SUICIDE
    if superko:
        h = hash_after(rec, p)
        for i in range(n_hashes):
            if hashes[i] == h:
                return SUPERKO
    return LEGAL


@njit(cache=True)
def play_arr(arr, p: int) -> int:
    """``play(arr[0], p)`` for Python callers (the cheap way to pass a board)."""
    return play(arr[0], p)


@njit(cache=True)
def legal_actions(rec, out) -> int:
    """Write 1 into ``out[a]`` for every simple-legal action (pass included)."""
    n = rec.n
    count = 0
    for a in range(n * n):
        p = (a // n + 1) * (n + 2) + a % n + 1
        ok = is_simple_legal(rec, p)
        out[a] = 1 if ok else 0
        count += 1 if ok else 0
    out[n * n] = 1
    return count + 1


@njit(cache=True)
def list_legal_actions(rec, out) -> int:
    """Write the simple-legal actions into ``out`` (ascending, pass last;
    ``out`` holds at least ``N*N + 1``) and return how many. The common
    case, an empty neighbour, is checked inline and without a branch (the
    colours are too mixed to predict): the search lists a leaf's moves on
    every expansion."""
    n = rec.n
    wd = n + 2
    col = rec.color
    ko = rec.ko
    k = np.uint64(0)
    uw = np.uint64(wd)
    one = np.uint64(1)
    for y in range(n):  # no branch per point but for the rare empty point with no empty neighbour
        base = (y + 1) * wd + 1
        for x in range(n):
            p = base + x
            q = np.uint64(p)  # unsigned: numba adds no wrap-around arithmetic per load
            free = (col[q] == EMPTY) & (p != ko)
            open_ = (col[q - one] == EMPTY) | (col[q + one] == EMPTY) | (col[q - uw] == EMPTY) | (col[q + uw] == EMPTY)
            ok = free & open_
            if free > open_:  # free and not open_, as one test
                ok = is_simple_legal(rec, p)
            out[k] = y * n + x
            k += np.uint64(ok)
    out[k] = n * n  # pass
    return int(k) + 1


@njit(cache=True)
def liberties_per_action(rec, out) -> None:
    """``out[a]`` (int16, ``[N*N]``): the liberties of the string on action
    ``a``'s point, 0 on an empty point. One gather a point, no branch (the
    colours are too mixed to predict); unsigned indices spare numba's
    wrap-around arithmetic."""
    n = rec.n
    w = rec.w
    color = rec.color
    libs = rec.libs
    parent = rec.parent
    for y in range(n):
        start = (y + 1) * w + 1
        c_row = color[start:start + n]
        g_row = parent[start:start + n]
        row = out[y * n:(y + 1) * n]
        for x in range(n):
            c = c_row[x]
            stone = (c == BLACK) | (c == WHITE)
            row[x] = libs[np.uint16(g_row[x])] * np.int16(stone)


@njit(cache=True)
def full_hash(rec) -> np.uint64:
    """The positional hash computed from scratch (for checks)."""
    h = np.uint64(0)
    for p in range(rec.w * rec.w):
        c = rec.color[p]
        if c == BLACK or c == WHITE:
            h ^= ZOBRIST[c, p]
    return h


@njit(cache=True)
def place_stone(rec, p: int, c: int) -> None:
    """Put a stone of colour ``c`` on empty point ``p`` without a move
    (handicap and set-up stones). Captures nothing; the caller checks that
    the result has no group without liberties."""
    saved_to_move = rec.to_move
    saved_num = rec.move_num
    saved_last = rec.last_move
    saved_passes = rec.passes
    saved_caps = rec.captures[c]
    rec.to_move = c
    play(rec, p)
    # undo the move bookkeeping: set-up stones are part of the start position
    rec.hist_pos = (rec.hist_pos - 1) % HISTORY
    k = rec.hist_pos
    for q in range(rec.w * rec.w):
        rec.hist[k, q] = rec.color[q]
    rec.hist_hash[k] = rec.hash
    rec.hist_move[k] = saved_last
    rec.to_move = saved_to_move
    rec.move_num = saved_num
    rec.last_move = saved_last
    rec.passes = saved_passes
    rec.captures[c] = saved_caps
    rec.ko = NO_KO


def random_board(n: int, moves: int, rng: np.random.Generator) -> np.ndarray:
    """A board record array of shape (1,) after up to ``moves`` uniformly
    random simple-legal moves from the empty board (no passes; it stops early
    when no move is legal): positions for tests and benchmarks."""
    arr = new_board(n)
    rec = arr[0]
    mask = np.zeros(n * n + 1, dtype=np.uint8)
    for _ in range(moves):
        legal_actions(rec, mask)
        legal = np.flatnonzero(mask[:-1])
        if legal.size == 0:
            break
        play(rec, action_to_point(n, int(rng.choice(legal))))
    return arr
