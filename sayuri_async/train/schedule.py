"""Learning-rate schedule: warm-up, then piecewise constant, counted in samples.

Vocabulary:
  samples     training positions consumed so far (all ranks together); the
              schedule's clock. ``step`` k of a run with global batch B starts at
              ``samples = k * B`` (when B never changed).
  reference batch  the batch at which a schedule was written (``[schedule]
              reference_batch``). Rates and, for ``unit = "steps"``, boundaries
              are given at that batch.
  scale       the factor applied to every configured rate for the batch really
              used: ``B / B_ref`` (``lr_scaling = "linear"``), ``sqrt(B / B_ref)``
              (``"sqrt"``), ``B_ref / B`` (``"inverse"``: doubling the batch
              halves the rate, the rule the Sayuri workflow's schedule comes
              with, ``configs/sayuri-*.toml``) or 1 (``"none"``).

The batch-size rule, applied here so nobody redoes the arithmetic by hand:
  * a boundary given in steps at the reference batch is ``steps * B_ref``
    samples; boundaries, warm-up and length are then fixed in samples, so with
    batch B a boundary falls at step ``ceil(samples / B)``: doubling the batch
    halves every step count;
  * every rate is multiplied by ``scale``.
Example: 0.005 until 512k steps at batch 128 becomes, at batch 256 with linear
scaling, 0.01 until step 256k.

Step k uses the rate of the segment that ``samples_k = k * B`` falls in: the
first boundary b with ``samples_k >= b`` switches to the next rate. During
warm-up (``samples_k < warmup_samples``) the rate is
``rate_0 * (samples_k + B) / warmup_samples``: it rises linearly and step 0
already moves.
"""
from __future__ import annotations

import bisect
import math
from dataclasses import asdict, dataclass
from typing import Any

from sayuri_async.train.config import ScheduleConfig


@dataclass(frozen=True)
class Schedule:
    batch: int
    reference_batch: int
    scale: float
    warmup_samples: int
    boundaries_samples: tuple[int, ...]
    rates: tuple[float, ...]
    total_samples: int

    def lr_at_samples(self, samples: int) -> float:
        """The rate for a step that starts after ``samples`` positions."""
        rate = self.rates[bisect.bisect_right(self.boundaries_samples, samples)]
        if samples < self.warmup_samples:
            rate *= min(1.0, (samples + self.batch) / self.warmup_samples)
        return rate

    def lr_at_step(self, step: int) -> float:
        """The rate for step ``step`` (0-based) when the batch never changed."""
        return self.lr_at_samples(step * self.batch)

    def boundary_steps(self) -> list[int]:
        """First step (0-based) of each segment after the first."""
        return [steps_for(b, self.batch) for b in self.boundaries_samples]

    def total_steps(self) -> int:
        return steps_for(self.total_samples, self.batch)

    def describe(self) -> str:
        """One readable line per segment, in this run's steps."""
        lines = [f"batch {self.batch} (schedule written for {self.reference_batch}), rates x{self.scale:g}"]
        if self.warmup_samples:
            lines.append(f"  warm-up: steps 0-{steps_for(self.warmup_samples, self.batch) - 1} "
                         f"rising to {self.rates[0]:g}")
        starts = [0, *self.boundary_steps()]
        ends = [*self.boundary_steps(), None]
        for rate, a, b in zip(self.rates, starts, ends):
            lines.append(f"  lr {rate:g} from step {a}" + (f" to {b - 1}" if b is not None else " on"))
        lines.append(f"  length: {self.total_steps()} steps ({self.total_samples} samples)")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["boundaries_samples"] = list(self.boundaries_samples)
        d["rates"] = list(self.rates)
        return d


def steps_for(samples: int, batch: int) -> int:
    """Steps of batch ``batch`` needed to consume at least ``samples`` positions."""
    return -(-samples // batch)


def lr_scale(rule: str, batch: int, reference_batch: int) -> float:
    if rule == "linear":
        return batch / reference_batch
    if rule == "sqrt":
        return math.sqrt(batch / reference_batch)
    if rule == "inverse":
        return reference_batch / batch
    if rule == "none":
        return 1.0
    raise ValueError(f"unknown lr_scaling {rule!r}")


def resolve(cfg: ScheduleConfig, batch: int) -> Schedule:
    """Turn a configured schedule into this run's, for global batch ``batch``."""
    per = cfg.reference_batch if cfg.unit == "steps" else 1
    scale = lr_scale(cfg.lr_scaling, batch, cfg.reference_batch)
    return Schedule(
        batch=batch,
        reference_batch=cfg.reference_batch,
        scale=scale,
        warmup_samples=cfg.warmup * per,
        boundaries_samples=tuple(b * per for b in cfg.boundaries),
        rates=tuple(r * scale for r in cfg.rates),
        total_samples=cfg.total * per,
    )


def to_samples(value: int, cfg: ScheduleConfig) -> int:
    """A count in the schedule's unit, in samples (used for ``swa_start``)."""
    return value * (cfg.reference_batch if cfg.unit == "steps" else 1)


def ema_decay_for(decay_at_reference: float, batch: int, reference_batch: int) -> float:
    """Per-step EMA decay at batch ``batch`` keeping the same decay per sample."""
    return decay_at_reference ** (batch / reference_batch)
