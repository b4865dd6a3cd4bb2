"""The fast ``sayuri-v3`` encoder writes the reference's planes.

``tests/helpers_sayuri_ref.py`` keeps the encoder as it was before it was
made fast; here a few hundred random positions (uniform random games and
eye-keeping ones, where pass-alive groups appear) and positions a few moves
on from them, encoded the search's way with the ladder read-outs of the
position before, must give the same bytes, and the same idle points as
``pass_alive_idle``. ``tools/check_sayuri_planes.py`` runs the same check on
10,000 positions.
"""
from __future__ import annotations

import numpy as np
import pytest

from helpers_sayuri_ref import compare_with_reference, encode_reference
from sayuri_async.go import board as B
from sayuri_async.encoders import get_encoder
from sayuri_async.encoders.sayuri_v3 import PLANES

ENCODER = get_encoder("sayuri-v3")
from sayuri_async.encoders.ladder import ladder_map, ladder_map_keep, ladder_map_reuse as _reuse_with, new_ladder_cache
from sayuri_async.encoders.pointset import SET_WORDS, stone_sets


def ladder_map_reuse(rec, out, cache):
    """``ladder.ladder_map_reuse`` with ``rec``'s stone sets and liberties per action."""
    stones = np.empty((3, SET_WORDS), np.uint64)
    stone_sets(rec, stones[0], stones[1], stones[2])
    libs_at = np.empty(int(rec["n"]) ** 2, np.int16)
    B.liberties_per_action(rec, libs_at)
    _reuse_with(rec, out, cache, stones, libs_at)


@pytest.mark.slow
@pytest.mark.parametrize("n,roots", [(2, 10), (5, 20), (9, 30), (13, 10), (19, 10), (25, 3)])
def test_planes_equal_the_reference(n, roots):
    r = compare_with_reference(n, roots, 3, seed=100 + n)
    assert r["positions"] == 4 * roots
    assert r["mismatches"] == 0


@pytest.mark.slow
def test_the_cache_is_used_and_a_stale_one_is_not_trusted():
    n = 19
    rng = np.random.default_rng(4)
    root = B.random_board(n, 200, rng)
    cache = new_ladder_cache()
    lad = np.empty(n * n, np.int8)
    ladder_map_keep(root[0], lad, cache[0])
    assert cache[0]["entries"] > 0
    want = np.empty(n * n, np.int8)
    ladder_map(root[0], want)
    got = np.empty(n * n, np.int8)
    ladder_map_reuse(root[0], got, cache[0])  # the same position: every string from the cache
    assert np.array_equal(got, want) and cache[0]["read"] == 0 and cache[0]["reused"] > 0
    other = B.random_board(n, 250, rng)  # an unrelated position: the footprints catch every change
    ladder_map(other[0], want)
    ladder_map_reuse(other[0], got, cache[0])
    assert np.array_equal(got, want)
    x = ENCODER(other)
    y = np.empty((PLANES, n, n), np.uint8)
    encode_reference(other[0], y)
    assert np.array_equal(x, y)


def _on(arr, moves, rng):
    arr = arr.copy()
    n = int(arr[0]["n"])
    mask = np.zeros(n * n + 1, np.uint8)
    for _ in range(moves):
        B.legal_actions(arr[0], mask)
        B.play(arr[0], B.action_to_point(n, int(rng.choice(np.flatnonzero(mask)))))
    return arr


def test_a_leaf_takes_its_parents_read_outs_and_only_where_they_hold():
    n = 19
    rng = np.random.default_rng(7)
    cache = new_ladder_cache()  # no root entries: only the positions' store and the memo
    want = np.empty(n * n, np.int8)
    got = np.empty(n * n, np.int8)
    for _ in range(12):
        parent = _on(B.random_board(n, 150, rng), 0, rng)
        ladder_map_reuse(parent[0], got, cache[0])
        for _ in range(6):
            child = _on(parent, 1, rng)
            ladder_map(child[0], want)
            ladder_map_reuse(child[0], got, cache[0])
            assert np.array_equal(got, want)
    assert cache[0]["inherited"] > 0 and cache[0]["read"] > 0


def test_a_wrong_parent_is_not_trusted():
    # a leaf whose history names a stored position as its parent, though
    # it is many moves on from it: the stones kept with the store decide
    n = 19
    rng = np.random.default_rng(8)
    cache = new_ladder_cache()
    got = np.empty(n * n, np.int8)
    want = np.empty(n * n, np.int8)
    bad = 0
    for _ in range(20):
        stored = B.random_board(n, 200, rng)
        ladder_map_reuse(stored[0], got, cache[0])
        leaf = _on(stored, 2 * int(rng.integers(3, 8)) + 1, rng)
        r = leaf[0]
        r["hist_hash"][(int(r["hist_pos"]) - 1) % B.HISTORY] = stored[0]["hash"]
        ladder_map(r, want)
        ladder_map_reuse(r, got, cache[0])
        bad += int(not np.array_equal(got, want))
    assert bad == 0 and cache[0]["read"] > 0


def test_point_set_fill_is_a_flood_fill():
    from sayuri_async.encoders.pointset import SET_WORDS, fill, has, stone_sets

    rng = np.random.default_rng(9)
    for n in (2, 5, 9, 19, 25):
        arr = B.random_board(n, int(rng.integers(0, n * n)), rng)
        rec = arr[0]
        black, white, empty = (np.empty(SET_WORDS, np.uint64) for _ in range(3))
        stone_sets(arr[0], black, white, empty)
        w = n + 2
        pts = [(y + 1) * w + x + 1 for y in range(n) for x in range(n)]
        seed = np.zeros(SET_WORDS, np.uint64)
        start = [p for p in pts if rec["color"][p] == B.EMPTY][:3]
        for p in start:
            seed[p >> 6] |= np.uint64(1) << np.uint64(p & 63)
        out = np.empty(SET_WORDS, np.uint64)
        fill(seed, empty, w, out)
        reached, todo = set(start), list(start)  # breadth-first over the empty points
        while todo:
            p = todo.pop()
            for q in (p - 1, p + 1, p - w, p + w):
                if rec["color"][q] == B.EMPTY and q not in reached:
                    reached.add(q)
                    todo.append(q)
        assert {p for p in pts if has(out, p)} == reached
        assert all(has(black, p) == (rec["color"][p] == B.BLACK) for p in pts)
