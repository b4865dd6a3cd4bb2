"""The 8 dihedral symmetries of the square board, as array operations.

Vocabulary
----------
k          symmetry index 0..7, three bits applied in this order:
           bit 0 flips rows (axis -2, y -> N-1-y), bit 1 flips columns
           (axis -1, x -> N-1-x), bit 2 then transposes (y, x) -> (x, y).
           k = 0 is the identity.
planes     anything shaped ``[..., N, N]`` (feature planes ``[C, N, N]``,
           batches ``[B, C, N, N]``, ownership maps): the last two axes are
           rows (y) and columns (x); plane cell ``[y, x]`` is action
           ``y * N + x``.
policy     anything shaped ``[..., N*N + 1]``: board actions then pass; the
           pass entry never moves.
inverse    ``apply_planes(apply_planes(x, k), inverse(k)) == x``.
action map ``action_map(k, n)[a]``: where action ``a`` goes under ``k``;
           ``permute_planes`` applies one in place inside compiled code (the
           search shows leaves to the network in a random symmetry).

Every function takes numpy arrays or torch tensors (same operations, so the
trainer can augment on the device) and returns a new array or a view; for
per-sample symmetries over a batch use ``apply_planes_batch``.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

NUM_SYMMETRIES = 8


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def _check_k(k: int) -> int:
    k = int(k)
    if not 0 <= k < NUM_SYMMETRIES:
        raise ValueError(f"symmetry {k} is not in 0..7")
    return k


def apply_planes(x: Any, k: int) -> Any:
    """Symmetry ``k`` applied to the last two axes of ``x`` ``[..., N, N]``."""
    k = _check_k(k)
    if _is_torch(x):
        import torch

        dims = [d for bit, d in ((1, -2), (2, -1)) if k & bit]
        y = torch.flip(x, dims) if dims else x
        return y.transpose(-1, -2) if k & 4 else y
    y = x
    if k & 1:
        y = np.flip(y, axis=-2)
    if k & 2:
        y = np.flip(y, axis=-1)
    if k & 4:
        y = np.swapaxes(y, -1, -2)
    return y


def inverse(k: int) -> int:
    """The symmetry that undoes ``k``. Flips alone are their own inverse;
    with the transpose, the row and column flips swap places
    (transposing after a row flip equals a column flip after transposing)."""
    k = _check_k(k)
    if not k & 4:
        return k
    return 4 | ((k & 1) << 1) | ((k & 2) >> 1)


def apply_policy(p: Any, k: int, n: int) -> Any:
    """Symmetry ``k`` applied to a policy ``[..., N*N + 1]`` (pass stays last),
    consistent with ``apply_planes`` on ``[N, N]`` planes."""
    k = _check_k(k)
    if p.shape[-1] != n * n + 1:
        raise ValueError(f"policy of length {p.shape[-1]} is not {n}x{n} + pass")
    lead = tuple(p.shape[:-1])
    board = apply_planes(p[..., : n * n].reshape(lead + (n, n)), k).reshape(lead + (n * n,))
    if _is_torch(p):
        import torch

        return torch.cat([board, p[..., n * n :]], dim=-1)
    return np.concatenate([board, p[..., n * n :]], axis=-1)


def apply_board(v: Any, k: int, n: int) -> Any:
    """Symmetry ``k`` applied to per-point data ``[..., N*N]`` (ownership)."""
    k = _check_k(k)
    lead = tuple(v.shape[:-1])
    return apply_planes(v.reshape(lead + (n, n)), k).reshape(lead + (n * n,))


def action_map(k: int, n: int) -> np.ndarray:
    """``m[a]`` = where action ``a`` goes under symmetry ``k`` (``[N*N + 1]``
    int64; pass maps to pass). ``apply_policy(p, k, n)[..., m[a]] == p[..., a]``."""
    k = _check_k(k)
    src = apply_planes(np.arange(n * n).reshape(n, n), k).reshape(-1)  # src[a'] = a
    m = np.empty(n * n + 1, dtype=np.int64)
    m[src] = np.arange(n * n)
    m[n * n] = n * n
    return m


def apply_planes_batch(x: Any, ks: Any) -> Any:
    """Per-sample symmetries: ``x [B, ..., N, N]``, ``ks [B]``; a new array."""
    if _is_torch(x):
        import torch

        out = torch.empty_like(x)
    else:
        out = np.empty_like(x)
    ks_list = [int(k) for k in ks]
    if len(ks_list) != x.shape[0]:
        raise ValueError(f"{len(ks_list)} symmetries for a batch of {x.shape[0]}")
    for k in set(ks_list):
        idx = [i for i, kk in enumerate(ks_list) if kk == k]
        if _is_torch(x):
            import torch

            ti = torch.tensor(idx, device=x.device)
            out[ti] = apply_planes(x[ti], k)
        else:
            out[idx] = apply_planes(x[idx], k)
    return out


def apply_policy_batch(p: Any, ks: Any, n: int) -> Any:
    """Per-sample symmetries for policies ``[B, N*N + 1]``."""
    lead = p.shape[0]
    board = apply_planes_batch(p[:, : n * n].reshape(lead, n, n), ks).reshape(lead, n * n)
    if _is_torch(p):
        import torch

        return torch.cat([board, p[:, n * n :]], dim=1)
    return np.concatenate([board, p[:, n * n :]], axis=1)


@njit(cache=True)
def permute_planes(planes, smap, buf) -> None:
    """In place: cell ``a`` (``y * N + x``) of every plane of ``planes``
    (``[C, N, N]``, C-contiguous) moves to cell ``smap[a]`` (an
    ``action_map``); ``buf`` is scratch of at least ``C * N * N`` bytes.
    Flat indices, no division: the search calls it on every leaf when
    ``random_symmetry`` is on (43 planes of 19x19 took 49 us with a
    row-column store, about 3 us like this)."""
    c_count, n = planes.shape[0], planes.shape[1]
    nn = n * n
    flat = planes.reshape(c_count * nn)
    size = c_count * nn
    buf[:size] = flat
    for c in range(c_count):
        base = c * nn
        for a in range(nn):
            flat[base + smap[a]] = buf[base + a]
