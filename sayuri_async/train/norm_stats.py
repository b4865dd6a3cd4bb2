"""Batch-norm running statistics recomputed on fresh positions before a
network is exported.

Vocabulary
----------
running statistics  each ``BatchNorm2d``'s ``running_mean`` and
                    ``running_var``: what the engine normalises by. Training
                    in ``[optim] norms = "batch"`` mode moves them towards
                    its batches' statistics with momentum; in ``"fixed"``
                    mode they stay as the starting network had them.
recompute           set every batch norm's statistics to the plain average
                    over ``positions`` fresh positions (torch's cumulative
                    average: ``momentum = None`` after a reset), one forward
                    pass in training mode for the norms only, without
                    gradients; the weights, scales and shifts are untouched.
                    The positions are the newest self-play (the data the
                    network will meet), each in a random symmetry.
export norms        the RL loop's ``[loop] export_norms``: ``"as_trained"``
                    exports what training left, ``"recompute"`` recomputes
                    before the export becomes the candidate. Our own
                    networks' format only (a Sayuri network's export has
                    its norms folded into the convolutions).
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch
from torch import nn

EXPORT_NORMS = ("as_trained", "recompute")


def batch_norms(net: nn.Module) -> list[nn.BatchNorm2d]:
    return [m for m in net.modules() if isinstance(m, nn.BatchNorm2d)]


@torch.no_grad()
def recompute_running_stats(net: nn.Module, planes: np.ndarray, batch: int = 256) -> int:
    """Recompute ``net``'s batch-norm statistics over ``planes`` (``[P, C,
    N, N]``, see the vocabulary); returns the positions used. The net ends
    in evaluation mode."""
    norms = batch_norms(net)
    if not norms or len(planes) == 0:
        return 0
    saved = [m.momentum for m in norms]
    net.eval()
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # cumulative average over every batch
        m.train()
    try:
        for i in range(0, len(planes), batch):
            x = torch.from_numpy(np.ascontiguousarray(planes[i:i + batch])).float()
            net(x)
    finally:
        for m, momentum in zip(norms, saved):
            m.momentum = momentum
        net.eval()
    return int(len(planes))


def random_symmetries(planes: np.ndarray, seed: int) -> np.ndarray:
    """Each position of ``planes`` (``[P, C, N, N]``) in one of the eight
    symmetries, drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    out = np.empty_like(planes)
    ks = rng.integers(0, 8, size=len(planes))
    for k in range(8):
        rows = np.flatnonzero(ks == k)
        x = planes[rows]
        x = np.rot90(x, k % 4, axes=(2, 3))
        out[rows] = np.flip(x, axis=3) if k >= 4 else x
    return out


def recompute_export(weights: str | os.PathLike, data: Path, generation: int, positions: int,
                     seed: int = 0) -> dict:
    """Rewrite the exported network ``weights`` (ours) with its norms
    recomputed on up to ``positions`` of generation ``generation``'s newest
    positions in ``data``; returns its figures (positions used, the largest
    change of a running mean and variance)."""
    from ..net.weights import load_weights, save_weights
    from .value_quality import load_positions

    net, meta = load_weights(weights)
    before = [(m.running_mean.clone(), m.running_var.clone()) for m in batch_norms(net)]
    pos, _ = load_positions(data, generation, positions)
    used = recompute_running_stats(net, random_symmetries(pos["planes"].astype(np.float32), seed))
    after = batch_norms(net)
    figures = {"norm_positions": used,
               "norm_mean_shift": round(max(float((m.running_mean - b[0]).abs().max())
                                            for m, b in zip(after, before)), 4) if after else 0.0,
               "norm_var_ratio": round(max(float((m.running_var / b[1].clamp_min(1e-6)).max())
                                           for m, b in zip(after, before)), 4) if after else 1.0}
    save_weights(weights, net, {**{k: v for k, v in meta.items() if k != "config"}, "norms": "recomputed",
                                **figures})  # atomic: a temporary name, then a rename
    return figures
