"""Pass-alive and pass-dead areas (Benson), compiled: safe areas, idle and barred points.

Vocabulary
----------
region      a maximal 4-connected set of points not holding a stone of the
            colour ``c`` under study (empty points and opponent stones).
vital       a region is vital to ``c`` when each of its points is an
            opponent stone or an empty point next to a ``c`` stone; it stays
            vital to a string when every empty point of it touches that
            string (Benson's "healthy" region).
pass-alive  a ``c`` string with at least two vital regions, after strings
            without them are removed one by one until nothing changes
            (Benson's algorithm: the opponent cannot capture it even if ``c``
            always passes).
pass-dead   a region left after the pass-alive strings and their vital
            regions are taken out in which the opponent cannot make two
            potential eyes (Sayuri's greedy test: a point with no ``c``
            neighbour and few ``c`` diagonals, two adjacent candidates
            counting as one, enclosed holes counting as the opponent's;
            Sayuri's hole list walk skips the entry after each hole it drops
            for touching the edge, and so does ours).
safe area   pass-alive strings, their vital regions and pass-dead regions,
            of both colours (Sayuri's ``Board::ComputeSafeArea``).
idle point  an empty point of a vital region of ``c``'s pass-alive strings
            that holds no opponent stone: ``c`` gains nothing by playing
            there under either scoring rule (the points are ``c``'s and the
            strings cannot be captured), and it may fill an eye
            (``pass_alive_idle``; the search keeps the mover out of them).
barred point  an empty point of the other colour's safe area: no stone of
            ``c`` can live there, so a move there only wastes search
            (``opponent_safe_points``, ``opponent_safe_from``; Sayuri's
            search leaves the whole safe area out).

Sayuri's score area, which overwrites Tromp-Taylor ownership with the safe
areas, is ``score_area.py``'s.

Both follow ``src/game/board.cc`` of Sayuri; arrays are on our padded board
(``go/board.py``): ``p = (y + 1) * W + x + 1``.

How it is computed: first, with point sets (``pointset.py``), whether two
regions can be vital at all: a fill of the points not ``c``'s from the
empty points with no ``c`` neighbour covers every region that is not, and
when fewer than two regions are left (nearly always before the end of a
game) nothing of ``c``'s is pass-alive and the pass-dead test is that of a
board without vital regions. Otherwise regions are labelled by a flood
fill that also lists each region's points (one fill, ``_components``,
serves regions and holes); strings are the board record's own
(``parent`` heads), and Benson's iteration runs on the (string, vital
region) pairs with a work list, so its cost follows the pairs, not strings
x regions. The pass-dead test of a region first counts its potential eyes
with every diagonal hole taken as inner and as not inner: the exact hole
labelling (a flood fill of the whole board per region) is needed only when
those two counts disagree on the answer. ``tests/helpers_sayuri_ref.py``
keeps the straightforward version these must agree with.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..go.board import BLACK, BORDER, EMPTY, MAX_P
from .pointset import SET_WORDS, fill, is_empty, low_bit, neighbours, stone_sets

__all__ = ["add_safe_area", "opponent_safe_from", "opponent_safe_points", "pass_alive_area", "pass_alive_idle"]

@njit(cache=True)
def _components(mask, n: int, w: int, lab, pts, starts) -> int:
    """4-connected components of the on-board points where ``mask`` is true;
    ``lab[p]`` = 1.. (0 elsewhere), numbered in raster order of their first
    point, and component ``k`` holds ``pts[starts[k - 1]:starts[k]]`` (in
    flood-fill order). Returns the count."""
    for p in range(w * w):
        lab[p] = 0
    k = 0
    end = 0
    starts[0] = 0
    for y in range(n):
        for x in range(n):
            p0 = (y + 1) * w + x + 1
            if not mask[p0] or lab[p0] != 0:
                continue
            k += 1
            lab[p0] = k
            head = end
            pts[end] = p0
            end += 1
            while head < end:
                p = pts[head]
                head += 1
                for q in (p - w, p - 1, p + 1, p + w):
                    if mask[q] and lab[q] == 0:
                        lab[q] = k
                        pts[end] = q
                        end += 1
            starts[k] = end
    return k


@njit(cache=True)
def _fewer_than_two_eyes(eyes: int, e0: int, e1: int, w: int) -> bool:
    """Whether ``eyes`` potential eyes (at most two, the first at ``e0``,
    the second at ``e1``) count as fewer than two: two adjacent ones count
    as one."""
    if eyes == 2:
        d = e1 - e0
        return d == 1 or d == -1 or d == w or d == -w
    return eyes < 2


@njit(cache=True)
def _eyes_dead(color, w: int, c: int, occ, pts, lo: int, hi: int, inner, mode: int) -> bool:
    """Sayuri's IsPassDeadRegion for the region ``pts[lo:hi]``: fewer than
    two potential eyes of the opponent of ``c`` (two adjacent ones count as
    one). Diagonal holes: ``mode`` 0 none inner, 1 all inner, 2 ``inner``."""
    o = 3 - c
    e0 = -1
    e1 = -1
    eyes = 0
    for i in range(lo, hi):
        p = pts[i]
        if color[p] == o:
            continue
        ok = True
        for q in (p - w, p - 1, p + 1, p + w):
            if color[q] != BORDER and occ[q]:
                ok = False
                break
        if not ok:
            continue
        border = 0
        mine = 0
        for q in (p - w - 1, p - w + 1, p + w - 1, p + w + 1):
            if color[q] == BORDER:
                border += 1
            elif occ[q] and (mode == 0 or (mode == 2 and not inner[q])):
                mine += 1
        if (border == 0 and mine > 1) or (border > 0 and mine > 0):
            continue
        if eyes == 0:
            e0 = p
        elif eyes == 1:
            e1 = p
        eyes += 1
        if eyes > 2:
            return False
    return _fewer_than_two_eyes(eyes, e0, e1, w)


@njit(cache=True)
def _inner_holes(color, n: int, w: int, region, rid: int, inner, work, holes, pts, starts) -> None:
    """``inner[p]``: p lies in a hole of region ``rid`` (a component of the
    other points that does not touch the edge), with Sayuri's list walk."""
    m = w * w
    for p in range(m):
        work[p] = color[p] != BORDER and region[p] != rid
    nh = _components(work, n, w, holes, pts, starts)
    edge = np.zeros(nh + 1, np.bool_)
    for p in range(m):
        h = holes[p]
        if h > 0 and not edge[h]:
            for q in (p - w, p - 1, p + 1, p + w):
                if color[q] == BORDER:
                    edge[h] = True
                    break
    # Sayuri drops holes touching the edge from its list of holes while
    # walking it, which skips the hole after each one dropped (that one
    # stays "inner" even when it touches the edge); done the same here.
    keep = np.ones(nh + 1, np.bool_)
    order = np.arange(nh + 1)
    cnt = nh
    i = 0
    while i < cnt:
        h = order[1 + i]
        if edge[h]:
            keep[h] = False
            for j in range(1 + i, nh):
                order[j] = order[j + 1]
            cnt -= 1
        i += 1
    for p in range(m):
        h = holes[p]
        inner[p] = h > 0 and keep[h]


