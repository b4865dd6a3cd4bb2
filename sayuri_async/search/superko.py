"""Positional superko inside the search: the set of the game's positions.

Vocabulary
----------
position set  an open-addressing hash set of the game's position hashes up
              to the root: ``table`` (uint64, TABLE_SLOTS slots, of which the
              smallest power-of-two part holding twice the positions is in
              use) and ``mask`` (slots in use - 1). Stored keys are
              ``hash ^ TABLE_SALT``, so 0 marks a free slot. A probe in a
              small table stays in the CPU cache, and costs the same at move
              300 as at move 3; every move a descent plays probes it.
repeat        a move whose resulting position is in the set or on the
              descent's own path below the root (``path_hash[1..depth]``):
              illegal under positional superko (the search closes its edge).
"""
from __future__ import annotations

import numpy as np
from numba import njit

TABLE_SLOTS = 4096  # a power of two
MAX_GAME_POSITIONS = 2048  # the latest positions kept (half the slots)
TABLE_SALT = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True)
def fill_position_set(table, hashes) -> int:
    """Fill ``table`` with the last MAX_GAME_POSITIONS of ``hashes``;
    returns the mask of the part in use (64 slots at least)."""
    n = min(hashes.shape[0], MAX_GAME_POSITIONS)
    size = 64
    while size < 2 * n and size < table.shape[0]:
        size *= 2
    mask = size - 1
    for i in range(size):
        table[i] = 0
    for i in range(hashes.shape[0] - n, hashes.shape[0]):
        key = hashes[i] ^ TABLE_SALT
        j = np.int64(key & np.uint64(mask))
        while table[j] != 0 and table[j] != key:
            j = (j + 1) & mask
        table[j] = key
    return mask


@njit(cache=True)
def in_position_set(table, mask: int, h) -> bool:
    key = h ^ TABLE_SALT
    j = np.int64(key & np.uint64(mask))
    while table[j] != 0:
        if table[j] == key:
            return True
        j = (j + 1) & mask
    return False


@njit(cache=True)
def repeats_position(table, mask: int, path_hash, h, depth: int) -> bool:
    """Whether the position of hash ``h`` at ``depth`` below the root
    repeats one of the game's or of the path's (``path_hash[1..depth]``)."""
    if in_position_set(table, mask, h):
        return True
    for i in range(1, depth + 1):
        if path_hash[i] == h:
            return True
    return False
