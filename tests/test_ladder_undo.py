"""The ladder reader on one board with play/undo gives the maps of the
reader it replaced (``helpers_ladder_ref.py``: a board copy per node), on
random positions full of short strings, and leaves the position alone."""
from __future__ import annotations

import numpy as np
from helpers_ladder_ref import ladder_map_ref

from sayuri_async.go import board as B
from sayuri_async.sayuri.ladder import ladder_map


def test_the_undo_reader_maps_every_position_as_the_copying_reader_did():
    rng = np.random.default_rng(11)
    marked = 0
    for n in (9, 13, 19):
        for _ in range(60):
            arr = B.random_board(n, int(rng.integers(n * n // 4, n * n)), rng)
            before = arr.copy()
            got = np.empty(n * n, np.int8)
            want = np.empty(n * n, np.int8)
            ladder_map(arr[0], got)
            ladder_map_ref(arr[0], want)
            assert np.array_equal(got, want)
            assert all(np.array_equal(arr[f], before[f]) for f in B.BOARD_DTYPE.names)
            marked += int(np.count_nonzero(want))
    assert marked > 500  # the positions had ladders to read
