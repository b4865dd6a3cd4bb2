"""Values and winrates.

Vocabulary
----------
value    a position's worth for the side to move, in ``[-1, 1]`` (win minus
         loss): what the network's WDL head and the search's backed-up Q
         give.
winrate  the same as a probability of winning, in ``[0, 1]``: what GTP
         analysis, SGF comments, resignation thresholds and Gumbel's
         ``sigma`` read.
"""
from __future__ import annotations

from typing import TypeVar

import numpy as np

V = TypeVar("V", float, np.ndarray)


def winrate(value: V) -> V:
    """``value`` (a number or an array) as a winrate: ``(value + 1) / 2``."""
    return (value + 1.0) / 2.0
