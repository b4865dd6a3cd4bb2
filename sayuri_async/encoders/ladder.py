"""The four ladder planes of ``sayuri-v3`` for a whole board, and the
read-outs a search keeps to make them cheaply at its leaves.

Vocabulary
----------
ladder map  ``ladder_map(rec, out)``: per action ``NOT_LADDER`` ..
            ``LADDER_TAKE`` (``ladder_reader.py``), every string of one or
            two liberties read out (``ladder_reader.read_string``).
read-out    one string's result (its vital moves; none: not a ladder),
            kept with its footprint (``ladder_footprint.py``) and found
            again by the string's first point in raster order.
cache       a ``LADDER_CACHE_DTYPE`` record a search keeps (in its
            ``sayuri-v3`` scratch, ``sayuri_v3.SCRATCH_DTYPE``), with three
            stores of read-outs:

            - the *root entries*: every read-out of one position, made by
              ``ladder_map_keep`` (the search's root, at its first leaf);
            - the *positions*: the read-outs of the last positions
              ``ladder_map_reuse`` encoded (``NODE_SETS`` x ``NODE_WAYS``,
              by the hash of the stones and the side to move), with their
              stones; a leaf looks up its parent (the position before its
              last move, whose hash its history ring holds), which the
              search encoded when it was a leaf itself;
            - the *memo*: read-outs by string point, each kept with the
              stones on its footprint (``MEMO_SETS`` x ``MEMO_WAYS``) and
              served where the stones there are the same (compared as
              point sets, word by word: exact, and cheaper than hashing
              them).

            A read-out of a stored position serves a string of ``rec``
            when no point of its footprint holds other stones than in
            that position and the ko point did not move into it: the
            comparison is with the stones the store kept, so a wrong
            guess of the parent costs time, never a wrong plane.

            It also holds the working memory of a pass: the reader's
            state (``reader``, 91 KB; made afresh for each leaf, a block
            that size went back to the system when freed and its pages
            were cleared again at the next leaf: 5% of self-play's samples
            in the kernel), the scratch board it plays on, the per-string
            verdicts and the read-outs a position keeps (a dozen small
            arrays that were made and freed at every leaf: with the
            encoder's and the safe areas', about a tenth of 19x19
            self-play's samples in perf).
stones      a position's stone sets, ``[3, SET_WORDS]`` uint64: black,
            white, empty (``pointset.stone_sets``); ``ladder_map_reuse``
            takes them from its caller, which computes them once for the
            area planes too.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..go.board import BOARD_DTYPE, HISTORY, MAX_P, copy_position, liberties_per_action
from .ladder_footprint import MAX_STRINGS, footprint
from .ladder_reader import (LADDER_ATARI, LADDER_DEATH, LADDER_ESCAPABLE, LADDER_TAKE, NOT_LADDER, READER_DTYPE,
                            read_string)
from .pointset import SET_WORDS, has, stone_sets

__all__ = ["LADDER_ATARI", "LADDER_CACHE_DTYPE", "LADDER_DEATH", "LADDER_ESCAPABLE", "LADDER_TAKE", "NOT_LADDER",
           "ladder_map", "ladder_map_keep", "ladder_map_reuse", "new_ladder_cache"]

MAX_ENTRIES = MAX_STRINGS
VITAL_MAX = 2  # vital moves of one string: its capture, or its two ataris
MEMO_SETS = 64  # the memo of read-outs made at other positions: sets x ways, by string point
MEMO_WAYS = 4
MEMO = MEMO_SETS * MEMO_WAYS
NODE_SETS = 64  # stored positions: sets x ways, by position key
NODE_WAYS = 2
NODES = NODE_SETS * NODE_WAYS
NODE_STRINGS = 12  # read-outs kept per stored position (the first ones in raster order)
_TO_MOVE_SALT = np.uint64(0xC2B2AE3D27D4EB4F)

LADDER_CACHE_DTYPE = np.dtype(
    [
        ("ready", np.int32),  # 1: the root entries belong to the position in black / white / ko
        ("n", np.int32),
        ("ko", np.int32),
        ("entries", np.int32),
        ("black", np.uint64, (SET_WORDS,)),
        ("white", np.uint64, (SET_WORDS,)),
        ("entry", np.int16, (MAX_P,)),  # per point: the entry of the string first met there, -1 none
        ("fp", np.uint64, (MAX_ENTRIES, SET_WORDS)),  # each entry's footprint
        ("nv", np.int8, (MAX_ENTRIES,)),  # its vital moves (0: not a ladder)
        ("vital", np.int16, (MAX_ENTRIES, VITAL_MAX)),
        ("memo_n", np.int32),  # board size of the memo's and the positions' entries (0: empty)
        ("m_p", np.int16, (MEMO,)),  # the string's first point (0: a free slot)
        ("m_black", np.uint64, (MEMO, SET_WORDS)),  # the black stones on its footprint
        ("m_white", np.uint64, (MEMO, SET_WORDS)),  # the white stones on its footprint
        ("m_ko", np.int32, (MEMO,)),  # the ko point when it is on the footprint, else 0
        ("m_fp", np.uint64, (MEMO, SET_WORDS)),
        ("m_nv", np.int8, (MEMO,)),
        ("m_vital", np.int16, (MEMO, VITAL_MAX)),
        ("m_next", np.int8, (MEMO_SETS,)),  # the way a set replaces next
        ("node_key", np.uint64, (NODES,)),  # position key (0: a free slot)
        ("node_stamp", np.int64, (NODES,)),  # when it was stored (the older way of a set is replaced)
        ("node_ko", np.int32, (NODES,)),
        ("node_black", np.uint64, (NODES, SET_WORDS)),
        ("node_white", np.uint64, (NODES, SET_WORDS)),
        ("node_count", np.int32, (NODES,)),  # read-outs kept
        ("node_p", np.int16, (NODES, NODE_STRINGS)),  # each one's string point
        ("node_fp", np.uint64, (NODES, NODE_STRINGS, SET_WORDS)),
        ("node_nv", np.int8, (NODES, NODE_STRINGS)),
        ("node_vital", np.int16, (NODES, NODE_STRINGS, VITAL_MAX)),
        ("stamp", np.int64),
        ("reused", np.int64),  # strings taken from the root entries (statistics)
        ("inherited", np.int64),  # strings taken from the parent position
        ("remembered", np.int64),  # strings taken from the memo
        ("read", np.int64),  # strings read out there
        ("read_nodes", np.int64),  # the reader's nodes for those (statistics)
        ("reader", READER_DTYPE),  # the reader's state (ladder_reader.py), kept so its pages stay mapped
        # a pass's working memory (``_ladder_pass``), kept so no leaf allocates it
        ("board", BOARD_DTYPE),  # the scratch board the reader plays on (a copy of the position)
        ("verdict", np.int8, (MAX_P,)),  # per string head: 0 unknown, 1 ladder, 2 not
        ("nvital", np.int8, (MAX_P,)),  # per string head: its vital moves
        ("vital_at", np.int32, (MAX_P, VITAL_MAX)),
        ("pts", np.int16, (MAX_P,)),  # the points of strings of one or two liberties (``short_points``)
        ("libs_at", np.int16, (MAX_P,)),  # per action: its string's liberties (READ, KEEP_ROOT: computed here)
        ("heads", np.int32, (MAX_STRINGS + 1,)),  # footprint's scratch
        ("fp_points", np.uint64, (SET_WORDS,)),
        ("mark", np.uint8, (MAX_P,)),  # footprint's scratch, all 0 between calls (a bool array cannot be a field)
        ("changed", np.uint64, (2, SET_WORDS)),  # points whose stones differ from the root's / the parent's
        ("kept_p", np.int32, (NODE_STRINGS,)),  # this position's read-outs for the store: string point,
        ("kept_fp", np.uint64, (NODE_STRINGS, SET_WORDS)),  # footprint,
        ("kept_g", np.int32, (NODE_STRINGS,)),  # string head
    ],
    align=True,
)


@njit(cache=True, inline="always")
def _position_key(stones_hash: np.uint64, to_move: int) -> np.uint64:
    k = stones_hash ^ (np.uint64(to_move) * _TO_MOVE_SALT)
    return k if k != 0 else np.uint64(1)


@njit(cache=True)
def _find_node(cache, key: np.uint64) -> int:
    base = int(key % np.uint64(NODE_SETS)) * NODE_WAYS
    for e in range(base, base + NODE_WAYS):
        if cache.node_key[e] == key:
            return e
    return -1


@njit(cache=True, inline="always")
def _fits(fp, changed, ko_moved: bool, ko_a: int, ko_b: int) -> bool:
    """Whether a read-out with footprint ``fp`` holds where ``changed``
    are the points whose stones differ and the ko point moved from
    ``ko_b`` to ``ko_a`` (when ``ko_moved``)."""
    for i in range(SET_WORDS):
        if fp[i] & changed[i]:
            return False
    if ko_moved:
        if ko_a != 0 and has(fp, ko_a):
            return False
        if ko_b != 0 and has(fp, ko_b):
            return False
    return True


@njit(cache=True, inline="always")
def _ko_on(fp, ko: int) -> int:
    """The ko point when it is a point of ``fp``, else 0."""
    return ko if ko != 0 and has(fp, ko) else 0


@njit(cache=True, inline="always")
def _same_on(fp, black, white, fb, fw, ko: int, fko: int) -> bool:
    """Whether the stones ``black``/``white`` on the points of ``fp`` are
    ``fb``/``fw`` and the ko point on it is ``fko`` (a memo entry's)."""
    for i in range(SET_WORDS):
        if (black[i] & fp[i]) != fb[i] or (white[i] & fp[i]) != fw[i]:
            return False
    return _ko_on(fp, ko) == fko


@njit(cache=True, inline="always")
def _keep_on(fp, black, white, fb, fw, ko: int, m_ko, e: int) -> None:
    """Keep the stones and the ko point on ``fp`` as memo entry ``e``'s."""
    for i in range(SET_WORDS):
        fb[i] = black[i] & fp[i]
        fw[i] = white[i] & fp[i]
    m_ko[e] = _ko_on(fp, ko)


@njit(cache=True, inline="always")
def _diff(black, white, b2, w2, changed) -> None:
    for i in range(SET_WORDS):
        changed[i] = (black[i] ^ b2[i]) | (white[i] ^ w2[i])


@njit(cache=True)
def short_points(libs_at, n: int, pts) -> int:
    """Write the points of the strings of one or two liberties into
    ``pts`` in raster order, from each action's liberties ``libs_at``
    (``board.liberties_per_action``: 0 on an empty point); returns how
    many. One pass without a branch per point (the board's colours are
    too mixed for branches to be predicted)."""
    w = n + 2
    k = np.uint64(0)  # unsigned indices: numba adds no wrap-around arithmetic
    for y in range(n):
        row = libs_at[y * n:(y + 1) * n]
        p0 = (y + 1) * w + 1
        for x in range(n):
            pts[k] = p0 + x
            k += np.uint64(np.uint16(row[x] - 1) <= 1)  # 1 or 2 (0, empty, wraps round)
    return int(k)


READ = 0  # _ladder_pass's modes: read every string
KEEP_ROOT = 1  # read every string and keep the read-outs as the cache's root entries
REUSE = 2  # take read-outs from the cache where they fit, read the others, store this position's

FROM_PARENT = 0  # where a string's read-out came from: the parent position's store,
FROM_ROOT = 1  # the root entries,
FROM_MEMO = 2  # the memo,
READ_NOW = 3  # or the reader, just now


@njit(cache=True)
def _start_pass(rec, out, cache, libs_at) -> int:
    """Clear the map ``out``, list the stones of short strings in
    ``cache.pts`` (``short_points``) and clear their strings' verdicts.
    Returns how many stones."""
    n = rec.n
    for i in range(n * n):
        out[i] = NOT_LADDER
    pts = cache.pts
    npts = short_points(libs_at, n, pts)
    for i in range(npts):
        g = rec.parent[pts[i]]
        cache.verdict[g] = 0
        cache.nvital[g] = 0
    return npts


@njit(cache=True)
def _clear_root_entries(cache, w: int) -> None:
    cache.ready = 0
    cache.entries = 0
    for p in range(w * w):
        cache.entry[p] = -1


@njit(cache=True)
def _find_stores(rec, cache, black, white):
    """Mode ``REUSE``: which stores of ``cache`` may serve ``rec`` (the memo
    and the positions are emptied first when they are of another board
    size). Returns ``(use_root, root_ko_moved, parent, parent_ko_moved)``:
    whether the root entries are of this board size, whether the ko point
    differs from theirs, the parent position's store (-1: none) and the
    same for it; ``cache.changed`` gets the points whose stones differ from
    the root's (row 0) and the parent's (row 1)."""
    n = rec.n
    if cache.memo_n != n:
        for e in range(MEMO):
            cache.m_p[e] = 0
        for e in range(NODES):
            cache.node_key[e] = 0
        cache.memo_n = n
    use_root = False
    root_ko_moved = False
    if cache.ready == 1 and cache.n == n:
        use_root = True
        _diff(black, white, cache.black, cache.white, cache.changed[0])
        root_ko_moved = rec.ko != cache.ko
    parent = -1
    parent_ko_moved = False
    if rec.move_num >= 1:
        h = rec.hist_hash[(rec.hist_pos - 1) % HISTORY]
        parent = _find_node(cache, _position_key(h, 3 - rec.to_move))
        if parent >= 0:
            _diff(black, white, cache.node_black[parent], cache.node_white[parent], cache.changed[1])
            parent_ko_moved = rec.ko != cache.node_ko[parent]
    return use_root, root_ko_moved, parent, parent_ko_moved


@njit(cache=True)
def _from_parent(rec, cache, parent: int, ko_moved: bool, p: int, vital, g: int) -> int:
    """The slot of the read-out of the string at ``p`` in the parent
    position's store when its footprint fits ``rec``, its vital moves
    copied into ``vital[g]``; -1 when there is none that fits."""
    for i in range(cache.node_count[parent]):
        if cache.node_p[parent, i] == p:
            if not _fits(cache.node_fp[parent, i], cache.changed[1], ko_moved, rec.ko, cache.node_ko[parent]):
                return -1
            for k in range(cache.node_nv[parent, i]):
                vital[g, k] = cache.node_vital[parent, i, k]
            cache.inherited += 1
            return i
    return -1


@njit(cache=True)
def _from_root(rec, cache, ko_moved: bool, p: int, vital, g: int) -> int:
    """``_from_parent`` for the root entries: the entry, or -1."""
    e = cache.entry[p]
    if e < 0 or not _fits(cache.fp[e], cache.changed[0], ko_moved, rec.ko, cache.ko):
        return -1
    for k in range(cache.nv[e]):
        vital[g, k] = cache.vital[e, k]
    cache.reused += 1
    return e


@njit(cache=True)
def _from_memo(rec, cache, black, white, p: int, vital, g: int) -> int:
    """``_from_parent`` for the memo, whose read-outs serve where the stones
    on their footprints are the same: the slot, or -1."""
    base = (p % MEMO_SETS) * MEMO_WAYS
    for e in range(base, base + MEMO_WAYS):
        if cache.m_p[e] == p and _same_on(cache.m_fp[e], black, white, cache.m_black[e], cache.m_white[e], rec.ko,
                                          cache.m_ko[e]):
            for k in range(cache.m_nv[e]):
                vital[g, k] = cache.m_vital[e, k]
            cache.remembered += 1
            return e
    return -1


@njit(cache=True)
def _read_now(rec, cache, p: int, c: int, libs: int, vital, g: int, loaded: bool) -> int:
    """Read the string at ``p`` on the cache's scratch board (a copy of
    ``rec`` unless ``loaded``), its vital moves into ``vital[g]``; the
    points the reading looked at stay in ``cache.reader.seen``. Returns
    how many vital moves."""
    if not loaded:
        copy_position(cache.board, rec)
    reader = cache.reader
    seen = reader.seen
    for i in range(SET_WORDS):
        seen[i] = 0
    return read_string(cache.board, reader, p, c, libs, rec.w, vital[g])


@njit(cache=True)
def _remember(rec, cache, black, white, p: int, c: int, nv: int, vital, g: int) -> int:
    """Mode ``REUSE``: put the read-out just made for the string at ``p``
    into the memo, in the way of its set replaced next, with its footprint
    and the stones on it. Returns the slot."""
    cache.read += 1
    cache.read_nodes += cache.reader.nodes
    st = p % MEMO_SETS
    e = st * MEMO_WAYS + cache.m_next[st]
    cache.m_next[st] = (cache.m_next[st] + 1) % MEMO_WAYS
    footprint(rec, p, c, cache.reader.seen, cache.m_fp[e], cache.mark, cache.heads, cache.fp_points)
    cache.m_p[e] = p
    _keep_on(cache.m_fp[e], black, white, cache.m_black[e], cache.m_white[e], rec.ko, cache.m_ko, e)
    cache.m_nv[e] = nv
    for k in range(nv):
        cache.m_vital[e, k] = vital[g, k]
    return e


@njit(cache=True)
def _keep_root_entry(rec, cache, p: int, c: int, nv: int, vital, g: int) -> None:
    """Mode ``KEEP_ROOT``: the read-out just made for the string at ``p``
    becomes a root entry, with its footprint."""
    e = cache.entries
    cache.entries = e + 1
    cache.entry[p] = e
    footprint(rec, p, c, cache.reader.seen, cache.fp[e], cache.mark, cache.heads, cache.fp_points)
    cache.nv[e] = nv
    for k in range(nv):
        cache.vital[e, k] = vital[g, k]


@njit(cache=True)
def _string_vitals(rec, cache, mode: int, black, white, p: int, libs: int, vital, g: int, use_root: bool,
                   root_ko_moved: bool, parent: int, parent_ko_moved: bool, loaded: bool):
    """The vital moves of the string at ``p`` (head ``g``, ``libs``
    liberties) into ``vital[g]``, from the first source that has them: the
    parent position's store, the root entries, the memo (mode ``REUSE``),
    else read now and kept as the mode says. Returns ``(nv, source, slot,
    loaded)``: how many, where from (``FROM_PARENT`` .. ``READ_NOW``), its
    slot there (-1 when read in mode ``READ``), and whether the scratch
    board holds ``rec``."""
    if parent >= 0:
        i = _from_parent(rec, cache, parent, parent_ko_moved, p, vital, g)
        if i >= 0:
            return int(cache.node_nv[parent, i]), FROM_PARENT, i, loaded
    if use_root:
        e = _from_root(rec, cache, root_ko_moved, p, vital, g)
        if e >= 0:
            return int(cache.nv[e]), FROM_ROOT, e, loaded
    if mode == REUSE:
        e = _from_memo(rec, cache, black, white, p, vital, g)
        if e >= 0:
            return int(cache.m_nv[e]), FROM_MEMO, e, loaded
    c = rec.color[p]
    nv = _read_now(rec, cache, p, c, libs, vital, g, loaded)
    e = -1
    if mode == REUSE:
        e = _remember(rec, cache, black, white, p, c, nv, vital, g)
    elif mode == KEEP_ROOT:
        _keep_root_entry(rec, cache, p, c, nv, vital, g)
    return int(nv), READ_NOW, e, True


@njit(cache=True)
def _keep_for_store(cache, kept: int, source: int, slot: int, parent: int, p: int, g: int) -> None:
    """Mode ``REUSE``: note the string at ``p`` (head ``g``) and its
    read-out's footprint (from ``source``'s ``slot``) as the ``kept``-th
    read-out this position's store keeps."""
    fp = cache.m_fp[slot]
    if source == FROM_PARENT:
        fp = cache.node_fp[parent, slot]
    elif source == FROM_ROOT:
        fp = cache.fp[slot]
    for i in range(SET_WORDS):
        cache.kept_fp[kept, i] = fp[i]
    cache.kept_p[kept] = p
    cache.kept_g[kept] = g


@njit(cache=True)
def _mark_ladder(rec, out, p: int, libs: int, first: bool, nv: int, vital, g: int) -> None:
    """Write a ladder string's stone at ``p`` into the map ``out`` and, at
    its first stone, its vital moves."""
    n = rec.n
    w = rec.w
    y = p // w - 1
    x = p - (y + 1) * w - 1
    out[y * n + x] = LADDER_DEATH if libs == 1 else LADDER_ESCAPABLE
    if not first:  # the vital moves are written once, at the string's first stone
        return
    for i in range(nv):
        a = vital[g, i]
        out[(a // w - 1) * n + a % w - 1] = LADDER_TAKE if libs == 1 else LADDER_ATARI


@njit(cache=True)
def _end_keep_root(rec, cache, black, white) -> None:
    """Mode ``KEEP_ROOT``: the root entries now belong to ``rec``."""
    for i in range(SET_WORDS):
        cache.black[i] = black[i]
        cache.white[i] = white[i]
    cache.n = rec.n
    cache.ko = rec.ko
    cache.ready = 1


@njit(cache=True)
def _ladder_pass(rec, out, cache, mode: int, stones, libs_at) -> None:
    """``ladder_map``'s loop over the stones of short strings, in raster
    order, each string's vital moves found at its first stone
    (``_string_vitals``). ``mode`` ``READ``: read every string;
    ``KEEP_ROOT``: also keep each string's read-out and footprint as
    ``cache``'s root entries; ``REUSE``: take a string's read-out from the
    parent position's store, else from the root entries, else from the
    memo, else read it (and remember it), and store this position's
    read-outs (module docstring). ``stones``: ``rec``'s stone sets (modes
    ``KEEP_ROOT`` and ``REUSE``); ``libs_at``: each action's liberties
    (``board.liberties_per_action``)."""
    npts = _start_pass(rec, out, cache, libs_at)
    if mode == REUSE and npts == 0:
        return  # nothing to read, nothing its children could take
    black = stones[0]
    white = stones[1]
    if mode == KEEP_ROOT:
        _clear_root_entries(cache, rec.w)
    use_root = False
    root_ko_moved = False
    parent = -1
    parent_ko_moved = False
    if mode == REUSE:
        use_root, root_ko_moved, parent, parent_ko_moved = _find_stores(rec, cache, black, white)
    pts = cache.pts
    verdict = cache.verdict
    nvital = cache.nvital
    vital = cache.vital_at
    kept = 0
    loaded = False
    for j in range(npts):
        p = np.int64(pts[j])
        g = rec.parent[p]
        if verdict[g] == 2:
            continue
        libs = rec.libs[g]
        first = verdict[g] == 0
        if first:
            if libs >= 3:
                verdict[g] = 2
                continue
            nv, source, slot, loaded = _string_vitals(rec, cache, mode, black, white, p, libs, vital, g, use_root,
                                                      root_ko_moved, parent, parent_ko_moved, loaded)
            if mode == REUSE and kept < NODE_STRINGS:
                _keep_for_store(cache, kept, source, slot, parent, p, g)
                kept += 1
            nvital[g] = nv
            if nv == 0:
                verdict[g] = 2
                continue
            verdict[g] = 1
        _mark_ladder(rec, out, p, libs, first, nvital[g], vital, g)
    if mode == KEEP_ROOT:
        _end_keep_root(rec, cache, black, white)
    elif mode == REUSE and kept > 0:
        _store_node(rec, cache, black, white, parent, kept, cache.kept_p, cache.kept_fp, cache.kept_g, nvital, vital)


@njit(cache=True)
def _store_node(rec, cache, black, white, parent: int, kept: int, kept_p, kept_fp, kept_g, nvital,
                vital) -> None:
    """Store ``rec``'s read-outs as a position of ``cache``, in the way of
    its set stored longest ago (never over ``parent``, read just now)."""
    key = _position_key(rec.hash, rec.to_move)
    e = _find_node(cache, key)
    if e < 0:
        base = int(key % np.uint64(NODE_SETS)) * NODE_WAYS
        e = base
        for k in range(base + 1, base + NODE_WAYS):
            if cache.node_stamp[k] < cache.node_stamp[e]:
                e = k
    if e == parent:
        return
    cache.stamp += 1
    cache.node_key[e] = key
    cache.node_stamp[e] = cache.stamp
    cache.node_ko[e] = rec.ko
    for i in range(SET_WORDS):
        cache.node_black[e, i] = black[i]
        cache.node_white[e, i] = white[i]
    cache.node_count[e] = kept
    for j in range(kept):
        cache.node_p[e, j] = kept_p[j]
        for i in range(SET_WORDS):
            cache.node_fp[e, j, i] = kept_fp[j, i]
        g = kept_g[j]
        nv = nvital[g]
        cache.node_nv[e, j] = nv
        for k in range(nv):
            cache.node_vital[e, j, k] = vital[g, k]


@njit(cache=True)
def ladder_map(rec, out) -> None:
    """Fill ``out[N*N]`` (int8) with Sayuri's ladder codes (``NOT_LADDER`` ...
    ``LADDER_TAKE``) for the board record ``rec``."""
    caches = np.empty(1, LADDER_CACHE_DTYPE)  # only its working memory is used in this mode
    _read_all(rec, out, caches)


@njit(cache=True)
def _read_all(rec, out, caches) -> None:
    """``ladder_map`` with ``caches[0]`` as working memory (the array is
    passed whole: a record taken from it in the caller would leave the
    array unreferenced, and freed, during the pass)."""
    stones = np.empty((3, SET_WORDS), np.uint64)  # not looked at in this mode
    libs_at = caches[0].libs_at[:rec.n * rec.n]
    liberties_per_action(rec, libs_at)
    _ladder_pass(rec, out, caches[0], READ, stones, libs_at)


@njit(cache=True)
def ladder_map_keep(rec, out, cache) -> None:
    """``ladder_map``, keeping every read-out with its footprint as the
    root entries of ``cache`` (a ``LADDER_CACHE_DTYPE`` record) for
    ``ladder_map_reuse`` at positions that follow from this one."""
    stones = np.empty((3, SET_WORDS), np.uint64)
    stone_sets(rec, stones[0], stones[1], stones[2])
    libs_at = cache.libs_at[:rec.n * rec.n]
    liberties_per_action(rec, libs_at)
    _ladder_pass(rec, out, cache, KEEP_ROOT, stones, libs_at)


@njit(cache=True)
def ladder_map_reuse(rec, out, cache, stones, libs_at) -> None:
    """``ladder_map`` for ``rec``, taking read-outs from ``cache`` where
    their footprints hold the same stones (module docstring: the parent
    position's store, the root entries, the memo), reading the others;
    keeps ``rec``'s read-outs for the positions that follow it. The same
    map as ``ladder_map``, cheaper when positions differ by a few moves
    far from most strings or share strings and their surroundings (the
    nodes of a search tree). ``stones``: ``rec``'s stone sets
    (``[3, SET_WORDS]``, ``pointset.stone_sets``); ``libs_at``: each
    action's liberties (``board.liberties_per_action``), which the caller
    also needs for its liberty planes."""
    _ladder_pass(rec, out, cache, REUSE, stones, libs_at)


def new_ladder_cache() -> np.ndarray:
    """An empty cache (an array of one ``LADDER_CACHE_DTYPE`` record)."""
    return np.zeros(1, LADDER_CACHE_DTYPE)
