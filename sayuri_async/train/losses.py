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
  Sayuri    a Sayuri network (outputs carry ``policy_all`` and ``misc``) also
            trains its other heads, as Sayuri's trainer does
            (``SAYURI_LOSS_NAMES``):
    soft_policy, soft_opp_policy  cross-entropy of policy outputs 2 and 3
                against the search and the opponent's policy raised to the
                power 1/4 and renormalised (legal points and pass);
    optimistic_policy  cross-entropy of policy output 4 against the search
                policy, each row weighted by how much better the short-term
                Q or score turned out than the net predicted, in units of
                its own predicted error (sigmoid of 3 (z - 1.5), summed over
                Q and score, clamped to 1); rows with neither target count 0;
    q_values    squared error of the five Q outputs (tanh) against the game
                result (win - loss) and the four Q averages (current, short,
                middle, long term), over the known targets only;
    score_values  Huber loss of score outputs 1-4 against the four score
                averages (output 0 is ``score`` above), known ones only;
    q_error, score_error  Huber loss of the two error outputs against the
                squared miss of the short-term Q and score prediction
                (the prediction detached), deltas 0.4 and 100.
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
SAYURI_LOSS_NAMES = ("soft_policy", "soft_opp_policy", "optimistic_policy", "q_values", "score_values",
                     "q_error", "score_error")
_OWN_EPS = 1e-4
SOFT_POWER = 0.25
_SOFT_EPS = 1e-7


def loss_names(sayuri: bool) -> tuple[str, ...]:
    """The parts ``compute_losses`` returns for a net (Sayuri's or ours)."""
    return LOSS_NAMES + (SAYURI_LOSS_NAMES if sayuri else ())


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
    if "misc" in out and "policy_all" in out:
        parts.update(sayuri_losses(out, targets, cfg))
    total = sum(getattr(cfg, name) * parts[name] for name in parts)
    return total, parts


def soft_target(p: Tensor) -> Tensor:
    """Sayuri's soft policy target: ``(p + eps) ** (1/4)``, renormalised."""
    q = (p + _SOFT_EPS).pow(SOFT_POWER)
    return q / q.sum(dim=-1, keepdim=True)


def _huber(pred: Tensor, target: Tensor, delta: float) -> Tensor:
    return F.huber_loss(pred, target, delta=delta, reduction="none")


def sayuri_losses(out: dict[str, Tensor], targets: dict[str, Tensor], cfg: LossConfig) -> dict[str, Tensor]:
    """The parts of Sayuri's extra heads (see the vocabulary)."""
    from sayuri_async.sayuri.model import value_heads

    pol = out["policy_all"]
    heads = value_heads(out["misc"])
    pmask, omask = targets["policy_mask"], targets["opp_mask"]
    policy, opp = targets["policy"], targets["opp_policy"]
    wdl = targets["wdl"]
    q_target = torch.cat([(wdl[:, 0] - wdl[:, 2])[:, None], targets["q_avg"]], dim=1)
    q_mask = torch.cat([torch.ones_like(wdl[:, :1]), targets["q_avg_mask"]], dim=1)
    s_target, s_mask = targets["score_avg"], targets["score_avg_mask"]
    q_pred, s_pred = heads["q_values"], heads["score_values"]
    short_q, short_q_known = targets["q_avg"][:, 1], targets["q_avg_mask"][:, 1]
    short_s, short_s_known = targets["score_avg"][:, 1], targets["score_avg_mask"][:, 1]
    q_miss = (short_q - q_pred[:, 2].detach()).square()
    s_miss = (short_s - s_pred[:, 2].detach()).square()
    z_q = (short_q - q_pred[:, 2].detach()) / torch.sqrt(heads["q_error"].detach() + 1e-4)
    z_s = (short_s - s_pred[:, 2].detach()) / torch.sqrt(heads["score_error"].detach() + 0.25)
    weight = (torch.sigmoid((z_q - 1.5) * 3.0) * short_q_known
              + torch.sigmoid((z_s - 1.5) * 3.0) * short_s_known).clamp(0.0, 1.0)
    known = ((short_q_known + short_s_known) > 0).to(weight.dtype) * pmask
    return {
        "soft_policy": masked_mean(soft_cross_entropy(pol[:, 2], soft_target(policy)), pmask),
        "soft_opp_policy": masked_mean(soft_cross_entropy(pol[:, 3], soft_target(opp)), omask),
        "optimistic_policy": masked_mean(weight * soft_cross_entropy(pol[:, 4], policy), known),
        "q_values": masked_mean((q_pred - q_target).square(), q_mask),
        "score_values": masked_mean(_huber(s_pred[:, 1:], s_target, cfg.score_huber_delta), s_mask),
        "q_error": masked_mean(_huber(heads["q_error"], q_miss + 1e-8, 0.4), short_q_known),
        "score_error": masked_mean(_huber(heads["score_error"], s_miss + 1e-4, 100.0), short_s_known),
    }
