"""The footprint of a ladder read-out is sound: a position that holds the
same stones on it (and the same ko point, or one off it) reads the string
the same, move for move.

Each case reads every string of one or two liberties of a random position
(uniformly random moves, or moves that keep their own eyes), makes its
footprint, then plays random legal moves off the footprint, keeps the new
position where the stones on the footprint and the ko rule still hold,
and reads the string there again: the same vital moves, and the same
number of nodes (the read-out looked at nothing that changed).
"""
from __future__ import annotations

import numpy as np
import pytest

from sayuri_async.go import board as B
from sayuri_async.encoders.ladder import LADDER_CACHE_DTYPE
from sayuri_async.encoders.ladder_footprint import footprint
from sayuri_async.encoders.ladder_reader import read_string
from sayuri_async.encoders.pointset import SET_WORDS, has


def _read(arr: np.ndarray, cache, p: int) -> tuple[int, tuple[int, ...], int, np.ndarray]:
    """(vital moves, the moves, nodes, seen) of the string at ``p`` of ``arr[0]``."""
    rec = arr[0]
    g = int(rec["parent"][p])
    board = arr.copy()
    reader = cache["reader"]
    reader["seen"][:] = 0
    vital = np.zeros(2, np.int16)
    nv = read_string(board[0], reader, p, int(rec["color"][p]), int(rec["libs"][g]), int(rec["w"]), vital)
    assert np.array_equal(board["color"], arr["color"]), "the read-out left its board as it was"
    return nv, tuple(int(v) for v in vital[:nv]), int(reader["nodes"]), reader["seen"].copy()


def _same_on(fp: np.ndarray, a, b) -> bool:
    """Whether boards ``a`` and ``b`` hold the same stones on ``fp`` and
    the same ko point or one off ``fp`` in both."""
    m = int(a["w"]) ** 2
    pts = [q for q in range(m) if has(fp, q)]
    if any(a["color"][q] != b["color"][q] for q in pts):
        return False
    ka, kb = int(a["ko"]), int(b["ko"])
    return ka == kb or not ((ka and has(fp, ka)) or (kb and has(fp, kb)))


def _off_footprint_moves(arr: np.ndarray, fp: np.ndarray, rng: np.random.Generator, count: int) -> np.ndarray:
    """``arr`` after up to ``count`` random legal moves (either colour) on
    empty points off ``fp``."""
    out = arr.copy()
    rec = out[0]
    n, w = int(rec["n"]), int(rec["w"])
    for _ in range(count):
        free = [(y + 1) * w + x + 1 for y in range(n) for x in range(n)
                if rec["color"][(y + 1) * w + x + 1] == B.EMPTY and not has(fp, (y + 1) * w + x + 1)]
        if not free:
            break
        rng.shuffle(free)
        rec["to_move"] = int(rng.integers(1, 3))
        for q in free[:8]:
            if B.is_simple_legal(rec, q):
                B.play(rec, q)
                break
    return out


def _eye_keeping_board(n: int, moves: int, rng: np.random.Generator) -> np.ndarray:
    """Random moves that do not fill the mover's own one-point eyes."""
    arr = B.new_board(n, 7.5)
    rec = arr[0]
    w = n + 2
    for _ in range(moves):
        pts = [(y + 1) * w + x + 1 for y in range(n) for x in range(n)]
        rng.shuffle(pts)
        played = False
        for q in pts:
            if rec["color"][q] != B.EMPTY or not B.is_simple_legal(rec, q):
                continue
            me = int(rec["to_move"])
            if all(rec["color"][q + d] in (me, B.BORDER) for d in (-1, 1, -w, w)):
                continue
            B.play(rec, q)
            played = True
            break
        if not played:
            B.play(rec, B.PASS)
    return arr


def _cases(n: int, count: int, seed: int):
    rng = np.random.default_rng(seed)
    for k in range(count):
        moves = int(rng.integers(n * n // 4, n * n))
        arr = B.random_board(n, moves, rng) if k % 2 == 0 else _eye_keeping_board(n, moves, rng)
        yield arr, rng


@pytest.mark.slow
@pytest.mark.parametrize("n,count,seed", [(9, 60, 1), (13, 30, 2), (19, 24, 3)])
def test_reads_the_same_wherever_the_footprint_holds(n: int, count: int, seed: int) -> None:
    cache = np.zeros(1, LADDER_CACHE_DTYPE)[0:1]
    c = cache[0]
    fp = np.zeros(SET_WORDS, np.uint64)
    checked = 0
    for arr, rng in _cases(n, count, seed):
        rec = arr[0]
        w = int(rec["w"])
        seen_heads = set()
        for q in range(w * w):
            col = int(rec["color"][q])
            if col not in (B.BLACK, B.WHITE):
                continue
            g = int(rec["parent"][q])
            if g in seen_heads or rec["libs"][g] > 2:
                continue
            seen_heads.add(g)
            nv, vital, nodes, seen = _read(arr, c, q)
            footprint(rec, q, col, seen, fp, c["mark"], c["heads"], c["fp_points"])
            assert not c["mark"].any(), "footprint leaves its marks clear"
            for _ in range(3):
                other = _off_footprint_moves(arr, fp, rng, int(rng.integers(1, 6)))
                if not _same_on(fp, rec, other[0]):
                    continue  # a capture reached the footprint, or the ko moved onto it
                assert _read(other, c, q)[:3] == (nv, vital, nodes), (n, q, vital)
                checked += 1
    assert checked > 100
