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
cache       a ``LADDER_CACHE_DTYPE`` record a search keeps (``tree.py``'s
            workspace field ``sayuri``, ``encoder.LEAF_DTYPE``), with three stores of read-outs:

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
        ("libs_at", np.int16, (MAX_P,)),  # per action: its string's liberties (modes 0 and 1 compute them here)
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


@njit(cache=True)
def _ladder_pass(rec, out, cache, mode: int, stones, libs_at) -> None:
    """``ladder_map``'s loop. ``mode`` 0: read every string; 1: also keep
    each string's read-out and footprint as ``cache``'s root entries; 2:
    take a string's read-out from the parent position's store, else from
    the root entries, else from the memo, else read it (and remember it),
    and store this position's read-outs (module docstring). ``stones``:
    ``rec``'s stone sets (modes 1 and 2); ``libs_at``: each action's
    liberties (``board.liberties_per_action``)."""
    n = rec.n
    w = rec.w
    for i in range(n * n):
        out[i] = NOT_LADDER
    pts = cache.pts
    npts = short_points(libs_at, n, pts)
    if mode == 2 and npts == 0:
        return  # nothing to read, nothing its children could take
    verdict = cache.verdict
    vital = cache.vital_at
    nvital = cache.nvital
    for i in range(npts):
        g = rec.parent[pts[i]]
        verdict[g] = 0
        nvital[g] = 0
    mark = cache.mark
    black = stones[0]
    white = stones[1]
    if mode == 1:
        cache.ready = 0
        cache.entries = 0
        for p in range(w * w):
            cache.entry[p] = -1
    use_root = False
    root_changed = cache.changed[0]
    root_ko_moved = False
    parent = -1
    parent_changed = cache.changed[1]
    parent_ko_moved = False
    kept_p = cache.kept_p
    kept_fp = cache.kept_fp
    kept_g = cache.kept_g
    kept = 0
    if mode == 2:
        if cache.memo_n != n:
            for e in range(MEMO):
                cache.m_p[e] = 0
            for e in range(NODES):
                cache.node_key[e] = 0
            cache.memo_n = n
        if cache.ready == 1 and cache.n == n:
            use_root = True
            _diff(black, white, cache.black, cache.white, root_changed)
            root_ko_moved = rec.ko != cache.ko
        if rec.move_num >= 1:
            h = rec.hist_hash[(rec.hist_pos - 1) % HISTORY]
            parent = _find_node(cache, _position_key(h, 3 - rec.to_move))
            if parent >= 0:
                _diff(black, white, cache.node_black[parent], cache.node_white[parent], parent_changed)
                parent_ko_moved = rec.ko != cache.node_ko[parent]
    loaded = False
    for j in range(npts):  # the stones of short strings, in raster order
        p = np.int64(pts[j])
        y = p // w - 1
        x = p - (y + 1) * w - 1
        c = rec.color[p]
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
            src = -1  # where the footprint comes from: 0 parent, 1 root, 2 memo, 3 read now
            slot = -1
            if parent >= 0:
                for i in range(cache.node_count[parent]):
                    if cache.node_p[parent, i] == p:
                        if _fits(cache.node_fp[parent, i], parent_changed, parent_ko_moved, rec.ko,
                                 cache.node_ko[parent]):
                            nv = cache.node_nv[parent, i]
                            for k in range(nv):
                                vital[g, k] = cache.node_vital[parent, i, k]
                            cache.inherited += 1
                            src = 0
                            slot = i
                        break
            if nv < 0 and use_root:
                e = cache.entry[p]
                if e >= 0 and _fits(cache.fp[e], root_changed, root_ko_moved, rec.ko, cache.ko):
                    nv = cache.nv[e]
                    for k in range(nv):
                        vital[g, k] = cache.vital[e, k]
                    cache.reused += 1
                    src = 1
                    slot = e
            if nv < 0 and mode == 2:
                base = (p % MEMO_SETS) * MEMO_WAYS
                for e in range(base, base + MEMO_WAYS):
                    if cache.m_p[e] == p and _same_on(cache.m_fp[e], black, white, cache.m_black[e],
                                                      cache.m_white[e], rec.ko, cache.m_ko[e]):
                        nv = cache.m_nv[e]
                        for k in range(nv):
                            vital[g, k] = cache.m_vital[e, k]
                        cache.remembered += 1
                        src = 2
                        slot = e
                        break
            if nv < 0:
                if not loaded:
                    copy_position(cache.board, rec)
                    loaded = True
                reader = cache.reader
                seen = reader.seen
                for i in range(SET_WORDS):
                    seen[i] = 0
                nv = read_string(cache.board, reader, p, c, libs, w, vital[g])
                if mode == 2:
                    cache.read += 1
                    cache.read_nodes += reader.nodes
                    st = p % MEMO_SETS
                    e = st * MEMO_WAYS + cache.m_next[st]
                    cache.m_next[st] = (cache.m_next[st] + 1) % MEMO_WAYS
                    footprint(rec, p, c, seen, cache.m_fp[e], mark, cache.heads, cache.fp_points)
                    cache.m_p[e] = p
                    _keep_on(cache.m_fp[e], black, white, cache.m_black[e], cache.m_white[e], rec.ko,
                             cache.m_ko, e)
                    cache.m_nv[e] = nv
                    for k in range(nv):
                        cache.m_vital[e, k] = vital[g, k]
                    src = 3
                    slot = e
                elif mode == 1:
                    e = cache.entries
                    cache.entries = e + 1
                    cache.entry[p] = e
                    footprint(rec, p, c, seen, cache.fp[e], mark, cache.heads, cache.fp_points)
                    cache.nv[e] = nv
                    for k in range(nv):
                        cache.vital[e, k] = vital[g, k]
            if mode == 2 and kept < NODE_STRINGS:
                fp = cache.m_fp[slot]
                if src == 0:
                    fp = cache.node_fp[parent, slot]
                elif src == 1:
                    fp = cache.fp[slot]
                for i in range(SET_WORDS):
                    kept_fp[kept, i] = fp[i]
                kept_p[kept] = p
                kept_g[kept] = g
                kept += 1
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
        for i in range(SET_WORDS):
            cache.black[i] = black[i]
            cache.white[i] = white[i]
        cache.n = n
        cache.ko = rec.ko
        cache.ready = 1
    elif mode == 2 and kept > 0:
        _store_node(rec, cache, black, white, parent, kept, kept_p, kept_fp, kept_g, nvital, vital)


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
    _ladder_pass(rec, out, caches[0], 0, stones, libs_at)


@njit(cache=True)
def ladder_map_keep(rec, out, cache) -> None:
    """``ladder_map``, keeping every read-out with its footprint as the
    root entries of ``cache`` (a ``LADDER_CACHE_DTYPE`` record) for
    ``ladder_map_reuse`` at positions that follow from this one."""
    stones = np.empty((3, SET_WORDS), np.uint64)
    stone_sets(rec, stones[0], stones[1], stones[2])
    libs_at = cache.libs_at[:rec.n * rec.n]
    liberties_per_action(rec, libs_at)
    _ladder_pass(rec, out, cache, 1, stones, libs_at)


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
    _ladder_pass(rec, out, cache, 2, stones, libs_at)


def new_ladder_cache() -> np.ndarray:
    """An empty cache (an array of one ``LADDER_CACHE_DTYPE`` record)."""
    return np.zeros(1, LADDER_CACHE_DTYPE)
