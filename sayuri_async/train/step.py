"""One training step: the optimizer and one update of it on one batch.

Vocabulary:
  optimizer  SGD (Nesterov by default) or AdamW over two parameter groups:
             weights with ``[optim] weight_decay``, 1-D parameters (norms,
             biases) without unless ``decay_norms_and_biases``. Its rate is
             set before every step from the schedule (``schedule.py``).
  step       one update on this rank's share of the global batch: planes to
             the device (channels-last on CUDA when asked), the packed
             targets unpacked (``dataset.unpack_targets``), forward under
             bf16 autocast when asked, the losses (``losses.compute_losses``)
             on the output dict outside the (possibly DDP-wrapped) module, so
             the total is a scalar before ``backward()``, then gradient
             clipping (``grad_clip_norm`` > 0) and the optimizer's step.
  finite     the guard before the optimizer's step: the total loss and the
             gradients' norm must be finite (under DDP every rank must agree,
             one all-reduce of a flag), else ``NonFiniteLoss`` is raised with
             the gradients cleared and the weights, optimizer and averages as
             they were before the batch: no NaN or infinity ever reaches the
             optimizer. It costs one device sync a step. ``finite_weights``
             checks the weights themselves (an update can overflow them):
             the trainer calls it before each checkpoint and export.
"""
from __future__ import annotations

import math
from contextlib import nullcontext
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from sayuri_async.train.config import OptimConfig, TrainConfig
from sayuri_async.train.dataset import unpack_targets
from sayuri_async.train.errors import TrainError
from sayuri_async.train.losses import compute_losses


class NonFiniteLoss(TrainError):
    """The loss or the gradients of a step went NaN or infinite, and the
    step was not taken (see "finite"); or, ``taken``, a step left the
    weights NaN or infinite (``finite_weights``). ``parts`` holds the loss
    parts of the batch."""

    def __init__(self, message: str, parts: dict[str, float], taken: bool = False) -> None:
        super().__init__(message)
        self.parts = parts
        self.taken = taken


def build_optimizer(net: nn.Module, cfg: OptimConfig) -> torch.optim.Optimizer:
    """SGD (Nesterov by default) or AdamW; 1-D parameters (BN, biases) skip decay unless asked."""
    decay, plain = [], []
    for p in net.parameters():
        (plain if p.ndim <= 1 and not cfg.decay_norms_and_biases else decay).append(p)
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": plain, "weight_decay": 0.0}]
    if cfg.optimizer == "adamw":
        return torch.optim.AdamW(groups, lr=0.0, betas=(cfg.adam_beta1, cfg.adam_beta2), eps=cfg.adam_eps)
    return torch.optim.SGD(groups, lr=0.0, momentum=cfg.momentum, nesterov=cfg.nesterov)


def train_step(model: nn.Module, net: nn.Module, optimizer: torch.optim.Optimizer, batch: dict[str, Any],
               lr: float, cfg: TrainConfig, device: torch.device, use_bf16: bool
               ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """One update at rate ``lr`` (see the vocabulary): ``model`` is what runs
    forward (``net`` or its DDP wrapper), ``net`` whose gradients are
    clipped. Returns the total loss and its parts, detached."""
    x = batch["planes"].to(device, non_blocking=True).float()
    if cfg.run.channels_last and device.type == "cuda":
        x = x.contiguous(memory_format=torch.channels_last)
    targets = unpack_targets(batch["targets"].to(device, non_blocking=True), cfg.data.board_size)
    for group in optimizer.param_groups:
        group["lr"] = lr
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if use_bf16 else nullcontext()
    with autocast:
        outputs = model(x)
    total, parts = compute_losses(outputs, targets, cfg.loss)
    optimizer.zero_grad(set_to_none=True)
    total.backward()
    if cfg.optim.grad_clip_norm > 0:
        norm = nn.utils.clip_grad_norm_(net.parameters(), cfg.optim.grad_clip_norm)
    else:
        norm = nn.utils.get_total_norm([p.grad for p in net.parameters() if p.grad is not None])
    if not all_finite(total.detach(), norm, device):
        optimizer.zero_grad(set_to_none=True)
        values = {k: float(v.detach()) for k, v in parts.items()}
        bad = ", ".join(f"{k} {v:.4g}" for k, v in values.items() if not math.isfinite(v))
        raise NonFiniteLoss(f"the loss became {float(total.detach()):.4g}" + (f" ({bad})" if bad else
                            f" (gradient norm {float(norm):.4g})"), values)
    optimizer.step()
    return total.detach(), {k: v.detach() for k, v in parts.items()}


@torch.no_grad()
def finite_weights(net: nn.Module) -> bool:
    """Whether every parameter of ``net`` is finite (one device sync): an
    update at a rate far too high can overflow them from finite gradients."""
    flags = [torch.isfinite(p).all() for p in net.parameters()]
    return not flags or bool(torch.stack(flags).all())


def all_finite(total: torch.Tensor, norm: torch.Tensor, device: torch.device) -> bool:
    """Whether the loss and the gradient norm are finite on every rank (see "finite")."""
    ok = (torch.isfinite(total) & torch.isfinite(norm.to(total.device))).to(torch.int32)
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        ok = ok.reshape(1).to(device)
        dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    return bool(ok.item())