@njit(cache=True)
def _all_dead(rec, c: int, result) -> None:
    """The pass-dead test when nothing of ``c`` is alive and no region is
    vital: the board is one region and every point but an opponent stone is
    a potential eye, so it is pass-dead only with fewer than two of them (or
    two adjacent ones)."""
    n = rec.n
    w = rec.w
    o = 3 - c
    eyes = 0
    e0 = -1
    e1 = -1
    for y in range(n):
        for x in range(n):
            p = (y + 1) * w + x + 1
            if rec.color[p] != o:
                if eyes == 0:
                    e0 = p
                elif eyes == 1:
                    e1 = p
                eyes += 1
                if eyes > 2:
                    return
    if _fewer_than_two_eyes(eyes, e0, e1, w):
        for i in range(n * n):
            result[i] = 1


@njit(cache=True)
def _few_vital(mine, theirs, empty, w: int, sets) -> bool:
    """Whether fewer than two regions are vital to the colour of the stones
    ``mine`` (point sets; ``theirs`` the other colour's): the regions
    holding an empty point with no stone of ``mine`` next to it are not,
    so the vital ones are what a fill from those points leaves of the
    points not ``mine``. ``sets``: scratch, ``[4, SET_WORDS]`` uint64."""
    near = sets[0]
    neighbours(mine, w, near)
    far = sets[1]
    region = sets[2]
    for i in range(SET_WORDS):
        far[i] = empty[i] & ~near[i]
        region[i] = theirs[i] | empty[i]
    open_ = sets[3]
    fill(far, region, w, open_)
    vital = far  # reused: the points of the vital regions
    first = -1
    for i in range(SET_WORDS):
        vital[i] = region[i] & ~open_[i]
        if first < 0 and vital[i]:
            first = i
    if first < 0:
        return True
    seed = near  # reused: the vital region of the first point
    for i in range(SET_WORDS):
        seed[i] = 0
    seed[first] = np.uint64(1) << np.uint64(low_bit(vital[first]))
    fill(seed, vital, w, open_)
    for i in range(SET_WORDS):
        if open_[i] != vital[i]:
            return False
    return True


