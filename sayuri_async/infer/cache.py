"""The NN cache: network answers by position key, in flat arrays that the
compiled search reads and writes without leaving numba.

Vocabulary
----------
key       ``cache_key(rec)`` of a position as the network sees it: its
          recent positions, side to move, ko point and board size (odd, so 0
          marks an empty entry).
entry     one position's policy row ``[A]``, ``wdl [3]`` and score lead, as
          the backend returned them (in the symmetry the leaf was shown in;
          the key includes it).
slot      entries live in a direct-mapped table of ``capacity`` (a power of
          two) slots: a key's slot is ``key & (capacity - 1)``, and a new
          entry replaces whatever held its slot (the older entry is the one
          less likely to be asked for again). A lookup is one probe.
NNCache   the arrays for one board size (``keys [S]``, ``policy [S, A]``,
          ``wdl [S, 3]``, ``score [S]``; ``arrays`` holds the four as the
          compiled search's handle) plus Python-side ``get``/``put``
          used off the hot path (GTP's score estimates). An empty cache has
          zero slots: the compiled search then skips it.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from ..go import board as B


@njit(cache=True)
def cache_key(rec) -> np.uint64:
    """Hash of what the network sees: recent positions, side to move, ko."""
    k = np.uint64(0x243F6A8885A308D3)
    m = np.uint64(0x100000001B3)
    depth = min(rec.move_num, B.HISTORY - 1)
    for i in range(depth + 1):
        h = rec.hist_hash[(rec.hist_pos - i) % B.HISTORY]
        k = (k ^ h) * m
    k ^= np.uint64(rec.to_move) * np.uint64(0x9E3779B97F4A7C15)
    k ^= np.uint64(rec.ko) * np.uint64(0xC2B2AE3D27D4EB4F)
    k ^= np.uint64(rec.n) * np.uint64(0x165667B19E3779F9)
    return k | np.uint64(1)  # odd: never 0 (an empty cache slot)


@njit(cache=True)
def cache_lookup(keys, key) -> int:
    """Slot holding ``key``, or -1."""
    s = keys.shape[0]
    if s == 0:
        return -1
    j = np.int64(key & np.uint64(s - 1))
    return j if keys[j] == key else -1


@njit(cache=True)
def cache_store(cache, key, answers, row: int) -> None:
    """Copy row ``row`` of a batch's ``answers`` (policy ``[B, A]``, wdl
    ``[B, 3]``, score ``[B]``) into ``key``'s slot of ``cache``
    (``NNCache.arrays``)."""
    keys, c_policy, c_wdl, c_score = cache
    policy, wdl, score = answers
    s = keys.shape[0]
    if s == 0:
        return
    j = np.int64(key & np.uint64(s - 1))
    keys[j] = key
    for a in range(c_policy.shape[1]):
        c_policy[j, a] = policy[row, a]
    for k in range(3):
        c_wdl[j, k] = wdl[row, k]
    c_score[j] = score[row]


def capacity_for(entries: int) -> int:
    """Slots for about ``entries`` entries: the power of two at or above."""
    if entries <= 0:
        return 0
    return 1 << max(0, int(entries - 1).bit_length())


class NNCache:
    def __init__(self, entries: int, board_size: int) -> None:
        s = capacity_for(entries)
        a = board_size * board_size + 1
        self.capacity = s
        self.keys = np.zeros(s, dtype=np.uint64)  # [S]
        self.policy = np.zeros((s, a), dtype=np.float32)  # [S, A]
        self.wdl = np.zeros((s, 3), dtype=np.float32)  # [S, 3]
        self.score = np.zeros(s, dtype=np.float32)  # [S]
        # the handle the compiled search takes (search/puct.py, "handles")
        self.arrays = (self.keys, self.policy, self.wdl, self.score)

    def clear(self) -> None:
        """Forget every entry (another network now answers)."""
        self.keys[:] = 0

    def get(self, key: int) -> tuple[np.ndarray, np.ndarray, float] | None:
        """(policy [A], wdl [3], score) for ``key``, copies; None on a miss."""
        j = cache_lookup(self.keys, np.uint64(key))
        if j < 0:
            return None
        return self.policy[j].copy(), self.wdl[j].copy(), float(self.score[j])

    def put(self, key: int, policy: np.ndarray, wdl: np.ndarray, score: np.ndarray, row: int) -> None:
        cache_store(self.arrays, np.uint64(key), (policy, wdl, score), row)
