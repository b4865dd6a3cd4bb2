"""Play a move so that it can be taken back: ``go/board.py``'s
``play_position`` with an undo record (its slots are defined there, beside
the code that fills them).

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

from .board import (EMPTY, PASS, UNDO_ADJ, UNDO_CAP, UNDO_CAPS, UNDO_HASH, UNDO_KO, UNDO_LAST, UNDO_LEN, UNDO_MERGE,
                    UNDO_MOVE_NUM, UNDO_N_ADJ, UNDO_N_CAP, UNDO_N_MERGE, UNDO_OLD_LIBS, UNDO_OLD_NXT, UNDO_OLD_PARENT,
                    UNDO_OLD_SIZE, UNDO_P, UNDO_PASSES, UNDO_TO_MOVE, neighbour, play_position)

__all__ = ["UNDO_LEN", "UNDO_N_CAP", "UNDO_P", "play_undoable", "undo_play"]


@njit(cache=True)
def play_undoable(rec, p: int, u) -> int:
    """``play_position(rec, p)`` (the side to move plays legal ``p``, or
    PASS; returns the stones captured), writing what it overwrites into the
    undo record ``u`` (``UNDO_LEN`` int64 slots) for ``undo_play``."""
    return play_position(rec, p, u)


@njit(cache=True)
def undo_play(rec, u) -> None:
    """Take back the move recorded in ``u`` by ``play_undoable`` (the last
    one played on ``rec`` that is not yet taken back)."""
    c = u[UNDO_TO_MOVE]
    o = 3 - c
    p = u[UNDO_P]
    if p != PASS:
        w = np.int64(rec.w)
        for i in range(u[UNDO_N_MERGE] - 1, -1, -1):
            big = u[UNDO_MERGE + 3 * i]
            small = u[UNDO_MERGE + 3 * i + 1]
            tmp = rec.nxt[big]  # the splice is its own inverse
            rec.nxt[big] = rec.nxt[small]
            rec.nxt[small] = tmp
            rec.size[big] -= rec.size[small]
            rec.libs[big] = u[UNDO_MERGE + 3 * i + 2]
            s = small
            while True:
                rec.parent[np.uint64(s)] = small
                s = rec.nxt[np.uint64(s)]
                if s == small:
                    break
        for i in range(u[UNDO_N_CAP] - 1, -1, -1):
            g = u[UNDO_CAP + i]
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
        for i in range(u[UNDO_N_ADJ] - 1, -1, -1):
            rec.libs[u[UNDO_ADJ + 2 * i]] = u[UNDO_ADJ + 2 * i + 1]
        rec.color[p] = EMPTY
        rec.parent[p] = u[UNDO_OLD_PARENT]
        rec.nxt[p] = u[UNDO_OLD_NXT]
        rec.size[p] = u[UNDO_OLD_SIZE]
        rec.libs[p] = u[UNDO_OLD_LIBS]
    rec.ko = u[UNDO_KO]
    rec.to_move = c
    rec.passes = u[UNDO_PASSES]
    rec.move_num = u[UNDO_MOVE_NUM]
    rec.last_move = u[UNDO_LAST]
    rec.hash = np.uint64(u[UNDO_HASH])
    rec.captures[c] = u[UNDO_CAPS]