@njit(cache=True)
def _vital_regions(rec, c: int, mask, lab, pts, starts):
    """Label the regions of colour ``c`` (``_components`` over ``mask``,
    which it fills) and find which are vital to ``c``. Returns ``(nreg,
    vital, empties, nvital)``: regions are numbered from 1, ``vital[r]``
    says region ``r`` is vital, ``empties[r]`` counts its empty points."""
    n = rec.n
    w = rec.w
    color = rec.color
    for p in range(w * w):
        mask[p] = color[p] != c and color[p] != BORDER
    nreg = _components(mask, n, w, lab, pts, starts)
    vital = np.empty(nreg + 1, np.bool_)
    empties = np.zeros(nreg + 1, np.int32)
    vital[0] = False
    nvital = 0
    for r in range(1, nreg + 1):
        v = True
        e = 0
        for i in range(starts[r - 1], starts[r]):
            p = pts[i]
            if color[p] == EMPTY:
                e += 1
                if v and color[p - w] != c and color[p - 1] != c and color[p + 1] != c and color[p + w] != c:
                    v = False
        vital[r] = v
        empties[r] = e
        nvital += v
    return nreg, vital, empties, nvital


@njit(cache=True)
def _number_strings(rec, c: int, sidx, heads) -> int:
    """Number the strings of colour ``c`` (the board record's own, by
    head): ``sidx[head]`` is a string's number, ``heads[s]`` its head.
    Returns how many."""
    w = rec.w
    m = w * w
    color = rec.color
    parent = rec.parent
    nstr = 0
    for p in range(w + 1, m - w - 1):
        if color[p] == c:
            sidx[parent[p]] = -1
    for p in range(w + 1, m - w - 1):
        if color[p] == c:
            h = parent[p]
            if sidx[h] < 0:
                sidx[h] = nstr
                heads[nstr] = h
                nstr += 1
    return nstr


@njit(cache=True)
def _string_region_pairs(rec, c: int, nreg: int, nstr: int, vital, pts, starts, sidx):
    """The (string, vital region) pairs of colour ``c``, a region's pairs
    contiguous: ``(npair, pair_s, pair_r, touch, rfirst)``, where
    ``touch[k]`` counts the empty points of pair ``k``'s region next to its
    string and region ``r``'s pairs are ``rfirst[r] .. rfirst[r + 1]``."""
    w = rec.w
    color = rec.color
    parent = rec.parent
    cap = 4 * w * w
    pair_s = np.empty(cap, np.int32)
    pair_r = np.empty(cap, np.int32)
    touch = np.empty(cap, np.int32)
    rfirst = np.zeros(nreg + 2, np.int32)
    mark = np.full(nstr, -1, np.int32)
    pidx = np.empty(nstr, np.int32)
    npair = 0
    for r in range(1, nreg + 1):
        rfirst[r] = npair
        if not vital[r]:
            continue
        for i in range(starts[r - 1], starts[r]):
            p = pts[i]
            empty = color[p] == EMPTY
            s0 = -1
            s1 = -1
            s2 = -1
            for q in (p - w, p - 1, p + 1, p + w):
                if color[q] != c:
                    continue
                s = sidx[parent[q]]
                if mark[s] != r:
                    mark[s] = r
                    pidx[s] = npair
                    pair_s[npair] = s
                    pair_r[npair] = r
                    touch[npair] = 0
                    npair += 1
                if empty and s != s0 and s != s1 and s != s2:
                    touch[pidx[s]] += 1
                    if s0 < 0:
                        s0 = s
                    elif s1 < 0:
                        s1 = s
                    else:
                        s2 = s
    rfirst[nreg + 1] = npair
    return npair, pair_s, pair_r, touch, rfirst


