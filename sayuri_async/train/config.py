"""Training configuration: TOML files read with ``tomllib`` into dataclasses.

Vocabulary:
  section   one TOML table (``[data]``, ``[model]``, ``[optim]``, ``[schedule]``,
            ``[loss]``, ``[average]``, ``[run]``), one dataclass here.
  unit      how the schedule counts: ``"steps"`` means optimizer steps *at the
            reference batch*, ``"samples"`` means training positions. The trainer
            converts either to its own steps for the batch it really uses.
  global batch  ``optim.batch_size``: positions per optimizer step summed over
            all ranks; every rank takes ``batch_size / world_size``.

Every key in a file must be a known field and every value must have the right
type and range; anything else raises :class:`ConfigError` naming the file and
the key, so a typo never silently falls back to a default. Each section checks
its ranges in ``__post_init__`` (the one style of ``sayuri_async.configfile``),
so no section can exist with a bad value. ``[model]`` is
checked against the network's ``NetConfig`` (``sayuri_async.net.model``), or,
with ``architecture = "sayuri"``, against :class:`SayuriModelConfig`: a new
network of Sayuri's architecture (``sayuri_async.sayuri.model``).
"""
from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sayuri_async.configfile import (SEED_RANGE, Bad, CommandLine, ConfigError, at_least, between, check_tables, convert,
                                     fill, positive, read_toml, require, within)

__all__ = ["ConfigError", "TrainConfig", "load_config", "from_dict", "override"]


def default_workers() -> int:
    """Data-loader processes when the config does not say: the machine's cores, at most 4."""
    return max(1, min(4, os.cpu_count() or 1))


@dataclass
class DataConfig:
    dir: str = "runs/selfplay-9x9/data"
    board_size: int = 9
    window_min_positions: int = 100_000
    window_max_positions: int = 2_000_000
    window_expand_per_position: float = 0.4
    window_taper_exponent: float = 0.65
    shuffle_buffer: int = 50_000
    workers: int = field(default_factory=default_workers)  # the cores, at most 4
    prefetch_batches: int = 4
    symmetries: bool = True
    # Rehearsal: positions of an older data set (the start network's own
    # training data) mixed into every window, as this share of its positions,
    # so that continuing a network does not forget what it was trained on
    # (dataset.py, "rehearsal"). 0: none.
    rehearsal_dir: str = ""
    rehearsal_fraction: float = 0.0

    def __post_init__(self) -> None:
        require(7 <= self.board_size <= 25, "board_size", "must be between 7 and 25")
        within(self, "[0, 0.9]", "rehearsal_fraction")
        require(self.rehearsal_fraction == 0.0 or bool(self.rehearsal_dir), "rehearsal_dir",
                "must name a folder of chunks when rehearsal_fraction is above 0")
        at_least(self, 1, "window_min_positions", "shuffle_buffer", "prefetch_batches")
        between(self, 1, 10_000_000_000, "window_min_positions", "window_max_positions")
        between(self, 1, 10_000_000, "shuffle_buffer")
        between(self, 1, 1024, "prefetch_batches")
        require(self.window_max_positions >= self.window_min_positions, "window_max_positions",
                "must be at least window_min_positions")
        positive(self, "window_expand_per_position")
        within(self, "(0, 1]", "window_taper_exponent")
        require(self.workers >= 0, "workers", "must be 0 (read in the training process) or more")
        between(self, 0, 256, "workers")


@dataclass
class OptimConfig:
    optimizer: Literal["sgd", "adamw"] = "sgd"
    batch_size: int = 256
    momentum: float = 0.9
    nesterov: bool = True
    weight_decay: float = 1e-4
    decay_norms_and_biases: bool = False
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 1e-8
    grad_clip_norm: float = 0.0
    norms: Literal["batch", "fixed"] = "batch"  # how the batch norms train (ours and Sayuri's)
    sync_norms: bool = False  # with several processes: batch statistics over the global batch (syncnorm.py)

    def __post_init__(self) -> None:
        between(self, 1, 65_536, "batch_size")  # positions per step, over all ranks
        within(self, "[0, 1)", "momentum", "adam_beta1", "adam_beta2")
        at_least(self, 0, "weight_decay")
        positive(self, "adam_eps")
        require(self.grad_clip_norm >= 0, "grad_clip_norm", "must be 0 (off) or positive")
        require(not (self.nesterov and self.optimizer == "sgd" and self.momentum == 0), "nesterov",
                "Nesterov momentum needs momentum > 0")


