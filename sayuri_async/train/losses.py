"""Training losses on the network's output dict, reduced to one scalar.

Vocabulary:
  outputs   the net's ``forward`` dict: ``policy`` and ``opp_policy`` logits
            ``[B, A]``, ``wdl`` logits ``[B, 3]``, ``score`` ``[B]`` (points),
            ``ownership`` ``[B, N*N]`` in [-1, 1] (tanh).
  targets   a batch from ``dataset.make_batch`` on the device: ``policy``,
            ``policy_mask``, ``opp_policy``, ``opp_mask``, ``wdl``, ``score``,
            ``ownership``, ``ownership_mask`` (optional: all rows when absent).
  parts     each loss term, unweighted, as a 0-d tensor (so they can be logged
            without a device sync every step):
    policy      cross-entropy of the search policy, averaged over the rows with
                a full search only (playout-cap cheap moves have no target);
    opp_policy  cross-entropy of the opponent's actual reply, averaged over the
                rows that have one (not the last position of a game);
    wdl         cross-entropy of the game outcome;
    score       Huber loss of the final score in points (``score_huber_delta``
                points: quadratic inside, linear outside, so a few lopsided
                games do not dominate);
    ownership   binary cross-entropy of each point's final owner, mapping
                ownership o in [-1, 1] to the probability (1 + o) / 2 of owning
                it, averaged over points and over the rows whose ownership
                is known (``ownership_mask``: imported games that ended by
                resignation have none);
  total     the weighted sum: one scalar, computed here, outside any
            DistributedDataParallel-wrapped module, so ``backward()`` always
            starts from a scalar.

Masked averages divide by ``max(1, rows)`` so a batch without full-search rows
gives a zero (still connected to the graph) policy term instead of NaN.
"""
from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional as F

from sayuri_async.train.config import LossConfig

LOSS_NAMES = ("policy", "opp_policy", "wdl", "score", "ownership")
_OWN_EPS = 1e-4


def soft_cross_entropy(logits: Tensor, target: Tensor) -> Tensor:
    """Per-row ``-sum(target * log_softmax(logits))``: ``[B]``."""
    return -(target * F.log_softmax(logits, dim=-1)).sum(dim=-1)


def masked_mean(values: Tensor, mask: Tensor) -> Tensor:
    m = mask.to(values.dtype)
    return (values * m).sum() / m.sum().clamp_min(1.0)


def ownership_bce(pred: Tensor, target: Tensor, mask: Tensor | None = None) -> Tensor:
    """Mean binary cross-entropy of owners over the points of the rows in
    ``mask`` (all rows when None); ``pred`` and ``target`` in [-1, 1]."""
    p = ((1.0 + pred) * 0.5).clamp(_OWN_EPS, 1.0 - _OWN_EPS)
    t = (1.0 + target) * 0.5
    per_row = -(t * torch.log(p) + (1.0 - t) * torch.log1p(-p)).mean(dim=-1)
    return per_row.mean() if mask is None else masked_mean(per_row, mask)


def compute_losses(outputs: dict[str, Tensor], targets: dict[str, Tensor],
                   cfg: LossConfig) -> tuple[Tensor, dict[str, Tensor]]:
    """``(total, parts)``; outputs are taken in float32 whatever the autocast dtype."""
    out = {k: v.float() for k, v in outputs.items()}
    parts = {
        "policy": masked_mean(soft_cross_entropy(out["policy"], targets["policy"]), targets["policy_mask"]),
        "opp_policy": masked_mean(soft_cross_entropy(out["opp_policy"], targets["opp_policy"]),
                                  targets["opp_mask"]),
        "wdl": soft_cross_entropy(out["wdl"], targets["wdl"]).mean(),
        "score": F.huber_loss(out["score"], targets["score"], delta=cfg.score_huber_delta),
        "ownership": ownership_bce(out["ownership"], targets["ownership"], targets.get("ownership_mask")),
    }
    total = sum(getattr(cfg, name) * parts[name] for name in LOSS_NAMES)
    return total, parts