@njit(cache=True)
def _pass_alive_strings(nstr: int, npair: int, vital, empties, pair_s, pair_r, touch, rfirst):
    """Benson's iteration on the pairs: a string with fewer than two healthy
    vital regions falls, and its regions stop being vital (``vital`` is
    updated), until nothing changes. Returns ``alive[nstr]``."""
    cnt = np.zeros(nstr, np.int32)
    scount = np.zeros(nstr + 1, np.int32)
    healthy = np.empty(npair, np.bool_)
    for k in range(npair):
        healthy[k] = touch[k] == empties[pair_r[k]]
        if healthy[k]:
            cnt[pair_s[k]] += 1
        scount[pair_s[k] + 1] += 1
    for s in range(nstr):
        scount[s + 1] += scount[s]
    by_s = np.empty(npair, np.int32)
    fill = scount[:nstr].copy()
    for k in range(npair):
        s = pair_s[k]
        by_s[fill[s]] = k
        fill[s] += 1
    alive = np.ones(nstr, np.bool_)
    todo = np.empty(nstr, np.int32)
    top = 0
    for s in range(nstr):
        if cnt[s] < 2:
            todo[top] = s
            top += 1
    while top > 0:
        top -= 1
        s = todo[top]
        if not alive[s]:
            continue
        alive[s] = False
        for j in range(scount[s], scount[s + 1]):
            r = pair_r[by_s[j]]
            if not vital[r]:
                continue
            vital[r] = False
            for k2 in range(rfirst[r], rfirst[r + 1]):
                s2 = pair_s[k2]
                if healthy[k2] and alive[s2]:
                    cnt[s2] -= 1
                    if cnt[s2] == 1:
                        todo[top] = s2
                        top += 1
    return alive


@njit(cache=True)
def _any_true(a, lo: int) -> bool:
    for i in range(lo, a.shape[0]):
        if a[i]:
            return True
    return False


@njit(cache=True)
def _mark_pass_alive(rec, c: int, alive, sidx, lab, vital, empties, starts, result, idle, want_idle: bool, occ) -> None:
    """OR the pass-alive strings of ``c`` and their vital regions into
    ``result`` and ``occ`` (padded), and with ``want_idle`` the regions'
    points when the region holds no opponent stone into ``idle``."""
    n = rec.n
    w = rec.w
    color = rec.color
    parent = rec.parent
    for y in range(n):
        for x in range(n):
            p = (y + 1) * w + x + 1
            if color[p] == c:
                if alive[sidx[parent[p]]]:
                    occ[p] = True
                    result[y * n + x] = 1
            else:
                r = lab[p]
                if vital[r]:
                    occ[p] = True
                    result[y * n + x] = 1
                    if want_idle and empties[r] == starts[r] - starts[r - 1]:
                        idle[y * n + x] = 1


