"""The learning-rate schedule: configured rates at the boundaries, warm-up, and
the batch-size rule (boundaries fixed in samples, rates scaled), all checked
against figures worked out by hand."""
from __future__ import annotations

from pathlib import Path

import pytest

from sayuri_async.train.config import ScheduleConfig, load_config
from sayuri_async.train.schedule import ema_decay_for, resolve

ROOT = Path(__file__).resolve().parents[1]
RATES = [0.005, 0.0025, 0.001, 0.0005, 0.0003]
K = 512_000


def go_schedule(**kw) -> ScheduleConfig:
    base = dict(unit="steps", reference_batch=128, warmup=0, boundaries=[K, 2 * K, 3 * K, 4 * K],
                rates=RATES, lr_scaling="linear", total=5 * K)
    base.update(kw)
    return ScheduleConfig(**base)


def test_rates_at_the_boundaries_at_the_reference_batch():
    s = resolve(go_schedule(), 128)
    expected = {0: 0.005, K - 1: 0.005, K: 0.0025, 2 * K - 1: 0.0025, 2 * K: 0.001,
                3 * K - 1: 0.001, 3 * K: 0.0005, 4 * K - 1: 0.0005, 4 * K: 0.0003, 10 * K: 0.0003}
    for step, rate in expected.items():
        assert s.lr_at_step(step) == pytest.approx(rate, rel=1e-12), step
    assert s.boundary_steps() == [K, 2 * K, 3 * K, 4 * K]
    assert s.total_steps() == 5 * K


def test_shipped_9x9_config_expresses_the_go_schedule():
    cfg = load_config(ROOT / "configs" / "train-9x9.toml")
    sc = cfg.schedule
    assert (sc.unit, sc.reference_batch, sc.boundaries, sc.rates) == ("steps", 128, [K, 2 * K, 3 * K, 4 * K], RATES)
    s = resolve(sc, 128)  # at the batch it was written for: the rates as written, warm-up aside
    assert s.lr_at_step(K - 1) == pytest.approx(0.005)
    assert s.lr_at_step(K) == pytest.approx(0.0025)
    assert s.lr_at_step(4 * K) == pytest.approx(0.0003)


def test_doubling_the_batch_halves_the_steps_and_doubles_the_rates():
    s = resolve(go_schedule(), 256)
    assert s.boundary_steps() == [K // 2, K, 3 * K // 2, 2 * K]
    assert s.lr_at_step(K // 2 - 1) == pytest.approx(0.01)
    assert s.lr_at_step(K // 2) == pytest.approx(0.005)
    assert s.lr_at_step(K) == pytest.approx(0.002)
    assert s.lr_at_step(2 * K) == pytest.approx(0.0006)
    assert s.total_steps() == 5 * K // 2


def test_batch_that_does_not_divide_the_boundary():
    # boundary 512000 steps * 128 = 65,536,000 samples; at batch 96 the step that
    # reaches it is ceil(65,536,000 / 96) = 682,667; scale 96/128 = 0.75
    s = resolve(go_schedule(), 96)
    assert s.boundary_steps()[0] == 682_667
    assert s.lr_at_step(682_666) == pytest.approx(0.005 * 0.75)
    assert s.lr_at_step(682_667) == pytest.approx(0.0025 * 0.75)


def test_schedule_in_samples_equals_schedule_in_steps():
    by_samples = go_schedule(unit="samples", boundaries=[K * 128 * i for i in range(1, 5)], total=5 * K * 128)
    a, b = resolve(go_schedule(), 256), resolve(by_samples, 256)
    for step in (0, K // 2 - 1, K // 2, K, 3 * K // 2, 2 * K, 3 * K):
        assert a.lr_at_step(step) == b.lr_at_step(step)
    assert a.total_steps() == b.total_steps()


def test_sqrt_and_no_scaling():
    assert resolve(go_schedule(lr_scaling="sqrt"), 512).lr_at_step(0) == pytest.approx(0.01)  # sqrt(4) = 2
    assert resolve(go_schedule(lr_scaling="none"), 512).lr_at_step(0) == pytest.approx(0.005)


def test_inverse_scaling_halves_the_rate_when_the_batch_doubles():
    at_128 = resolve(go_schedule(lr_scaling="inverse"), 128)
    at_256 = resolve(go_schedule(lr_scaling="inverse"), 256)
    assert [at_128.lr_at_step(s) for s in (0, K, 4 * K)] == pytest.approx([0.005, 0.0025, 0.0003])
    assert at_256.rates == pytest.approx(tuple(r / 2 for r in at_128.rates))
    assert at_256.boundary_steps() == [b // 2 for b in at_128.boundary_steps()]  # steps halve too
    raised = resolve(go_schedule(lr_scaling="inverse", allow_lr_above_base=True), 64)
    assert raised.lr_at_step(0) == pytest.approx(0.01)


def test_warmup_rises_linearly_to_the_first_rate():
    # 1000 steps of warm-up at batch 128 = 128,000 samples; at batch 256 that is 500 steps
    s = resolve(go_schedule(warmup=1000), 256)
    assert s.lr_at_step(0) == pytest.approx(0.01 * 256 / 128_000)
    assert s.lr_at_step(249) == pytest.approx(0.01 * 0.5)
    assert s.lr_at_step(499) == pytest.approx(0.01)
    assert s.lr_at_step(500) == pytest.approx(0.01)


def test_ema_decay_per_sample_is_kept():
    # 0.999 per step at batch 128 is 0.999^2 per step at batch 256
    assert ema_decay_for(0.999, 256, 128) == pytest.approx(0.998001)
    assert ema_decay_for(0.999, 64, 128) == pytest.approx(0.999 ** 0.5)
