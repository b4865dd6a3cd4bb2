"""Play a move so that it can be taken back: ``go/board.py``'s
``play_position`` with an undo record.

Vocabulary
----------
undo record   an int64 array of ``UNDO_LEN`` slots that ``play_undoable``
              fills with what its move overwrites: the scalar fields (ko,
              side to move, passes, move number, last move, hash, the
              mover's capture count), the new stone's point and its old
              string fields, each adjacent string's head with its liberty
              count before the move, the heads of the captured strings and
              each merge of two strings (the surviving head, the merged
              head, the survivor's liberties before it). A move changes at
              most four strings of each kind, so the record has a fixed
              size whatever the strings' lengths.
undo          ``undo_play(rec, u)`` restores ``rec`` exactly (every field
              ``play_position`` writes; the history ring is not touched by
              either) to the board before the move recorded in ``u``.
              Records are undone last in, first out: a stack of them, one
              per ply, lets a search play and take back moves on one board
              instead of copying a board per node (the ladder reader).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .board import EMPTY, NO_KO, PASS, ZOBRIST, merge_groups, neighbour, remove_group

# slots of an undo record
_KO, _TO_MOVE, _PASSES, _MOVE_NUM, _LAST, _HASH, _CAPS = 0, 1, 2, 3, 4, 5, 6
_P, _OLD_PARENT, _OLD_NXT, _OLD_SIZE, _OLD_LIBS = 7, 8, 9, 10, 11
_N_ADJ, _ADJ = 12, 13  # 4 x (head, liberties before)
_N_CAP, _CAP = 21, 22  # 4 x head
_N_MERGE, _MERGE = 26, 27  # 4 x (big, small, big's liberties before)
UNDO_LEN = 39
UNDO_P = _P  # the slot of the move's point (PASS for a pass)
UNDO_N_CAP = _N_CAP  # the slot of the number of strings the move captured


@njit(cache=True)
def play_undoable(rec, p: int, u) -> int:
    """``play_position(rec, p)`` (the side to move plays legal ``p``, or
    PASS; returns the stones captured), writing what it overwrites into the
    undo record ``u`` for ``undo_play``."""
    c = rec.to_move
    o = 3 - c
    u[_KO] = rec.ko
    u[_TO_MOVE] = c
    u[_PASSES] = rec.passes
    u[_MOVE_NUM] = rec.move_num
    u[_LAST] = rec.last_move
    u[_HASH] = np.int64(rec.hash)
    u[_CAPS] = rec.captures[c]
    u[_P] = p
    rec.move_num += 1
    rec.last_move = p
    rec.to_move = o
    if p == PASS:
        rec.passes += 1
        rec.ko = NO_KO
        return 0
    rec.passes = 0
    w = np.int64(rec.w)
    pu = np.uint64(p)
    u[_OLD_PARENT] = rec.parent[pu]
    u[_OLD_NXT] = rec.nxt[pu]
    u[_OLD_SIZE] = rec.size[pu]
    u[_OLD_LIBS] = rec.libs[pu]
    rec.color[pu] = c
    rec.parent[pu] = p
    rec.nxt[pu] = p
    rec.size[pu] = 1
    rec.hash ^= ZOBRIST[c, p]
    libs = 0
    n_adj = 0
    for d in range(4):
        q = neighbour(p, w, d)
        cq = rec.color[q]
        if cq == EMPTY:
            libs += 1
        elif cq == c or cq == o:
            g = rec.parent[q]
            fresh = True
            for i in range(n_adj):
                if u[_ADJ + 2 * i] == g:
                    fresh = False
            if fresh:
                u[_ADJ + 2 * n_adj] = g
                u[_ADJ + 2 * n_adj + 1] = rec.libs[np.uint16(g)]
                n_adj += 1
                rec.libs[np.uint16(g)] -= 1
    u[_N_ADJ] = n_adj
    rec.libs[pu] = libs
    captured = 0
    cap_point = NO_KO
    n_cap = 0
    for d in range(4):
        q = neighbour(p, w, d)
        if rec.color[q] == o and rec.libs[np.uint16(rec.parent[q])] == 0:
            u[_CAP + n_cap] = rec.parent[q]
            n_cap += 1
            captured += remove_group(rec, rec.parent[q])
            cap_point = np.int64(q)
    u[_N_CAP] = n_cap
    n_merge = 0
    for d in range(4):
        q = neighbour(p, w, d)
        if rec.color[q] == c:
            g = rec.parent[q]
            mine = rec.parent[pu]
            if g != mine:
                big, small = (g, mine) if rec.size[g] >= rec.size[mine] else (mine, g)
                u[_MERGE + 3 * n_merge] = big
                u[_MERGE + 3 * n_merge + 1] = small
                u[_MERGE + 3 * n_merge + 2] = rec.libs[big]
                n_merge += 1
                merge_groups(rec, big, small)
    u[_N_MERGE] = n_merge
    rec.captures[c] += captured
    head = rec.parent[pu]
    if captured == 1 and rec.size[head] == 1 and rec.libs[head] == 1:
        rec.ko = cap_point
    else:
        rec.ko = NO_KO
    return captured


@njit(cache=True)
def undo_play(rec, u) -> None:
    """Take back the move recorded in ``u`` by ``play_undoable`` (the last
    one played on ``rec`` that is not yet taken back)."""
    c = u[_TO_MOVE]
    o = 3 - c
    p = u[_P]
    if p != PASS:
        w = np.int64(rec.w)
        for i in range(u[_N_MERGE] - 1, -1, -1):
            big = u[_MERGE + 3 * i]
            small = u[_MERGE + 3 * i + 1]
            tmp = rec.nxt[big]  # the splice is its own inverse
            rec.nxt[big] = rec.nxt[small]
            rec.nxt[small] = tmp
            rec.size[big] -= rec.size[small]
            rec.libs[big] = u[_MERGE + 3 * i + 2]
            s = small
            while True:
                rec.parent[np.uint64(s)] = small
                s = rec.nxt[np.uint64(s)]
                if s == small:
                    break
        for i in range(u[_N_CAP] - 1, -1, -1):
            g = u[_CAP + i]
            s = g
            while True:  # put the stone back; it is no longer a liberty of its neighbours
                rec.color[np.uint64(s)] = o
                h0 = -1
                h1 = -1
                h2 = -1
                for d in range(4):
                    q = neighbour(s, w, d)
                    if rec.color[q] == c:
                        h = rec.parent[q]
                        if h != h0 and h != h1 and h != h2:
                            rec.libs[h] -= 1
                            if h0 < 0:
                                h0 = h
                            elif h1 < 0:
                                h1 = h
                            else:
                                h2 = h
                s = rec.nxt[np.uint64(s)]
                if s == g:
                    break
        for i in range(u[_N_ADJ] - 1, -1, -1):
            rec.libs[u[_ADJ + 2 * i]] = u[_ADJ + 2 * i + 1]
        rec.color[p] = EMPTY
        rec.parent[p] = u[_OLD_PARENT]
        rec.nxt[p] = u[_OLD_NXT]
        rec.size[p] = u[_OLD_SIZE]
        rec.libs[p] = u[_OLD_LIBS]
    rec.ko = u[_KO]
    rec.to_move = c
    rec.passes = u[_PASSES]
    rec.move_num = u[_MOVE_NUM]
    rec.last_move = u[_LAST]
    rec.hash = np.uint64(u[_HASH])
    rec.captures[c] = u[_CAPS]