@njit(cache=True)
def _mark_pass_dead(rec, c: int, occ, mask, lab, pts, starts, result) -> None:
    """OR the pass-dead regions of what ``occ`` leaves into ``result``
    (module docstring: two potential-eye counts, the exact inner holes only
    where they disagree)."""
    n = rec.n
    w = rec.w
    color = rec.color
    for p in range(w * w):
        mask[p] = color[p] != BORDER and not occ[p]
    nreg = _components(mask, n, w, lab, pts, starts)
    inner = np.empty(0, np.bool_)
    work = np.empty(0, np.bool_)
    holes = np.empty(0, np.int32)
    hole_pts = np.empty(0, np.int32)
    hole_starts = np.empty(0, np.int32)
    for rid in range(1, nreg + 1):
        lo = starts[rid - 1]
        hi = starts[rid]
        dead = _eyes_dead(color, w, c, occ, pts, lo, hi, inner, 1)
        if not dead and _eyes_dead(color, w, c, occ, pts, lo, hi, inner, 0):
            if inner.shape[0] == 0:
                inner = np.empty(MAX_P, np.bool_)
                work = np.empty(MAX_P, np.bool_)
                holes = np.empty(MAX_P, np.int32)
                hole_pts = np.empty(MAX_P, np.int32)
                hole_starts = np.empty(MAX_P + 1, np.int32)
            _inner_holes(color, n, w, lab, rid, inner, work, holes, hole_pts, hole_starts)
            dead = _eyes_dead(color, w, c, occ, pts, lo, hi, inner, 2)
        if dead:
            for i in range(lo, hi):
                p = pts[i]
                result[(p // w - 1) * n + p % w - 1] = 1


@njit(cache=True)
def add_safe_area(rec, c: int, result, idle, want_idle: bool, black, white, empty, sets) -> None:
    """OR colour ``c``'s safe area into ``result[N*N]``; with ``want_idle``
    also set ``idle[N*N]`` (cleared first) at ``c``'s idle points.
    ``black``, ``white``, ``empty``: ``rec``'s stone sets (``pointset.py``);
    ``sets``: scratch, ``[4, SET_WORDS]`` uint64. The steps: the quick test
    that fewer than two regions can be vital, the regions, the strings,
    their (string, vital region) pairs, Benson's iteration, then the
    pass-alive strings with their regions and the pass-dead regions; where
    nothing of ``c``'s is pass-alive, every region is tested for pass-dead
    (``_all_dead``)."""
    if want_idle:
        for i in range(rec.n * rec.n):
            idle[i] = 0
    mine = black if c == BLACK else white
    if is_empty(mine):  # no string, and no region can be vital: it has empty points
        _all_dead(rec, c, result)
        return
    if _few_vital(mine, white if c == BLACK else black, empty, rec.w, sets):
        # no string can have two vital regions: all fall, and with them every vital region
        _all_dead(rec, c, result)
        return
    mask = np.empty(MAX_P, np.bool_)
    lab = np.empty(MAX_P, np.int32)
    pts = np.empty(MAX_P, np.int32)
    starts = np.empty(MAX_P + 1, np.int32)
    nreg, vital, empties, nvital = _vital_regions(rec, c, mask, lab, pts, starts)
    if nvital < 2:  # no string can have two vital regions: all fall, and with them every vital region
        _all_dead(rec, c, result)
        return
    sidx = np.empty(MAX_P, np.int32)
    heads = np.empty(MAX_P // 2 + 1, np.int32)
    nstr = _number_strings(rec, c, sidx, heads)
    npair, pair_s, pair_r, touch, rfirst = _string_region_pairs(rec, c, nreg, nstr, vital, pts, starts, sidx)
    alive = _pass_alive_strings(nstr, npair, vital, empties, pair_s, pair_r, touch, rfirst)
    if not _any_true(alive, 0) and not _any_true(vital, 1):
        _all_dead(rec, c, result)
        return
    occ = np.zeros(MAX_P, np.bool_)  # pass-alive strings and their vital regions: occupied from here on
    _mark_pass_alive(rec, c, alive, sidx, lab, vital, empties, starts, result, idle, want_idle, occ)
    _mark_pass_dead(rec, c, occ, mask, lab, pts, starts, result)


@njit(cache=True)
def pass_alive_area(rec, c: int, result) -> None:
    """OR colour ``c``'s safe area (pass-alive strings, their vital regions,
    pass-dead regions) into ``result[N*N]`` (uint8 0/1)."""
    black = np.empty(SET_WORDS, np.uint64)
    white = np.empty(SET_WORDS, np.uint64)
    empty = np.empty(SET_WORDS, np.uint64)
    stone_sets(rec, black, white, empty)
    add_safe_area(rec, c, result, result[:0], False, black, white, empty, np.empty((4, SET_WORDS), np.uint64))


@njit(cache=True)
def pass_alive_idle(rec, c: int, idle) -> int:
    """``idle[N*N]`` (uint8): 1 at colour ``c``'s idle points (module
    docstring), 0 elsewhere. Returns how many."""
    nn = rec.n * rec.n
    tmp = np.zeros(nn, np.uint8)
    black = np.empty(SET_WORDS, np.uint64)
    white = np.empty(SET_WORDS, np.uint64)
    empty = np.empty(SET_WORDS, np.uint64)
    stone_sets(rec, black, white, empty)
    add_safe_area(rec, c, tmp, idle, True, black, white, empty, np.empty((4, SET_WORDS), np.uint64))
    k = 0
    for i in range(nn):
        k += idle[i]
    return k


@njit(cache=True)
def opponent_safe_points(rec, c: int, idle) -> int:
    """Set ``idle[N*N]`` (uint8) to 1 also at ``c``'s barred points (module
    docstring): the empty points of the other colour's safe area. Returns
    how many it set that were 0."""
    nn = rec.n * rec.n
    area = np.zeros(nn, np.uint8)
    pass_alive_area(rec, 3 - c, area)
    return _bar(rec, area, idle)


@njit(cache=True)
def opponent_safe_from(rec, c: int, safe, owner, idle) -> int:
    """``opponent_safe_points`` from ``area_planes``' output for ``rec``
    (``safe``: both safe areas, ``owner``: whose, the other colour's where
    it is ``3 - c``): no second Benson pass."""
    nn = rec.n * rec.n
    area = np.zeros(nn, np.uint8)
    o = 3 - c
    for i in range(nn):
        area[i] = safe[i] != 0 and owner[i] == o
    return _bar(rec, area, idle)


@njit(cache=True)
def _bar(rec, area, idle) -> int:
    """Set ``idle`` at the empty points of ``area``; how many were 0."""
    n = rec.n
    w = rec.w
    k = 0
    for y in range(n):
        for x in range(n):
            i = y * n + x
            if area[i] and idle[i] == 0 and rec.color[(y + 1) * w + x + 1] == EMPTY:
                idle[i] = 1
                k += 1
    return k
