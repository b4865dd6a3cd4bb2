"""Input encoders: board record -> uint8 planes for the network.

Vocabulary
----------
encoder   a named, versioned way to turn a board record (``go/board.py``)
          into ``planes`` uint8 planes ``out[C, N, N]`` for the side to
          move. A network records the encoder it was trained with (its
          NetConfig and weights file); engines look it up by name here.
encode    the encoder's compiled function ``encode(rec, out)``: ``rec`` is a
          board record (``arr[0]``), ``out`` a C-contiguous ``[C, N, N]``
          uint8 view (usually one row of the batcher's pinned input
          buffer). Every cell of ``out`` is written (no need to clear it).
          Row ``y = 0`` is GTP row 1, column ``x`` is the GTP column, so
          plane cell ``[y, x]`` is action ``y * N + x``. It is a numba
          dispatcher: call it from Python, or pass it as an argument to
          other compiled functions and call it there.
own/opp   colours relative to the side to move at the current position
          (also for the history planes).

``docs/features.md`` lists every plane of every encoder.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from .go.board import BLACK, HISTORY, NO_KO

DEFAULT_ENCODER = "simple-v1"


@dataclass(frozen=True)
class Encoder:
    name: str
    planes: int
    encode: Any  # numba dispatcher: encode(rec, out[C, N, N] uint8) -> None

    def alloc(self, n: int, batch: int | None = None) -> np.ndarray:
        """A zeroed ``[C, n, n]`` (or ``[batch, C, n, n]``) uint8 buffer."""
        shape = (self.planes, n, n) if batch is None else (batch, self.planes, n, n)
        return np.zeros(shape, dtype=np.uint8)

    def __call__(self, arr: np.ndarray) -> np.ndarray:
        """Encode one board (a record array of shape (1,) or a record) into
        a fresh ``[C, N, N]`` array. Convenience for tests and tools."""
        rec = arr[0] if isinstance(arr, np.ndarray) and arr.shape == (1,) else arr
        out = self.alloc(int(rec["n"]))
        self.encode(rec, out)
        return out


# --------------------------------------------------------------------------
# simple-v1

SIMPLE_V1_PLANES = 2 * HISTORY + 1 + 1 + 1 + 6  # 25
# plane indices (see docs/features.md)
P_HISTORY = 0  # 2k: own stones k plies ago, 2k+1: opponent stones k plies ago
P_BLACK_TO_MOVE = 2 * HISTORY  # 16
P_ONES = P_BLACK_TO_MOVE + 1  # 17
P_KO = P_ONES + 1  # 18
P_OWN_LIBS = P_KO + 1  # 19, 20, 21: own strings with 1, 2, 3+ liberties
P_OPP_LIBS = P_OWN_LIBS + 3  # 22, 23, 24: opponent strings with 1, 2, 3+


@njit(cache=True)
def encode_simple_v1(rec, out) -> None:
    """AlphaZero-style planes plus ko and liberty planes; 25 planes."""
    n = rec.n
    w = rec.w
    own = np.int8(rec.to_move)
    opp = np.int8(3 - rec.to_move)
    hist = rec.hist  # [HISTORY, MAX_P] int8 colours on the padded board
    color = rec.color
    libs = rec.libs
    parent = rec.parent
    move_num = rec.move_num
    for k in range(HISTORY):
        po = out[2 * k]
        pp = out[2 * k + 1]
        if k <= move_num:
            h = hist[(rec.hist_pos - k) % HISTORY]
            for y in range(n):
                base = (y + 1) * w + 1
                for x in range(n):
                    c = h[base + x]
                    po[y, x] = np.uint8(c == own)
                    pp[y, x] = np.uint8(c == opp)
        else:
            for y in range(n):
                for x in range(n):
                    po[y, x] = 0
                    pp[y, x] = 0
    stm = np.uint8(1) if rec.to_move == BLACK else np.uint8(0)
    pb = out[P_BLACK_TO_MOVE]
    p1 = out[P_ONES]
    pk = out[P_KO]
    for y in range(n):
        for x in range(n):
            pb[y, x] = stm
            p1[y, x] = 1
            pk[y, x] = 0
    ko = rec.ko
    if ko != NO_KO:
        pk[ko // w - 1, ko % w - 1] = 1
    o1 = out[P_OWN_LIBS]
    o2 = out[P_OWN_LIBS + 1]
    o3 = out[P_OWN_LIBS + 2]
    q1 = out[P_OPP_LIBS]
    q2 = out[P_OPP_LIBS + 1]
    q3 = out[P_OPP_LIBS + 2]
    for y in range(n):
        base = (y + 1) * w + 1
        for x in range(n):
            p = base + x
            c = color[p]
            lib = libs[parent[p]]
            is_own = c == own
            is_opp = c == opp
            o1[y, x] = np.uint8(is_own and lib == 1)
            o2[y, x] = np.uint8(is_own and lib == 2)
            o3[y, x] = np.uint8(is_own and lib >= 3)
            q1[y, x] = np.uint8(is_opp and lib == 1)
            q2[y, x] = np.uint8(is_opp and lib == 2)
            q3[y, x] = np.uint8(is_opp and lib >= 3)


@njit(cache=True)
def encode_many(encode, recs, idx, out) -> None:
    """``encode(recs[idx[i]], out[i])`` for every i (benchmarks, batch tools).

    ``recs`` is an array of board records, ``out`` ``[len(idx), C, N, N]``."""
    for i in range(idx.shape[0]):
        encode(recs[idx[i]], out[i])


ENCODERS: dict[str, Encoder] = {
    "simple-v1": Encoder("simple-v1", SIMPLE_V1_PLANES, encode_simple_v1),
}


def get_encoder(name: str = DEFAULT_ENCODER) -> Encoder:
    try:
        return ENCODERS[name]
    except KeyError:
        raise ValueError(f"unknown encoder {name!r}; known: {sorted(ENCODERS)}") from None


def encode_game(game: Any, name: str = DEFAULT_ENCODER) -> np.ndarray:
    """Planes ``[C, N, N]`` for a ``go.game.Game`` (Python convenience)."""
    return get_encoder(name)(game.arr)
