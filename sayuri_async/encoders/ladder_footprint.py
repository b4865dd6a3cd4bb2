"""The footprint of a ladder read-out: the points whose stones decide it.

Vocabulary
----------
seen        the point set (``pointset.py``) of the candidate moves a
            read-out tried (``ladder_reader.read_string`` fills it).
footprint   ``footprint(rec, p, c, seen, fp, ...)``: a point set holding
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
from .pointset import SET_WORDS, add, low_bit, neighbours

MAX_STRINGS = MAX_P // 2 + 1  # strings a board can hold


@njit(cache=True)
def footprint(rec, p: int, c: int, seen, fp, mark, heads, points) -> None:
    """The points whose stones decide the read-out of the string at ``p``
    (colour ``c``) on ``rec``, as the bit set ``fp``: the candidate points
    (``seen``) and the stones of the strings below, each with its
    neighbours. A read-out plays and tests moves only at its candidates; a
    move (or its legality, or its liberty bounds) looks at its neighbours
    and at the strings on them. Everything else it reads is about
    strings: their stones, liberty counts and stone rings, through
    legality, liberty bounds, joins, captures and the walks of the prey and
    of hunter strings in atari. Those strings are the ones on or next to a
    candidate, and the ones next to such a string of colour ``c`` (the
    prey's side, whose neighbours may be in atari). That is enough: with
    the same stones on a string and its neighbours, no stone of its colour
    can be next to it that was not before, so it is the same string with
    the same liberties; a join looks two points from the joining stone
    only to ask whether a stone there belongs to the string it joins, and
    that string's stones are in. Two positions with the same stones on
    ``fp``, and the same ko point or one outside ``fp``, read the same (an
    untouched string also keeps its stone ring, whose order the read-out
    follows); ``tests/test_ladder_footprint.py`` plays moves off the
    footprint and reads again. The neighbours come from one growth of a
    point set (``pointset.neighbours``), which may also set border points
    and points past ``W * W``: no stone is ever there. (Until 2026-12-02
    the points within distance 2 of the candidates and of those strings
    were in too: on 92,830 leaves captured from 19x19 self-play, 16,827
    strings read out with the strings' second ring, 14,729 without either,
    17,380 with both.) Scratch, left as found: ``mark`` (``[MAX_P]`` bool
    or uint8, all false); scratch overwritten: ``heads``
    (``[MAX_STRINGS + 1]`` int32), ``points`` (``[SET_WORDS]`` uint64)."""
    w = np.int64(rec.w)
    for i in range(SET_WORDS):
        points[i] = seen[i]  # then the strings' stones: the points whose neighbours go in
    color = rec.color
    parent = rec.parent
    heads[0] = parent[p]
    mark[parent[p]] = True
    nh = 1
    for i in range(seen.shape[0]):  # the candidates: the set bits only, in raster order
        word = seen[i]
        while word:
            b = low_bit(word)
            word ^= np.uint64(1) << np.uint64(b)
            x = np.int64(i * 64 + b)
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
    for j in range(nh):  # every string found: its stones and their neighbours
        h = heads[j]
        mark[h] = False
        s = np.int64(h)
        while True:
            add(points, s)
            s = rec.nxt[s]
            if s == h:
                break
    neighbours(points, w, fp)
