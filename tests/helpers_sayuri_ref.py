"""The ``sayuri-v3`` encoder as it stood before it was made fast: the oracle
of the fast one's tests.

Vocabulary
----------
reference   ``encode_reference(rec, out)``: every plane recomputed from the
            record with the original, straightforward code (safe areas by
            labelling every region and string and a string x region
            matrix; the ladder reader as it was, copying a board per node: ``helpers_ladder_ref.py``). The planes it
            writes were matched against Sayuri's own on thousands of
            positions (docs/sayuri.md); the fast encoder, its caches and
            its incremental ladder update must write the same bytes.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from sayuri_async.go.board import BLACK, BORDER, EMPTY, HISTORY, MAX_P, NO_KO, PASS, WHITE
from sayuri_async.encoders.sayuri_v3 import (P_AREA, P_KO, P_KOMI, P_LADDER, P_LIBS, P_NEG_KOMI, P_ONES, P_RULE,
                                         komi_count)
from sayuri_async.encoders.ladder import LADDER_ATARI, LADDER_DEATH, LADDER_ESCAPABLE, LADDER_TAKE

from helpers_ladder_ref import ladder_map_ref

HAS_HIST_MOVE = True


@njit(cache=True)
def _ring_move(rec, k: int) -> int:
    return rec.hist_move[(rec.hist_pos - k) % HISTORY]


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


@njit(cache=True)
def _fill(o, start: int, count: int, v: np.uint8) -> None:
    z = o[start:start + count]
    for i in range(count):
        z[i] = v


@njit(cache=True)
def _history(rec, o, nn: int, use_ring: bool) -> None:
    n = rec.n
    w = rec.w
    own = rec.to_move
    opp = 3 - own
    hist = rec.hist
    for k in range(HISTORY):
        base = 3 * k * nn
        if k > rec.move_num:
            _fill(o, base, 3 * nn, np.uint8(0))
            continue
        cur = hist[(rec.hist_pos - k) % HISTORY]
        for y in range(n):
            row = (y + 1) * w + 1
            r = y * n
            for x in range(n):
                c = cur[row + x]
                o[base + r + x] = np.uint8(c == own)
                o[base + nn + r + x] = np.uint8(c == opp)
        mv = base + 2 * nn
        _fill(o, mv, nn, np.uint8(0))
        if k == 0:
            p = rec.last_move
            if p != PASS and p > 0:
                o[mv + (p // w - 1) * n + p % w - 1] = 1
        elif k + 1 <= rec.move_num and k + 1 < HISTORY:
            prev = hist[(rec.hist_pos - k - 1) % HISTORY]
            for y in range(n):
                row = (y + 1) * w + 1
                for x in range(n):
                    if prev[row + x] == EMPTY and cur[row + x] != EMPTY:
                        o[mv + y * n + x] = 1
        elif use_ring and k + 1 <= rec.move_num:
            p = _ring_move(rec, k)
            if p != PASS and p > 0:
                o[mv + (p // w - 1) * n + p % w - 1] = 1


@njit(cache=True)
def encode_reference(rec, out) -> None:
    """The sayuri-v3 planes, every part recomputed from the record."""
    n = rec.n
    w = rec.w
    nn = n * n
    o = out.reshape(out.size)
    _history(rec, o, nn, HAS_HIST_MOVE)
    own = rec.to_move
    opp = 3 - own
    _fill(o, P_KO * nn, (P_RULE - P_KO) * nn, np.uint8(0))
    if rec.ko != NO_KO:
        o[P_KO * nn + (rec.ko // w - 1) * n + rec.ko % w - 1] = 1
    safe = np.empty(nn, np.uint8)
    owner = np.empty(nn, np.int8)
    area_planes(rec, own, safe, owner)
    a = P_AREA * nn
    for i in range(nn):
        mine = owner[i] == own
        theirs = owner[i] == opp
        o[a + i] = np.uint8(safe[i] != 0 and mine)
        o[a + nn + i] = np.uint8(safe[i] != 0 and theirs)
        o[a + 2 * nn + i] = np.uint8(mine)
        o[a + 3 * nn + i] = np.uint8(theirs)
    b = P_LIBS * nn
    for y in range(n):
        for x in range(n):
            p = (y + 1) * w + x + 1
            c = rec.color[p]
            if c == BLACK or c == WHITE:
                lib = rec.libs[rec.parent[p]]
                if 1 <= lib <= 4:
                    o[b + (lib - 1) * nn + y * n + x] = 1
    lad = np.empty(nn, np.int8)
    ladder_map_ref(rec, lad)
    d = P_LADDER * nn
    for i in range(nn):
        v = lad[i]
        if v == LADDER_DEATH:
            o[d + i] = 1
        elif v == LADDER_ESCAPABLE:
            o[d + nn + i] = 1
        elif v == LADDER_ATARI:
            o[d + 2 * nn + i] = 1
        elif v == LADDER_TAKE:
            o[d + 3 * nn + i] = 1
    _fill(o, P_RULE * nn, (P_ONES - P_RULE) * nn, np.uint8(0))
    komi = rec.komi if own == BLACK else -rec.komi
    pos, neg = komi_count(komi, n)
    _fill(o, P_KOMI * nn, pos, np.uint8(1))
    _fill(o, P_NEG_KOMI * nn, neg, np.uint8(1))
    _fill(o, P_ONES * nn, nn, np.uint8(1))




# --------------------------------------------------------------------------
# positions, and the comparison of the fast encoder with the reference


def eye_aware_game(n: int, moves: int, rng: np.random.Generator, pass_prob: float = 0.02) -> np.ndarray:
    """A board array after up to ``moves`` random simple-legal moves that
    never fill the mover's own one-point eyes (so pass-alive groups form,
    as in real games), with a pass now and then."""
    from sayuri_async.go import board as B

    arr = B.new_board(n)
    rec = arr[0]
    w = n + 2
    mask = np.zeros(n * n + 1, dtype=np.uint8)
    for _ in range(moves):
        B.legal_actions(rec, mask)
        c = int(rec["to_move"])
        legal = [a for a in np.flatnonzero(mask[:-1])
                 if not all(rec["color"][q] in (c, B.BORDER)
                            for p in [B.action_to_point(n, int(a))] for q in (p - 1, p + 1, p - w, p + w))]
        if not legal or rng.random() < pass_prob:
            B.play(rec, B.PASS)
            if rec["passes"] >= 2 and not legal:
                break
            continue
        B.play(rec, B.action_to_point(n, int(rng.choice(legal))))
    return arr


def compare_with_reference(n: int, roots: int, children: int, seed: int) -> dict:
    """Random positions of both kinds (uniform and eye-aware games), each
    encoded by ``encode_sayuri_v3`` and by the reference, and ``children``
    random descendants of each (1-8 moves on, or 1-2 moves on from the
    descendant before) encoded by the search's ``encode_sayuri_v3_reuse``
    with one scratch (and its ladder cache) throughout, also
    against the reference, and their idle points against ``pass_alive_idle``.
    Returns counts: positions, mismatching positions, and the ladder
    strings of descendants reused from the root entries, inherited from
    the parent, remembered and read."""
    from sayuri_async.go import board as B
    from sayuri_async.encoders.benson import pass_alive_idle
    from sayuri_async.encoders.sayuri_v3 import PLANES, encode_sayuri_v3, encode_sayuri_v3_reuse, new_scratch
    from sayuri_async.encoders.ladder import ladder_map_keep

    rng = np.random.default_rng(seed)
    leaf = new_scratch()
    want = np.empty((PLANES, n, n), np.uint8)
    got = np.empty((PLANES, n, n), np.uint8)
    idle = np.empty(n * n, np.uint8)
    idle_want = np.empty(n * n, np.uint8)
    lad = np.empty(n * n, np.int8)
    positions = bad = 0
    for r in range(roots):
        moves = int(rng.integers(0, 2 * n * n))
        root = B.random_board(n, moves, rng) if r % 2 else eye_aware_game(n, moves, rng)
        encode_reference(root[0], want)
        encode_sayuri_v3(root[0], got)
        positions += 1
        bad += int(not np.array_equal(want, got))
        ladder_map_keep(root[0], lad, leaf[0]["ladders"])
        arr = root
        for j in range(children):
            # every other child goes one or two moves on from the child
            # before it (whose read-outs the cache keeps, as a search's
            # parent node), the others 1-8 moves on from the root
            on = j > 0 and rng.random() < 0.5
            arr = arr.copy() if on else root.copy()
            mask = np.zeros(n * n + 1, np.uint8)
            for _ in range(int(rng.integers(1, 3 if on else 9))):
                B.legal_actions(arr[0], mask)
                B.play(arr[0], B.action_to_point(n, int(rng.choice(np.flatnonzero(mask)))))
            encode_reference(arr[0], want)
            k = encode_sayuri_v3_reuse(arr[0], got, leaf[0], idle)
            pass_alive_idle(arr[0], int(arr[0]["to_move"]), idle_want)
            positions += 1
            bad += int(not np.array_equal(want, got) or not np.array_equal(idle, idle_want)
                       or k != int(idle_want.sum()))
    c = leaf[0]["ladders"]
    return {"positions": positions, "mismatches": bad, "reused": int(c["reused"]), "inherited": int(c["inherited"]),
            "remembered": int(c["remembered"]), "read": int(c["read"])}
