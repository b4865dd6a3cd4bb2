"""Dihedral symmetries: round trips, policy/plane consistency, and features
of a transformed position equal transformed features."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from sayuri_async.encoders import get_encoder
from sayuri_async.go.game import Game
from sayuri_async.symmetry import (
    action_map, apply_board, apply_planes, apply_planes_batch, apply_policy, apply_policy_batch, inverse,
)

KS = range(8)


@pytest.mark.parametrize("n", [7, 9, 19])
def test_round_trip_and_distinct(n: int) -> None:
    rng = np.random.default_rng(n)
    x = rng.integers(0, 255, size=(2, 3, n, n)).astype(np.uint8)
    seen = set()
    for k in KS:
        y = apply_planes(x, k)
        assert y.shape == x.shape
        assert (apply_planes(y, inverse(k)) == x).all()
        assert inverse(inverse(k)) == k
        seen.add(y.tobytes())
    assert len(seen) == 8


def test_composition_is_a_group() -> None:
    x = np.arange(49).reshape(7, 7)
    images = {apply_planes(x, k).tobytes(): k for k in KS}
    for a in KS:
        for b in KS:
            assert apply_planes(apply_planes(x, a), b).tobytes() in images


def test_known_images() -> None:
    x = np.arange(4).reshape(2, 2)  # [[0, 1], [2, 3]]
    assert (apply_planes(x, 0) == x).all()
    assert (apply_planes(x, 1) == [[2, 3], [0, 1]]).all()  # rows flipped
    assert (apply_planes(x, 2) == [[1, 0], [3, 2]]).all()  # columns flipped
    assert (apply_planes(x, 4) == [[0, 2], [1, 3]]).all()  # transposed


@pytest.mark.parametrize("n", [7, 13, 19])
def test_policy_consistent_with_planes(n: int) -> None:
    rng = np.random.default_rng(0)
    for k in KS:
        m = action_map(k, n)
        for a in rng.integers(0, n * n, size=5):
            plane = np.zeros((n, n))
            plane[a // n, a % n] = 1
            pol = np.zeros(n * n + 1)
            pol[a] = 1
            tp = apply_planes(plane, k).reshape(-1)
            tq = apply_policy(pol, k, n)
            assert (tq[:-1] == tp).all() and tq[-1] == 0
            assert tq[m[a]] == 1
        pol = rng.random((4, n * n + 1))
        tq = apply_policy(pol, k, n)
        assert (tq[:, -1] == pol[:, -1]).all()  # pass stays last
        assert np.allclose(apply_policy(tq, inverse(k), n), pol)
        assert np.allclose(tq[:, m[: n * n]], pol[:, : n * n])
        own = rng.random((2, n * n))
        assert np.allclose(apply_board(own, k, n), apply_planes(own.reshape(2, n, n), k).reshape(2, -1))


def test_torch_matches_numpy() -> None:
    n = 9
    x = np.random.default_rng(1).random((3, 2, n, n)).astype(np.float32)
    p = np.random.default_rng(2).random((3, n * n + 1)).astype(np.float32)
    for k in KS:
        assert np.array_equal(apply_planes(torch.from_numpy(x), k).numpy(), apply_planes(x, k))
        assert np.array_equal(apply_policy(torch.from_numpy(p), k, n).numpy(), apply_policy(p, k, n))


def test_batch_per_sample() -> None:
    n = 7
    rng = np.random.default_rng(3)
    x = rng.random((8, 2, n, n))
    p = rng.random((8, n * n + 1))
    ks = np.arange(8)[::-1]
    y = apply_planes_batch(x, ks)
    q = apply_policy_batch(p, ks, n)
    yt = apply_planes_batch(torch.from_numpy(x), torch.from_numpy(ks.copy()))
    for i, k in enumerate(ks):
        assert np.array_equal(y[i], apply_planes(x[i], k))
        assert np.array_equal(q[i], apply_policy(p[i], k, n))
    assert np.array_equal(yt.numpy(), y)


def test_bad_k() -> None:
    with pytest.raises(ValueError):
        apply_planes(np.zeros((3, 3)), 8)


@pytest.mark.parametrize("n", [7, 9])
def test_features_commute_with_symmetry(n: int) -> None:
    """Play a random game and its image under k; encoding the image equals
    transforming the encoding (history, ko and liberty planes included)."""
    enc = get_encoder()
    rng = np.random.default_rng(n)
    for k in KS:
        m = action_map(k, n)
        g, h = Game(n), Game(n)
        for _ in range(60):
            legal = np.flatnonzero(g.legal_actions())
            a = int(rng.choice(legal[legal < n * n])) if (legal < n * n).any() else n * n
            g.play(a)
            h.play(int(m[a]))
            assert np.array_equal(apply_planes(enc(g.arr), k), enc(h.arr))


@pytest.mark.slow
@pytest.mark.parametrize("n, planes", [(9, 25), (19, 43), (7, 3)])
def test_permute_planes_in_place_matches_apply_planes(n: int, planes: int) -> None:
    # the search's in-place permutation (a leaf shown in symmetry k) must put
    # every cell where apply_planes does, for every k and every plane
    from sayuri_async.symmetry import permute_planes

    rng = np.random.default_rng(n)
    x = rng.integers(0, 256, size=(planes, n, n)).astype(np.uint8)
    buf = np.empty(planes * n * n, np.uint8)
    for k in range(8):
        got = x.copy()
        permute_planes(got, action_map(k, n).astype(np.int16), buf)
        np.testing.assert_array_equal(got, apply_planes(x, k))
