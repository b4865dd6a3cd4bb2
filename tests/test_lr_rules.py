"""The learning-rate rules for other batch sizes (``[schedule] lr_scaling``),
each at batch 128 (the reference), 256 and 1024, on the Go schedule Sayuri's
author gives: 0.005 halving to 0.0003 every 512k steps at batch 128. And the
clamp: the inverse rules never raise a rate above the configured one for a
batch below the reference unless ``allow_lr_above_base`` says so.

Figures worked out by hand: "fixed in samples" puts a boundary of b steps at
batch B on step b * 128 / B; "inverse-keep-steps" keeps it on step b.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from sayuri_async.configfile import ConfigError
from sayuri_async.train.config import ScheduleConfig, from_dict, load_config
from sayuri_async.train.schedule import resolve

ROOT = Path(__file__).resolve().parents[1]
K = 512_000
RATES = [0.005, 0.0025, 0.001, 0.0005, 0.0003]
STEPS = [K, 2 * K, 3 * K, 4 * K]


def go(rule: str, **kw) -> ScheduleConfig:
    base = dict(unit="steps", reference_batch=128, warmup=0, boundaries=list(STEPS), rates=list(RATES),
                lr_scaling=rule, total=5 * K)
    return ScheduleConfig(**{**base, **kw})


# rule -> batch -> (rate factor, step factor of boundaries and length)
EXPECTED = {
    "linear": {128: (1, 1), 256: (2, 1 / 2), 1024: (8, 1 / 8)},
    "sqrt": {128: (1, 1), 256: (2 ** 0.5, 1 / 2), 1024: (8 ** 0.5, 1 / 8)},
    "inverse": {128: (1, 1), 256: (1 / 2, 1 / 2), 1024: (1 / 8, 1 / 8)},
    "inverse-keep-steps": {128: (1, 1), 256: (1 / 2, 1), 1024: (1 / 8, 1)},
    "none": {128: (1, 1), 256: (1, 1 / 2), 1024: (1, 1 / 8)},
}


@pytest.mark.parametrize("rule", list(EXPECTED))
@pytest.mark.parametrize("batch", [128, 256, 1024])
def test_boundaries_and_rates_of_each_rule(rule, batch):
    rate_x, step_x = EXPECTED[rule][batch]
    s = resolve(go(rule), batch)
    bounds = [round(b * step_x) for b in STEPS]
    assert s.boundary_steps() == bounds
    assert s.total_steps() == round(5 * K * step_x)
    starts = [0, *bounds]
    for i, rate in enumerate(RATES):
        assert s.lr_at_step(starts[i]) == pytest.approx(rate * rate_x, rel=1e-12), (rule, batch, i)
        if i < len(bounds):
            assert s.lr_at_step(bounds[i] - 1) == pytest.approx(rate * rate_x, rel=1e-12), (rule, batch, i)
    assert not s.clamped_from and not s.describe().startswith("warning")


def test_the_authors_example_at_batch_1024():
    """The issue's figures: "inverse" runs 320k steps at batch 1024, the author's rule 2,560k."""
    assert resolve(go("inverse"), 1024).total_steps() == 320_000
    keep = resolve(go("inverse-keep-steps"), 1024)
    assert keep.total_steps() == 2_560_000
    assert keep.lr_at_step(511_999) == pytest.approx(0.000625)
    assert keep.lr_at_step(512_000) == pytest.approx(0.0003125)
    assert keep.lr_at_step(2_048_000) == pytest.approx(0.0003 / 8)
    assert "rates x0.125 (lr_scaling 'inverse-keep-steps')" in keep.describe()
    assert "lr 0.000625 from step 0 to 511999" in keep.describe()


def test_keep_steps_keeps_warmup_in_steps_and_reads_samples_at_the_reference_batch():
    s = resolve(go("inverse-keep-steps", warmup=1000), 512)
    assert s.warmup_samples == 1000 * 512  # 1000 steps at any batch
    assert s.lr_at_step(499) == pytest.approx(0.005 / 4 * 0.5)
    by_samples = ScheduleConfig(unit="samples", reference_batch=128, warmup=0,
                                boundaries=[b * 128 for b in STEPS], rates=list(RATES),
                                lr_scaling="inverse-keep-steps", total=5 * K * 128)
    assert resolve(by_samples, 512).boundary_steps() == STEPS
    odd = ScheduleConfig(unit="samples", reference_batch=128, warmup=0, boundaries=[1000], rates=[0.01, 0.001],
                         lr_scaling="inverse-keep-steps", total=2000)
    assert resolve(odd, 64).boundary_steps() == [8]  # ceil(1000 / 128) steps


@pytest.mark.parametrize("rule", ["inverse", "inverse-keep-steps"])
def test_a_small_batch_never_raises_the_rate_without_the_setting(rule):
    s = resolve(go(rule), 16)
    assert s.scale == 1 and s.clamped_from == 8
    assert s.lr_at_step(0) == pytest.approx(0.005) and max(s.rates) == pytest.approx(0.005)
    lines = s.describe().splitlines()
    assert lines[0].startswith("warning: ") and "x8" in lines[0] and "allow_lr_above_base" in lines[0]
    assert sum(line.startswith("warning") for line in lines) == 1
    raised = resolve(go(rule, allow_lr_above_base=True), 16)
    assert raised.lr_at_step(0) == pytest.approx(0.04) and not raised.clamped_from
    assert not raised.describe().startswith("warning")
    # the clamp never lowers a rate: at batch 256 the rule's own halving stands
    assert resolve(go(rule), 256).lr_at_step(0) == pytest.approx(0.0025)


def test_the_clamp_is_not_part_of_the_checkpointed_schedule():
    a = resolve(go("inverse"), 16).to_dict()
    assert "clamped_from" not in a and "rule" not in a and a["rates"] == pytest.approx(RATES)


def test_unknown_rule_and_bad_setting_are_named(tmp_path):
    with pytest.raises(ConfigError, match=r"\[schedule\] lr_scaling: must be one of .*'inverse-keep-steps'"):
        from_dict({"schedule": {"lr_scaling": "keep-steps"}}, "x.toml")
    with pytest.raises(ConfigError, match=r"\[schedule\] allow_lr_above_base"):
        from_dict({"schedule": {"allow_lr_above_base": "yes"}}, "x.toml")


def test_the_sayuri_configs_follow_the_authors_rule():
    from sayuri_async.loop.config import load_loop_config

    supervised = load_config(ROOT / "configs" / "sayuri-train-19x19.toml").schedule
    rl = load_loop_config(str(ROOT / "configs" / "sayuri-loop-19x19.toml"))[2].schedule
    for sc in (supervised, rl):
        assert sc.lr_scaling == "inverse-keep-steps" and sc.allow_lr_above_base is False
    s = resolve(supervised, 1024)  # the seed user's 8 GPUs x 128
    assert s.boundary_steps() == STEPS and s.lr_at_step(STEPS[0]) == pytest.approx(0.0025 / 8)
