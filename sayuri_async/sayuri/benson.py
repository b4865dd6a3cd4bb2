"""Pass-alive and pass-dead areas (Benson) and Sayuri's score area, compiled.

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
score area  Tromp-Taylor ownership (stones, and empty points reached by one
            colour only), overwritten by each colour's safe area, black
            first then white (Sayuri's ``Board::ComputeScoreArea``, area
            rules).

Both follow ``src/game/board.cc`` of Sayuri; arrays are on our padded board
(``go/board.py``): ``p = (y + 1) * W + x + 1``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..go.board import BLACK, BORDER, EMPTY, MAX_P, WHITE


@njit(cache=True)
def _label(mask, n: int, w: int, lab, stack) -> int:
    """4-connected components of the on-board points where ``mask`` is true;
    ``lab[p]`` = 1.. (0 elsewhere). Returns the count."""
    for p in range(w * w):
        lab[p] = 0
    k = 0
    for y in range(n):
        for x in range(n):
            p0 = (y + 1) * w + x + 1
            if not mask[p0] or lab[p0] != 0:
                continue
            k += 1
            lab[p0] = k
            top = 0
            stack[top] = p0
            top += 1
            while top > 0:
                top -= 1
                p = stack[top]
                for q in (p - w, p - 1, p + 1, p + w):
                    if mask[q] and lab[q] == 0:
                        lab[q] = k
                        stack[top] = q
                        top += 1
    return k


@njit(cache=True)
def _diag_pass_dead(color, n: int, w: int, c: int, occ, region, rid: int, inner) -> bool:
    """Sayuri's IsPassDeadRegion for region ``rid`` of ``region`` (points
    with ``occ`` false), from the point of view of the opponent of ``c``."""
    o = 3 - c
    e0 = -1
    e1 = -1
    eyes = 0
    for y in range(n):
        for x in range(n):
            p = (y + 1) * w + x + 1
            if region[p] != rid:
                continue
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
                elif not inner[q] and occ[q]:
                    mine += 1
            if (border == 0 and mine > 1) or (border > 0 and mine > 0):
                continue
            if eyes == 0:
                e0 = p
            elif eyes == 1:
                e1 = p
            eyes += 1
    if eyes == 2:
        d = e1 - e0
        if d == 1 or d == -1 or d == w or d == -w:
            eyes = 1
    return eyes < 2


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
    if eyes == 2:
        d = e1 - e0
        if d == 1 or d == -1 or d == w or d == -w:
            eyes = 1
    if eyes < 2:
        for i in range(n * n):
            result[i] = 1


@njit(cache=True)
def pass_alive_area(rec, c: int, result) -> None:
    """OR colour ``c``'s safe area (pass-alive strings, their vital regions,
    pass-dead regions) into ``result[N*N]`` (uint8 0/1)."""
    n = rec.n
    w = rec.w
    m = w * w
    color = rec.color
    has_c = False
    for p in range(m):
        if color[p] == c:
            has_c = True
            break
    if not has_c:  # no string, and no region can be vital: it has empty points
        _all_dead(rec, c, result)
        return
    stack = np.empty(MAX_P, np.int32)
    occ = np.zeros(MAX_P, np.bool_)  # Sayuri's "ocupied == c"
    free = np.zeros(MAX_P, np.bool_)  # on board and not c
    for p in range(m):
        occ[p] = color[p] == c
        free[p] = color[p] != c and color[p] != BORDER
    region = np.empty(MAX_P, np.int32)
    nreg = _label(free, n, w, region, stack)
    # potential vital regions
    vital = np.ones(nreg + 1, np.bool_)
    vital[0] = False
    for p in range(m):
        r = region[p]
        if r == 0 or not vital[r]:
            continue
        if color[p] == EMPTY:
            touch = False
            for q in (p - w, p - 1, p + 1, p + w):
                if occ[q]:
                    touch = True
                    break
            if not touch:
                vital[r] = False
    nvital = 0
    for r in range(1, nreg + 1):
        nvital += vital[r]
    if nvital < 2:  # no string can have two vital regions: all fall, and with them every vital region
        _all_dead(rec, c, result)
        return
    strings = np.empty(MAX_P, np.int32)
    nstr = _label(occ, n, w, strings, stack)
    # Benson's iteration. adj[s, r]: region r touches string s; touch[s, r]:
    # empty points of r next to s, so r is healthy for s when it equals
    # empties[r]. Both are fixed; only the vital flags change.
    adj = np.zeros((nstr + 1, nreg + 1), np.bool_)
    touch = np.zeros((nstr + 1, nreg + 1), np.int32)
    empties = np.zeros(nreg + 1, np.int32)
    for p in range(m):
        r = region[p]
        if r > 0 and color[p] == EMPTY:
            empties[r] += 1
            a0 = 0
            a1 = 0
            a2 = 0
            for q in (p - w, p - 1, p + 1, p + w):
                s = strings[q]
                if s > 0 and s != a0 and s != a1 and s != a2:
                    touch[s, r] += 1
                    if a0 == 0:
                        a0 = s
                    elif a1 == 0:
                        a1 = s
                    else:
                        a2 = s
        s = strings[p]
        if s > 0:
            for q in (p - w, p - 1, p + 1, p + w):
                if region[q] > 0:
                    adj[s, region[q]] = True
    alive = np.ones(nstr + 1, np.bool_)
    alive[0] = False
    changed = True
    while changed:
        changed = False
        for s in range(1, nstr + 1):
            if not alive[s]:
                continue
            nvital = 0
            for r in range(1, nreg + 1):
                if adj[s, r] and vital[r] and touch[s, r] == empties[r]:
                    nvital += 1
            if nvital < 2:
                alive[s] = False
                changed = True
                for r in range(1, nreg + 1):
                    if adj[s, r]:
                        vital[r] = False
    for p in range(m):
        s = strings[p]
        if s > 0 and not alive[s]:
            occ[p] = False
    left = False
    for s in range(1, nstr + 1):
        left = left or alive[s]
    for r in range(1, nreg + 1):
        left = left or vital[r]
    if not left:
        _all_dead(rec, c, result)
        return
    # pass-alive strings and their vital regions
    for y in range(n):
        for x in range(n):
            p = (y + 1) * w + x + 1
            s = strings[p]
            r = region[p]
            if (s > 0 and alive[s]) or (r > 0 and vital[r]):
                result[y * n + x] = 1
                occ[p] = True
    # pass-dead regions among what is left
    for p in range(m):
        free[p] = color[p] != BORDER and not occ[p]
    nreg2 = _label(free, n, w, region, stack)
    inner = np.zeros(MAX_P, np.bool_)
    outside = np.empty(MAX_P, np.bool_)
    holes = np.empty(MAX_P, np.int32)
    for rid in range(1, nreg2 + 1):
        # holes: components of the other points that do not touch the edge
        for p in range(m):
            outside[p] = color[p] != BORDER and region[p] != rid
        nh = _label(outside, n, w, holes, stack)
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
        if _diag_pass_dead(color, n, w, c, occ, region, rid, inner):
            for y in range(n):
                for x in range(n):
                    if region[(y + 1) * w + x + 1] == rid:
                        result[y * n + x] = 1


@njit(cache=True)
def reach_area(rec, owner) -> None:
    """Tromp-Taylor owner per action into ``owner[N*N]`` (int8): BLACK,
    WHITE, or EMPTY for points reached by both or neither."""
    n = rec.n
    w = rec.w
    color = rec.color
    stack = np.empty(MAX_P, np.int32)
    reach = np.zeros((3, MAX_P), np.bool_)
    for c in (BLACK, WHITE):
        top = 0
        for y in range(n):
            for x in range(n):
                p = (y + 1) * w + x + 1
                if color[p] == c:
                    reach[c, p] = True
                    stack[top] = p
                    top += 1
        while top > 0:
            top -= 1
            p = stack[top]
            for q in (p - w, p - 1, p + 1, p + w):
                if color[q] == EMPTY and not reach[c, q]:
                    reach[c, q] = True
                    stack[top] = q
                    top += 1
    for y in range(n):
        for x in range(n):
            p = (y + 1) * w + x + 1
            b = reach[BLACK, p]
            wh = reach[WHITE, p]
            owner[y * n + x] = BLACK if b and not wh else (WHITE if wh and not b else EMPTY)


@njit(cache=True)
def area_planes(rec, own: int, safe, owner) -> None:
    """``safe[N*N]`` (uint8): both colours' safe areas; ``owner[N*N]`` (int8):
    Sayuri's area-rule score owner (BLACK, WHITE or EMPTY)."""
    n = rec.n
    nn = n * n
    for i in range(nn):
        safe[i] = 0
    reach_area(rec, owner)
    tmp = np.zeros(nn, np.uint8)
    for c in (BLACK, WHITE):
        for i in range(nn):
            tmp[i] = 0
        pass_alive_area(rec, c, tmp)
        for i in range(nn):
            if tmp[i]:
                owner[i] = c
                safe[i] = 1
