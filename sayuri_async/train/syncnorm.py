"""Synchronised batch norm: batch statistics over the global batch, not each rank's share.

Vocabulary:
  share       the rows one rank normalises: ``batch_size / world``. At batch
              128 on 8 GPUs each batch norm sees 16 positions a step, and its
              mean and variance (and the running statistics the exported
              network plays with) come from those 16 alone.
  sync        ``[optim] sync_norms = true`` (with more than one rank):
              ``synchronise_norms(net)`` makes every batch norm of the network
              (our ``nn.BatchNorm2d``, a Sayuri network's ``Norm``) normalise
              by the mean and variance of the whole global batch, as one
              process with the whole batch would. The gradient is that one
              process's too: the statistics cross the ranks through an
              all-reduce that autograd differentiates (its backward is an
              all-reduce of the gradients), and DDP averages the rest.
  exchange    one all-reduce a layer and step forward and one backward, of
              ``world x (2C + 1)`` floats (each rank's count, mean and sum of
              squared deviations, combined exactly as a parallel variance):
              small tensors, so the cost is the collectives' latency
              (``tools/bench_syncbn.py`` measures it).
  unchanged   the modules stay what they were for everything else: the
              conversion changes each norm's class to a subclass that only
              overrides ``forward`` (the same parameters, buffers and state
              dict keys, so the optimizer, the averages, checkpoints and
              exports are untouched, and ``isinstance`` checks such as the
              "fixed" norm mode's still hold). Not training, in the "fixed"
              norm mode, or with one rank, they compute what they always did.

Why not ``torch.nn.SyncBatchNorm.convert_sync_batchnorm``: torch's module
refuses CPU tensors (gloo ranks on CPUs, as the tests run), it converts only
torch's own batch norms (a Sayuri network's ``Norm`` is not one) and its
modules are no longer ``nn.BatchNorm2d`` (the "fixed" norm mode finds its
norms by that class). The arithmetic is the same.
"""
from __future__ import annotations

import torch
import torch.distributed as dist
from torch import Tensor, nn

from sayuri_async.sayuri.model import Norm


class _AllReduce(torch.autograd.Function):
    """The sum over ranks, whose gradient is the sum over ranks of the gradients."""

    @staticmethod
    def forward(ctx, t: Tensor) -> Tensor:  # type: ignore[override]
        out = t.clone()
        dist.all_reduce(out)
        return out

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:  # type: ignore[override]
        out = grad.contiguous().clone()
        dist.all_reduce(out)
        return out


def _syncing() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def sync_batch_norm(x: Tensor, running_mean: Tensor | None, running_var: Tensor | None, weight: Tensor | None,
                    bias: Tensor | None, momentum: float, eps: float) -> Tensor:
    """Training-mode batch norm of ``x`` (N, C, H, W) with the statistics of
    every rank's ``x`` together; updates the running statistics (unbiased
    variance, as ``F.batch_norm``) when given."""
    c = x.shape[1]
    xf = x.float()
    n = xf.numel() // c
    var, mean = torch.var_mean(xf, dim=(0, 2, 3), correction=0)
    m2 = var * n  # the sum of squared deviations from this rank's mean
    world, rank = dist.get_world_size(), dist.get_rank()
    mine = torch.cat([torch.full((1,), float(n), device=x.device), mean, m2])
    table = torch.zeros(world, 2 * c + 1, device=x.device, dtype=mine.dtype)
    table = table.index_copy(0, torch.tensor([rank], device=x.device), mine[None])
    table = _AllReduce.apply(table)  # every rank's row: an all-gather autograd can differentiate
    counts, means, m2s = table[:, :1], table[:, 1:c + 1], table[:, c + 1:]
    total = counts.sum()
    g_mean = (counts * means).sum(0) / total
    g_var = (m2s + counts * (means - g_mean) ** 2).sum(0) / total  # the parallel-variance formula
    if running_mean is not None and running_var is not None:
        with torch.no_grad():
            running_mean.mul_(1 - momentum).add_(g_mean.detach(), alpha=momentum)
            unbiased = g_var.detach() * (total.detach() / (total.detach() - 1).clamp(min=1))
            running_var.mul_(1 - momentum).add_(unbiased, alpha=momentum)
    scale = torch.rsqrt(g_var + eps)
    if weight is not None:
        scale = scale * weight
    shift = -g_mean * scale
    if bias is not None:
        shift = shift + bias
    return x * scale.to(x.dtype)[None, :, None, None] + shift.to(x.dtype)[None, :, None, None]


class SyncBatchNorm2d(nn.BatchNorm2d):
    """``nn.BatchNorm2d`` whose training statistics span every rank."""

    def forward(self, x: Tensor) -> Tensor:
        if not (self.training and _syncing()):
            return super().forward(x)
        if self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
        momentum = self.momentum if self.momentum is not None else 1.0 / float(self.num_batches_tracked)
        track = self.track_running_stats
        return sync_batch_norm(x, self.running_mean if track else None, self.running_var if track else None,
                               self.weight, self.bias, momentum, self.eps)


class SyncNorm(Norm):
    """A Sayuri network's ``Norm`` whose training statistics span every rank."""

    def forward(self, x: Tensor) -> Tensor:
        if not (self.training and self.mode == "batch" and _syncing()):
            return super().forward(x)
        return sync_batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, self.momentum,
                               self.eps)


def synchronise_norms(net: nn.Module) -> int:
    """Make every batch norm of ``net`` a synchronised one, in place (see
    "unchanged"); returns how many there are."""
    count = 0
    for m in net.modules():
        if type(m) is nn.BatchNorm2d:
            m.__class__ = SyncBatchNorm2d
        elif type(m) is Norm:
            m.__class__ = SyncNorm
        else:
            continue
        count += 1
    return count

