"""Sets of board points as bits, compiled: footprints, region fills.

Vocabulary
----------
point set   ``SET_WORDS`` uint64 words; point ``p`` of the padded board
            (``go/board.py``: ``p = (y + 1) * W + x + 1``) is bit ``p & 63``
            of word ``p >> 6``. Border points are never set by the
            functions here, so a set's neighbours (``p - 1``, ``p + 1``,
            ``p - W``, ``p + W``) need no wrap-around care: a shift that
            lands on the border column is cleared by the mask it is
            filled within.
stone sets  ``stone_sets(rec, black, white, empty)``: the points of each
            colour on the board.
fill        ``fill(seed, within, w, out)``: the points of ``within`` that
            a 4-connected path inside ``within`` joins to a point of
            ``seed``; whole regions, as a flood fill from the seed would
            find them, computed a word at a time.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..go.board import BLACK, EMPTY, MAX_P, WHITE

SET_WORDS = (MAX_P + 63) // 64
_ONE = np.uint64(1)
_DEBRUIJN = np.uint64(0x03F79D71B4CB0A89)
_CTZ = np.array([0, 1, 48, 2, 57, 49, 28, 3, 61, 58, 50, 42, 38, 29, 17, 4, 62, 55, 59, 36, 53, 51, 43, 22,
                 45, 39, 33, 30, 24, 18, 12, 5, 63, 47, 56, 27, 60, 41, 37, 16, 54, 35, 52, 21, 44, 32, 23,
                 11, 46, 26, 40, 15, 34, 20, 31, 10, 25, 14, 19, 9, 13, 8, 7, 6], np.int64)


@njit(cache=True, inline="always")
def add(s, p: int) -> None:
    """Put point ``p`` into the set ``s``."""
    s[p >> 6] |= _ONE << np.uint64(p & 63)


@njit(cache=True, inline="always")
def has(s, p: int) -> bool:
    """Whether point ``p`` is in the set ``s``."""
    return (s[p >> 6] >> np.uint64(p & 63)) & _ONE != 0


@njit(cache=True, inline="always")
def low_bit(word: np.uint64) -> int:
    """The index of the lowest set bit of a nonzero ``word``."""
    low = word & (~word + _ONE)
    return _CTZ[(low * _DEBRUIJN) >> np.uint64(58)]


@njit(cache=True)
def is_empty(s) -> bool:
    for i in range(SET_WORDS):
        if s[i]:
            return False
    return True


@njit(cache=True)
def stone_sets(rec, black, white, empty) -> None:
    """The black stones, white stones and empty points of ``rec``'s board.
    A word at a time, over every point of the padded board in order
    (border points are neither), its bits gathered in registers: no branch
    per point, and no word read back from memory between two points."""
    color = rec.color
    m = rec.w * rec.w
    for i in range(SET_WORDS):
        base = i * 64
        top = min(64, m - base)
        eb = np.uint64(0)
        bb = np.uint64(0)
        wb = np.uint64(0)
        if top > 0:
            row = color[base:base + top]
            for j in range(top):
                c = row[j]
                k = np.uint64(j)
                eb |= np.uint64(c == EMPTY) << k
                bb |= np.uint64(c == BLACK) << k
                wb |= np.uint64(c == WHITE) << k
        empty[i] = eb
        black[i] = bb
        white[i] = wb


@njit(cache=True, inline="always")
def _grow(s, out, w: int) -> None:
    """``out`` = ``s`` and its 4-neighbours (``w`` < 64)."""
    last = SET_WORDS - 1
    sw = np.uint64(w)
    rw = np.uint64(64 - w)
    for i in range(SET_WORDS):
        x = s[i]
        # p + 1 and p + w: bits move up; p - 1 and p - w: bits move down
        up1 = x << _ONE
        upw = x << sw
        dn1 = x >> _ONE
        dnw = x >> sw
        if i > 0:
            up1 |= s[i - 1] >> np.uint64(63)
            upw |= s[i - 1] >> rw
        if i < last:
            dn1 |= s[i + 1] << np.uint64(63)
            dnw |= s[i + 1] << rw
        out[i] = x | up1 | upw | dn1 | dnw


@njit(cache=True)
def neighbours(s, w: int, out) -> None:
    """``out`` = the points of ``s`` and their 4-neighbours (border points
    included: mask them off)."""
    _grow(s, out, w)


@njit(cache=True)
def fill(seed, within, w: int, out) -> None:
    """``out`` = the points of ``within`` joined to ``seed & within`` by a
    4-connected path inside ``within`` (``seed`` is left as it was).
    Sweeps grow ``out`` in place, a word at a time, until one changes
    nothing: a word grows from its neighbours as they are, the lower one
    already grown in the same sweep (growth only ever adds points of
    ``within`` next to ``out``, so the result is the same as growing the
    whole set step by step, and it comes in fewer sweeps; nor is an array
    made for the step)."""
    last = SET_WORDS - 1
    sw = np.uint64(w)
    rw = np.uint64(64 - w)
    for i in range(SET_WORDS):
        out[i] = seed[i] & within[i]
    while True:
        grew = False
        for i in range(SET_WORDS):
            x = out[i]
            g = x | (x << _ONE) | (x << sw) | (x >> _ONE) | (x >> sw)
            if i > 0:
                b = out[i - 1]
                g |= (b >> np.uint64(63)) | (b >> rw)
            if i < last:
                a = out[i + 1]
                g |= (a << np.uint64(63)) | (a << rw)
            g &= within[i]
            if g != x:
                out[i] = g
                grew = True
        if not grew:
            return