@dataclass
class ScheduleConfig:
    unit: Literal["steps", "samples"] = "steps"
    reference_batch: int = 128
    warmup: int = 2_000
    boundaries: list[int] = field(default_factory=lambda: [512_000, 1_024_000, 1_536_000, 2_048_000])
    rates: list[float] = field(default_factory=lambda: [0.005, 0.0025, 0.001, 0.0005, 0.0003])
    lr_scaling: Literal["linear", "sqrt", "inverse", "inverse-keep-steps", "none"] = "linear"
    total: int = 2_560_000
    # the inverse rules scale a batch below reference_batch's rates up only when this says so (schedule.py)
    allow_lr_above_base: bool = False

    def __post_init__(self) -> None:
        at_least(self, 1, "reference_batch", "total")
        at_least(self, 0, "warmup")
        between(self, 1, 65_536, "reference_batch")
        between(self, 0, 1_000_000_000_000, "total", "warmup")
        require(len(self.rates) == len(self.boundaries) + 1, "rates",
                f"needs exactly one more entry than boundaries ({len(self.boundaries)} boundaries, "
                f"{len(self.rates)} rates)")
        require(all(r > 0 and math.isfinite(r) for r in self.rates), "rates", "must all be positive")
        require(all(b > 0 for b in self.boundaries), "boundaries", "must all be positive")
        require(all(a < b for a, b in zip(self.boundaries, self.boundaries[1:])), "boundaries",
                "must be strictly increasing")


@dataclass
class LossConfig:
    policy: float = 1.0
    opp_policy: float = 0.15
    wdl: float = 1.0
    score: float = 0.02
    ownership: float = 1.5
    score_huber_delta: float = 10.0
    # Sayuri networks' other heads (train/losses.py); our own nets have none of them
    soft_policy: float = 0.1
    soft_opp_policy: float = 0.015
    optimistic_policy: float = 1.0
    q_values: float = 1.0
    score_values: float = 0.02
    q_error: float = 2.0
    score_error: float = 2e-5

    def __post_init__(self) -> None:
        for name in ("policy", "opp_policy", "wdl", "score", "ownership", "soft_policy", "soft_opp_policy",
                     "optimistic_policy", "q_values", "score_values", "q_error", "score_error"):
            value = getattr(self, name)
            require(value >= 0 and math.isfinite(value), name, "must be a finite weight >= 0")
        positive(self, "score_huber_delta")


@dataclass
class AverageConfig:
    mode: Literal["ema", "swa", "none"] = "ema"
    ema_decay: float = 0.999
    swa_start: int = 0
    swa_every: int = 100

    def __post_init__(self) -> None:
        within(self, "(0, 1)", "ema_decay")
        at_least(self, 0, "swa_start")
        at_least(self, 1, "swa_every")


@dataclass
class RunConfig:
    out: str = "runs/train-9x9"
    name: str = "net"
    seed: int = 1
    device: str = "auto"
    precision: Literal["auto", "fp32", "bf16"] = "auto"
    channels_last: bool = True
    backend: Literal["auto", "nccl", "gloo"] = "auto"
    checkpoint_every: int = 2_000
    keep_checkpoints: int = 3
    export_every: int = 10_000
    log_every: int = 50
    progress: Literal["auto", "on", "off"] = "auto"
    processes: int = 1  # training processes on this machine, one per GPU: >1 runs under torchrun (launch.py)

    def __post_init__(self) -> None:
        require(self.device == "auto" or self.device == "cpu" or self.device.startswith("cuda"),
                "device", "must be auto, cpu, cuda or cuda:N")
        between(self, 1, 1024, "processes")  # 1: the calling process itself
        require(self.processes == 1 or not self.device.startswith("cuda:"), "processes",
                f"is {self.processes} but device {self.device!r} names one GPU; use device = \"cuda\" "
                "or \"auto\" (rank r takes cuda:r)")
        require(bool(self.name) and "/" not in self.name, "name", "must be a non-empty file-name prefix")
        at_least(self, 1, "checkpoint_every", "keep_checkpoints", "export_every", "log_every")
        between(self, 1, 10_000, "keep_checkpoints")
        within(self, SEED_RANGE, "seed")


