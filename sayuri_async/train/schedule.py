"""Learning-rate schedule: warm-up, then piecewise constant, counted in samples.

Vocabulary:
  samples     training positions consumed so far (all ranks together); the
              schedule's clock. ``step`` k of a run with global batch B starts at
              ``samples = k * B`` (when B never changed).
  reference batch  the batch at which a schedule was written (``[schedule]
              reference_batch``). Rates and, for ``unit = "steps"``, boundaries
              are given at that batch.
  rule        ``[schedule] lr_scaling``: how rates and boundaries follow the
              batch B really used (B_ref the reference batch):

              ==================== ================ ==========================
              rule                 rates x          boundaries, warm-up, total
              ==================== ================ ==========================
              "linear"             B / B_ref        fixed in samples
              "sqrt"               sqrt(B / B_ref)  fixed in samples
              "inverse"            B_ref / B        fixed in samples
              "inverse-keep-steps" B_ref / B        fixed in steps
              "none"               1                fixed in samples
              ==================== ================ ==========================

              "inverse-keep-steps" is the rule of Sayuri's author as he
              states it (at batch 128, 0.005 halving to 0.0003 every 512k
              steps; when the batch doubles, halve the rates, the 512k-step
              boundaries stay): the default of ``configs/sayuri-*.toml``.
              "inverse" halves the rates *and* the step counts when the batch
              doubles (a quarter of the positions per segment).
  scale       the factor the rule applies to every configured rate.
  clamp       the inverse rules give a batch below the reference a scale
              above 1 (batch 16 against 128: 8x, lr 0.04, which blows up a
              fine-tuned network). Unless ``allow_lr_above_base = true``, their
              scale is held at 1 (the configured rates) and ``describe()``
              opens with a warning line saying so. "linear" and "sqrt" raise
              the rates only for a batch above the reference, which is what
              those rules are for; the start line shows their factor.

The batch-size rule, applied here so nobody redoes the arithmetic by hand:
  * fixed in samples: a boundary given in steps at the reference batch is
    ``steps * B_ref`` samples; boundaries, warm-up and length are then fixed
    in samples, so with batch B a boundary falls at step ``ceil(samples / B)``:
    doubling the batch halves every step count;
  * fixed in steps: a boundary of b steps (``ceil(samples / B_ref)`` for
    ``unit = "samples"``) is step b at any batch, that is ``b * B`` samples;
  * every rate is multiplied by ``scale``.
Example: 0.005 until 512k steps at batch 128 becomes, at batch 256, 0.01
until step 256k ("linear"), 0.0025 until step 256k ("inverse") or 0.0025
until step 512k ("inverse-keep-steps").

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
    rule: str = "linear"
    clamped_from: float = 0.0  # the scale the rule gave when it was held at 1 (clamp); 0: not clamped

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
        lines = []
        if self.clamped_from:
            lines.append(self.clamp_warning())
        lines.append(f"batch {self.batch} (schedule written for {self.reference_batch}), rates x{self.scale:g}"
                     f" (lr_scaling {self.rule!r})")
        if self.warmup_samples:
            lines.append(f"  warm-up: steps 0-{steps_for(self.warmup_samples, self.batch) - 1} "
                         f"rising to {self.rates[0]:g}")
        starts = [0, *self.boundary_steps()]
        ends = [*self.boundary_steps(), None]
        for rate, a, b in zip(self.rates, starts, ends):
            lines.append(f"  lr {rate:g} from step {a}" + (f" to {b - 1}" if b is not None else " on"))
        lines.append(f"  length: {self.total_steps()} steps ({self.total_samples} samples)")
        return "\n".join(lines)

    def clamp_warning(self) -> str:
        """The one line that says the rates were held at the configured ones."""
        return (f"warning: lr_scaling {self.rule!r} at batch {self.batch} (reference {self.reference_batch}) "
                f"gives rates x{self.clamped_from:g}; they stay at the configured rates (x1). "
                "[schedule] allow_lr_above_base = true raises them")

    def to_dict(self) -> dict[str, Any]:
        """The schedule a checkpoint keeps (its rates, boundaries and length; the
        rule's name and the clamp note are not compared on resume)."""
        d = asdict(self)
        d.pop("rule")
        d.pop("clamped_from")
        d["boundaries_samples"] = list(self.boundaries_samples)
        d["rates"] = list(self.rates)
        return d


def steps_for(samples: int, batch: int) -> int:
    """Steps of batch ``batch`` needed to consume at least ``samples`` positions."""
    return -(-samples // batch)


def reuse_steps(positions: int, samples_per_position: float, batch: int) -> int:
    """Steps of batch ``batch`` that train ``samples_per_position`` samples
    on each of ``positions`` positions (rounded up to a whole step): the
    data-reuse rule of the RL loop's generations and of ``train --follow``."""
    return steps_for(math.ceil(positions * samples_per_position), batch)


INVERSE_RULES = ("inverse", "inverse-keep-steps")  # the rules that scale rates up for a smaller batch


def lr_scale(rule: str, batch: int, reference_batch: int) -> float:
    """The factor ``rule`` gives every rate at ``batch`` (before the clamp)."""
    if rule == "linear":
        return batch / reference_batch
    if rule == "sqrt":
        return math.sqrt(batch / reference_batch)
    if rule in INVERSE_RULES:
        return reference_batch / batch
    if rule == "none":
        return 1.0
    raise ValueError(f"unknown lr_scaling {rule!r}")


def resolve(cfg: ScheduleConfig, batch: int) -> Schedule:
    """Turn a configured schedule into this run's, for global batch ``batch``."""
    scale = lr_scale(cfg.lr_scaling, batch, cfg.reference_batch)
    clamped_from = 0.0
    if cfg.lr_scaling in INVERSE_RULES and scale > 1 and not cfg.allow_lr_above_base:
        clamped_from, scale = scale, 1.0
    if cfg.lr_scaling == "inverse-keep-steps":
        def samples(value: int) -> int:  # a count at the reference batch, as the same steps at this batch
            steps = value if cfg.unit == "steps" else steps_for(value, cfg.reference_batch)
            return steps * batch
    else:
        per = cfg.reference_batch if cfg.unit == "steps" else 1

        def samples(value: int) -> int:  # a count at the reference batch, as the same samples
            return value * per
    return Schedule(
        batch=batch,
        reference_batch=cfg.reference_batch,
        scale=scale,
        warmup_samples=samples(cfg.warmup),
        boundaries_samples=tuple(samples(b) for b in cfg.boundaries),
        rates=tuple(r * scale for r in cfg.rates),
        total_samples=samples(cfg.total),
        rule=cfg.lr_scaling,
        clamped_from=clamped_from,
    )


def to_samples(value: int, cfg: ScheduleConfig) -> int:
    """A count in the schedule's unit, in samples (used for ``swa_start``)."""
    return value * (cfg.reference_batch if cfg.unit == "steps" else 1)


def ema_decay_for(decay_at_reference: float, batch: int, reference_batch: int) -> float:
    """Per-step EMA decay at batch ``batch`` keeping the same decay per sample."""
    return decay_at_reference ** (batch / reference_batch)
