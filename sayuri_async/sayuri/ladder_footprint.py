"""The footprint of a ladder read-out: the points whose stones decide it.

Vocabulary
----------
seen        the point set (``pointset.py``) of the candidate moves a
            read-out tried (``ladder_reader.read_string`` fills it).
footprint   ``footprint(rec, p, c, seen, fp, mark)``: a point set holding
            every point whose stone (or emptiness) the read-out of the
            string at ``p`` looked at, directly or through a liberty count
            (see the function). Two positions with the same stones on the
            footprint, and the same ko point or one outside it, read that
            string the same.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..go.board import BLACK, MAX_P, WHITE
from .pointset import low_bit

MAX_STRINGS = MAX_P // 2 + 1  # strings a board can hold


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
def footprint(rec, p: int, c: int, seen, fp, mark) -> None:
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
    follows). ``mark`` (``[MAX_P]`` bool or uint8, all false) is scratch, left all
    false."""
    w = np.int64(rec.w)
    for i in range(fp.shape[0]):
        fp[i] = 0
    color = rec.color
    parent = rec.parent
    heads = np.empty(MAX_STRINGS + 1, np.int32)
    nh = 0
    heads[0] = parent[p]
    mark[parent[p]] = True
    nh = 1
    for i in range(seen.shape[0]):  # the candidates: the set bits only, in raster order
        word = seen[i]
        while word:
            b = low_bit(word)
            word ^= np.uint64(1) << np.uint64(b)
            x = np.int64(i * 64 + b)
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
