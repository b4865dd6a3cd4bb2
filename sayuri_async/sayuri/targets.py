"""Sayuri's short-, middle- and long-term value targets from a game's per-ply values.

Vocabulary
----------
per-ply value  one number per position of a game for its side to move: the
               search's root Q (-1..1) or score lead (points).
term average   Sayuri's discounted sum over the positions from this one to
               the game's end (``src/mcts/search.cc``, after KataGo's
               short-term targets): ``sum_h (1 - lam) lam^h s_h v_{i+h}``,
               the index held at the last position once past it, ``s_h`` = +1
               when that position has the same side to move, -1 otherwise;
               ``lam = 1 / (1 + N*N * f)`` with ``f`` = 0.18 (short), 0.06
               (middle), 0.02 (long).
"""
from __future__ import annotations

import numpy as np

TERM_FACTORS = (0.18, 0.06, 0.02)  # short, middle, long


def term_averages(values: np.ndarray, to_move: np.ndarray, board_size: int) -> np.ndarray:
    """``[L, 3]`` short/middle/long-term averages of ``values`` ``[L]`` for
    the sides to move ``to_move`` ``[L]`` (any two distinct labels)."""
    values = np.asarray(values, np.float64)
    to_move = np.asarray(to_move)
    length = len(values)
    out = np.zeros((length, len(TERM_FACTORS)))
    if length == 0:
        return out
    nn = board_size * board_size
    lam = np.array([1.0 / (1.0 + nn * f) for f in TERM_FACTORS])
    h = np.arange(length)
    gamma = (1.0 - lam)[None, :] * lam[None, :] ** h[:, None]  # [L, 3]
    for i in range(length):
        idx = np.minimum(i + h, length - 1)
        signed = np.where(to_move[idx] == to_move[i], values[idx], -values[idx])
        out[i] = signed @ gamma
    return out
