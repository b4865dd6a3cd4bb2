"""The ladder reader on one board with play/undo gives the maps of the
reader it replaced (``helpers_ladder_ref.py``: a board copy per node), on
random positions full of short strings, and leaves the position alone."""
from __future__ import annotations

import numpy as np
import pytest
from helpers_ladder_ref import ladder_map_ref, read_string as ref_read_string

from sayuri_async.go import board as B
from sayuri_async.encoders.ladder import ladder_map, new_ladder_cache
from sayuri_async.encoders.ladder_reader import MAX_DEPTH, SEL_WIDTH, read_string
from sayuri_async.encoders.pointset import SET_WORDS


@pytest.mark.slow
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


def _reference_read(arr: np.ndarray, p: int, c: int, libs: int) -> tuple[int, list[int], int, np.ndarray]:
    """(vital moves, the moves, nodes, candidate set) of the copying reader."""
    d = MAX_DEPTH + 1
    S = np.empty(d, B.BOARD_DTYPE)
    S[0] = arr[0]
    nodes = np.zeros(1, np.int64)
    vital = np.zeros(2, np.int32)
    seen = np.zeros(SET_WORDS, np.uint64)
    nv = ref_read_string(arr[0], S, np.empty((d, SEL_WIDTH), np.int32), np.zeros(d, np.int32),
                         np.zeros(d, np.int32), np.zeros(d, np.bool_), np.zeros(d, np.int32), nodes, p, c, libs,
                         int(arr[0]["w"]), vital, seen)
    return nv, sorted(vital[:nv].tolist()), int(nodes[0]), seen


@pytest.mark.slow
def test_each_read_out_searches_the_same_tree_as_the_copying_reader():
    """Per string: the same vital moves, the same candidate moves and the
    same number of nodes. The reader skips work the copying one does (the
    prey's walk for captures where the moves since its last turn changed
    none of them, its liberties after a plain extension): a candidate list
    in another order or with a capture missing shows in the node count."""
    rng = np.random.default_rng(12)
    cache = new_ladder_cache()
    reader = cache[0]["reader"]
    strings = deep = 0
    for n in (9, 13, 19):
        for _ in range(120):  # sparse boards too: ladders run far there
            arr = B.random_board(n, int(rng.integers(n * n // 20, n * n // 4)), rng)
            rec = arr[0]
            w = int(rec["w"])
            heads = set()
            for y in range(n):
                for x in range(n):
                    p = (y + 1) * w + x + 1
                    c = int(rec["color"][p])
                    g = int(rec["parent"][p])
                    if c not in (B.BLACK, B.WHITE) or g in heads or int(rec["libs"][g]) > 2:
                        continue
                    heads.add(g)
                    libs = int(rec["libs"][g])
                    want = _reference_read(arr, p, c, libs)
                    board = arr.copy()
                    reader["seen"][:] = 0
                    vital = np.zeros(2, np.int16)
                    nv = read_string(board[0], reader, p, c, libs, w, vital)
                    got = (nv, sorted(vital[:nv].tolist()), int(reader["nodes"]), reader["seen"])
                    assert got[:3] == want[:3], (n, p)
                    assert np.array_equal(got[3], want[3]), (n, p)
                    strings += 1
                    deep += got[2] >= 100
    assert strings > 500 and deep > 30  # many read-outs, and deep ones
