"""Averaged weights: what a training run exports.

Vocabulary:
  EMA       exponential moving average of the network's state (parameters
            and float buffers, BatchNorm statistics included): ``decay`` per
            step, from the per-sample decay configured at the reference batch
            (``schedule.ema_decay_for``); over the first updates
            ``min(decay, (1+t)/(10+t))`` so the initial weights fade quickly.
  SWA       a uniform mean of snapshots every ``swa_every`` steps from
            ``swa_start`` (in samples here).
  weights   what to export: the average, or the raw weights with ``mode =
            "none"`` or before SWA's first snapshot.
  counters  non-float buffers (BatchNorm's batch counts) are copied, not
            averaged.
"""
from __future__ import annotations

from typing import Any

import torch
from torch import nn

from sayuri_async.train.config import AverageConfig
from sayuri_async.train.schedule import Schedule, ema_decay_for


class Averager:
    """EMA or SWA of the network's state (parameters and float buffers)."""

    def __init__(self, cfg: AverageConfig, net: nn.Module, sched: Schedule, swa_start_samples: int) -> None:
        self.mode = cfg.mode
        self.decay = ema_decay_for(cfg.ema_decay, sched.batch, sched.reference_batch)
        self.swa_every = cfg.swa_every
        self.swa_start = swa_start_samples
        self.count = 0
        self.state: dict[str, torch.Tensor] = {}
        if self.mode != "none":
            self.state = {k: v.detach().clone() for k, v in net.state_dict().items()}
        self._pairs: tuple[list[torch.Tensor], list[torch.Tensor], list[tuple[torch.Tensor, torch.Tensor]]] | None = None

    def _bind(self, net: nn.Module) -> None:
        """Pair each averaged tensor with the live one once (optimizer steps update them in place)."""
        live = net.state_dict()
        floats = [k for k, v in self.state.items() if v.is_floating_point()]
        self._pairs = ([self.state[k] for k in floats], [live[k] for k in floats],
                       [(v, live[k]) for k, v in self.state.items() if not v.is_floating_point()])

    @torch.no_grad()
    def update(self, net: nn.Module, step: int, samples: int) -> None:
        if self.mode == "none":
            return
        if self.mode == "ema":
            w = 1.0 - min(self.decay, (1.0 + self.count) / (10.0 + self.count))
        elif samples >= self.swa_start and step % self.swa_every == 0:
            w = 1.0 / (self.count + 1)
        else:
            return
        if self._pairs is None:
            self._bind(net)
        self.count += 1
        averaged, live, counters = self._pairs
        torch._foreach_lerp_(averaged, live, w)
        for dst, src in counters:
            dst.copy_(src)

    def weights(self, net: nn.Module) -> dict[str, torch.Tensor]:
        """What to export: the average, or the raw weights (no averaging, or SWA not started)."""
        if self.mode == "none" or self.count == 0:
            return net.state_dict()
        return self.state

    def state_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "count": self.count, "state": self.state}

    def load_state_dict(self, d: dict[str, Any]) -> None:
        if d.get("mode") != self.mode:
            return  # averaging mode changed: start averaging afresh from the current weights
        self.count = int(d["count"])
        for k, v in d["state"].items():
            self.state[k].copy_(v)