@dataclass
class SayuriModelConfig:
    """``[model]`` of a new Sayuri network (``architecture = "sayuri"``):
    ``blocks`` blocks of one ``block_kind``, each with an SE unit of ``se``
    channels when ``se`` > 0; it reads the ``sayuri-v3`` planes (43)."""
    architecture: Literal["sayuri"] = "sayuri"
    version: int = 5
    blocks: int = 6
    channels: int = 96
    block_kind: Literal["residual", "bottleneck", "nested-bottleneck"] = "residual"
    inner: int = 0  # a bottleneck's inner channels (0: channels / 2)
    se: int = 0
    policy_channels: int = 32
    value_channels: int = 32
    activation: Literal["identity", "relu", "elu", "selu", "gelu", "mish", "swish", "hardswish"] = "relu"

    def __post_init__(self) -> None:
        require(3 <= self.version <= 5, "version", "must be 3, 4 or 5 (the 43-plane versions)")
        require(1 <= self.blocks <= 64, "blocks", "must be between 1 and 64")
        require(1 <= self.channels <= 1024, "channels", "must be between 1 and 1024")
        require(0 <= self.inner <= self.channels, "inner", "must be between 0 (channels / 2) and channels")
        require(self.inner == 0 or self.block_kind != "residual", "inner", "applies to bottleneck blocks only")
        require(0 <= self.se <= 4 * self.channels, "se", "must be 0 (no SE unit) up to 4 x channels")
        at_least(self, 1, "policy_channels", "value_channels")

    def network_config(self) -> dict[str, Any]:
        """The ``SayuriConfig`` dict of this network (what checkpoints and exports hold)."""
        from sayuri_async.sayuri.model import SayuriConfig

        inner = 0 if self.block_kind == "residual" else (self.inner or max(1, self.channels // 2))
        blocks = [{"kind": self.block_kind, "inner": inner, "se": self.se} for _ in range(self.blocks)]
        return SayuriConfig(version=self.version, channels=self.channels, blocks=blocks,
                            policy_channels=self.policy_channels, value_channels=self.value_channels,
                            activation=self.activation).to_dict()


@dataclass
class TrainConfig:
    data: DataConfig = field(default_factory=DataConfig)
    model: dict[str, Any] = field(default_factory=dict)
    optim: OptimConfig = field(default_factory=OptimConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    loss: LossConfig = field(default_factory=LossConfig)
    average: AverageConfig = field(default_factory=AverageConfig)
    run: RunConfig = field(default_factory=RunConfig)
    source: str = "<defaults>"

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out.pop("source")
        return out


SECTIONS: dict[str, type] = {
    "data": DataConfig, "optim": OptimConfig, "schedule": ScheduleConfig,
    "loss": LossConfig, "average": AverageConfig, "run": RunConfig,
}


def check_model_table(table: dict[str, Any]) -> dict[str, Any]:
    """Validate ``[model]`` against the network's ``NetConfig``.

    Returns the table with ``input_planes`` filled in from the encoder when
    it was left out; a given ``input_planes`` must equal the encoder's.
    """
    from sayuri_async.encoders import get_encoder
    from sayuri_async.net.model import NetConfig

    defaults = NetConfig()
    names = {f.name for f in dataclasses.fields(NetConfig)}
    out = {}
    for key, value in table.items():
        if key not in names:
            raise Bad(key, f"unknown key (known keys: {', '.join(sorted(names))})")
        out[key] = convert(key, value, type(getattr(defaults, key)))
    encoder = out.get("encoder", defaults.encoder)
    try:
        planes = get_encoder(encoder).planes
    except ValueError as e:
        raise Bad("encoder", str(e)) from None
    if out.setdefault("input_planes", planes) != planes:
        raise Bad("input_planes", f"is {out['input_planes']} but encoder {encoder!r} makes {planes} planes")
    try:
        NetConfig.from_dict(out)
    except (TypeError, ValueError) as e:
        message = str(e)
        bad = next((k for k in out if k in message), next(iter(table), "model"))
        raise Bad(bad, message) from None
    return out


def from_dict(raw: dict[str, Any], source: str = "<dict>", check_model: bool = True) -> TrainConfig:
    """Build a :class:`TrainConfig` from nested dicts (a parsed TOML document)."""
    cfg = TrainConfig(source=source)
    check_tables(raw, ["model", *SECTIONS], source)
    for section, table in raw.items():
        if section == "model" and table.get("architecture") == "sayuri":
            cfg.model = fill(SayuriModelConfig, table, source, "model").network_config()
        elif section == "model":
            try:
                cfg.model = check_model_table(table) if check_model else dict(table)
            except Bad as e:
                raise e.located(source, "model") from None
        else:
            setattr(cfg, section, fill(SECTIONS[section], table, source, section))
    if check_model and "model" not in raw:
        cfg.model = check_model_table({})
    _check_across(cfg)
    return cfg


def _check_across(cfg: TrainConfig) -> None:
    """Checks that involve two sections."""
    lo = cfg.model.get("board_size_min", 7)
    hi = cfg.model.get("board_size_max", 19)
    if not lo <= cfg.data.board_size <= hi:
        raise ConfigError(f"{cfg.source}: [data] board_size: {cfg.data.board_size} is outside the "
                          f"network's board_size_min..board_size_max ({lo}..{hi})")


def load_config(path: str | Path, check_model: bool = True) -> TrainConfig:
    """Read a training TOML file; every error names ``path`` and the offending key."""
    return from_dict(read_toml(path), str(path), check_model=check_model)


def override(cfg: TrainConfig, section: str, key: str, value: Any, origin: str = CommandLine()) -> None:
    """Set one value after loading (command-line options), with the same checks."""
    setattr(cfg, section, fill(SECTIONS[section], {key: value}, origin, section, base=getattr(cfg, section)))
