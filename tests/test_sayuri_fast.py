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
from sayuri_async.sayuri.encoder import ENCODER, PLANES
from sayuri_async.sayuri.ladder import ladder_map, ladder_map_keep, ladder_map_reuse, new_ladder_cache


@pytest.mark.parametrize("n,roots", [(2, 10), (5, 20), (9, 30), (13, 10), (19, 10), (25, 3)])
def test_planes_equal_the_reference(n, roots):
    r = compare_with_reference(n, roots, 3, seed=100 + n)
    assert r["positions"] == 4 * roots
    assert r["mismatches"] == 0


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
