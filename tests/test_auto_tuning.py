"""The device's curve and what reads it: the sustained-rate measurement, the
verdict's batch and process advice, ``batch_size = "auto"`` and ``procs =
"auto"`` (``net/backends.py``, ``selfplay/report.py``, ``selfplay/auto.py``)."""
from __future__ import annotations

import pytest

from sayuri_async.net.backends import measure_curve, median_rate
from sayuri_async.selfplay import auto
from sayuri_async.selfplay.config import SelfplayConfig
from sayuri_async.selfplay.report import Figures, diagnose
from sayuri_async.selfplay.status import EngineSettings

# evals/s per bucket of three devices: a CPU that does best at 64, a GPU
# whose curve flattens at 256, and one that is flat from 16 on
CPU_CURVE = {1: 300.0, 2: 520.0, 4: 800.0, 8: 1050.0, 16: 1262.0, 32: 1700.0, 64: 1941.0, 128: 1930.0, 256: 1900.0}
GPU_CURVE = {8: 2000.0, 16: 4000.0, 32: 7800.0, 64: 14000.0, 128: 21000.0, 256: 24000.0, 512: 24500.0, 1024: 24600.0}
FLAT_CURVE = {1: 100.0, 2: 190.0, 4: 350.0, 8: 600.0, 16: 1000.0, 32: 1020.0, 64: 1010.0}


# ---- the sustained rate -----------------------------------------------------


def test_the_rate_of_a_bucket_is_the_median_of_its_timed_passes():
    # one pass waited for the cores (0.9 s), one was a burst (0.01 s): neither decides
    assert median_rate(10, [0.1, 0.9, 0.01, 0.1, 0.1]) == pytest.approx(100.0)
    assert median_rate(8, [0.1, 0.3]) == pytest.approx(8 / 0.2)


def test_the_curve_times_warm_and_timed_passes_and_takes_the_median():
    """2 untimed passes, then 5 timed ones whose median gives the rate: the
    slow first passes and a single fast outlier change nothing."""
    calls: dict[int, int] = {}
    times = {1: [9.0, 9.0, 0.02, 0.01, 0.001, 0.01, 0.01], 2: [9.0, 9.0, 0.01, 0.02, 0.02, 0.5, 0.02]}

    def timed_pass(b: int) -> float:
        i = calls.get(b, 0)
        calls[b] = i + 1
        return times[b][i]

    curve = measure_curve([1, 2], timed_pass, budget_s=1e9, pass_max_s=1e9)
    assert calls == {1: 7, 2: 7}
    assert curve[1] == pytest.approx(1 / 0.01) and curve[2] == pytest.approx(2 / 0.02)


def test_the_curve_stops_at_a_bucket_whose_pass_would_take_too_long_or_overrun_the_budget():
    def timed_pass(b: int) -> float:
        return b * 0.01  # 100 evals/s whatever the batch

    assert set(measure_curve([1, 2, 4, 8, 16, 32, 64], timed_pass, budget_s=1e9, pass_max_s=0.2)) == {1, 2, 4, 8, 16}
    # 7 passes each of 1..8 take 1.05 s; with 16 they would take 2.17 s, over a 2 s budget
    assert max(measure_curve([1, 2, 4, 8, 16, 32], timed_pass, budget_s=2.0, pass_max_s=1e9)) == 8


def test_the_curve_goes_round_the_buckets_so_a_load_change_slows_them_alike():
    order: list[int] = []

    def timed_pass(b: int) -> float:
        order.append(b)
        return b * 0.01

    measure_curve([1, 2, 4], timed_pass, budget_s=1e9, pass_max_s=1e9, warm=2, timed=2)
    assert order == [1, 1, 2, 2, 4, 4] + [1, 2, 4] * 2


def test_a_slow_first_pass_does_not_cut_the_curve_short():
    """The first pass of a CPU backend (threads starting, buffers allocated)
    can take far longer than the rest: the projection uses the fastest warm one."""
    calls = [0]

    def timed_pass(b: int) -> float:
        calls[0] += 1
        return 2.0 if calls[0] == 1 else b * 0.001

    assert max(measure_curve([1, 2, 4, 8, 16], timed_pass, budget_s=8.0, pass_max_s=0.5)) == 16


# ---- the verdict ---------------------------------------------------------------


def busy_figures(curve: dict[int, float], batch: int, evals: float, *, cores: int = 1, used: float | None = None,
                 procs: int = 1, loop: float = 0.1) -> Figures:
    """Figures of an engine whose device is 99% busy on full batches of ``batch``."""
    f = Figures(nn_evals_s=evals, avg_batch_size=float(batch), gpu_busy=0.99, loop_busy=loop, loop_busy_max=loop,
                nn_batches_s=evals / batch)
    f.device_rates = dict(curve)
    f.device_best = max(curve.values())
    f.device_efficiency = min(evals / f.device_best, 1.0)
    f.cores, f.cores_used, f.procs = cores, used, procs
    return f


def settings(batch: int, *, device: str = "cpu", most: int = 1024, games: int | None = None) -> EngineSettings:
    return EngineSettings(batch_size=batch, parallel_games=games or 2 * batch, timeout_ms=5.0, device=device,
                          leaves_per_await=1, max_batch_size=most)


def test_on_a_cpu_the_verdict_names_the_faster_batch_instead_of_calling_the_device_the_limit():
    v = diagnose(busy_figures(CPU_CURVE, 16, 1262.0), settings(16))
    assert v.kind == "batch too small" and v.advice == {"batch_size": 64, "parallel_games": 128}
    assert "raise batch_size to 64" in v.text


def test_the_verdict_never_advises_a_batch_above_max_batch_size():
    for curve, batch in ((CPU_CURVE, 16), (GPU_CURVE, 32)):
        for most in (batch, 2 * batch, 4 * batch, 1024):
            v = diagnose(busy_figures(curve, batch, curve[batch]), settings(batch, device="cuda:0", most=most))
            if v.kind == "batch too small":
                assert batch < v.advice["batch_size"] <= most
            else:
                assert "batch_size" not in v.advice
    v = diagnose(busy_figures(GPU_CURVE, 32, 7800.0), settings(32, device="cuda:0", most=64))
    assert v.advice.get("batch_size") == 64
    v = diagnose(busy_figures(GPU_CURVE, 32, 7800.0), settings(32, device="cuda:0", most=32))
    assert v.kind != "batch too small"


def test_a_busy_device_under_80_percent_of_its_best_is_not_called_the_limit():
    # the best bucket, but the search takes the cores from it: 40% of its best
    v = diagnose(busy_figures(FLAT_CURVE, 32, 400.0, cores=2, used=1.9, procs=2), settings(32))
    assert v.kind == "CPU-bound" and "the device is the limit" not in v.text
    # at its best: the device is the limit
    v = diagnose(busy_figures(FLAT_CURVE, 32, 1000.0, cores=2, used=1.9, procs=2), settings(32))
    assert v.kind == "device-bound"


def test_the_verdict_advises_procs_when_the_engine_uses_one_core_of_several():
    v = diagnose(busy_figures(FLAT_CURVE, 32, 600.0, cores=2, used=1.05, procs=1), settings(32))
    assert v.kind == "cores idle" and v.advice == {"procs": 2}
    assert "--procs 2 (one torch thread each)" in v.text and "1.1 of 2 cores" in v.text
    v = diagnose(busy_figures(FLAT_CURVE, 32, 600.0, cores=8, used=1.0, procs=1), settings(32))
    assert v.advice == {"procs": 8}
    # every core busy, or one process a core already: no process advice
    assert "procs" not in diagnose(busy_figures(FLAT_CURVE, 32, 600.0, cores=2, used=1.9, procs=1), settings(32)).advice
    assert "procs" not in diagnose(busy_figures(FLAT_CURVE, 32, 600.0, cores=2, used=1.0, procs=2), settings(32)).advice


# ---- auto ------------------------------------------------------------------------


def test_auto_picks_the_smallest_bucket_within_5_percent_of_the_best():
    assert auto.pick_batch(CPU_CURVE) == 64  # 1,941 best; 32 gives 1,700 (12% less)
    assert auto.pick_batch(GPU_CURVE) == 256  # 24,000 is within 5% of 24,600; 128 is not
    assert auto.pick_batch(FLAT_CURVE) == 16  # 1,000 within 2% of 1,020
    assert auto.pick_batch({}) is None


def test_auto_procs_takes_the_most_processes_within_5_percent_of_the_best():
    assert auto.pick_procs({1: 1000.0, 2: 980.0}) == 2
    assert auto.pick_procs({1: 1000.0, 2: 700.0}) == 1
    assert auto.pick_procs({1: 700.0, 2: 1400.0}) == 2
    assert auto.pick_procs({}) == 1


def test_resolve_picks_batch_games_and_procs_and_says_why():
    seen: dict = {}

    def measure(cfg, threads):
        seen["threads"] = threads
        return dict(CPU_CURVE)

    def probe(weights, n, batch, candidates, cores):
        seen["probe"] = (n, batch, candidates, cores)
        return {1: 1900.0, 2: 3300.0}

    cfg = SelfplayConfig(batch_size="auto", procs="auto", weights="net.safetensors")
    choice = auto.resolve(cfg, measure=measure, probe=probe, total_cores=2)
    assert (choice.cfg.batch_size, choice.cfg.procs) == (64, 2)
    assert choice.cfg.parallel_games == 32  # 2 x 64 / 4 leaves per await
    assert choice.cfg.max_batch_size == 256
    assert seen == {"threads": 1, "probe": (9, 64, [1, 2], 2)}
    assert choice.line.startswith("auto: batch_size 64 (") and "procs 2 x 1 torch thread(s)" in choice.line
    assert choice.measured == {9: CPU_CURVE}  # measured with one thread: each of the two processes' share
    one = auto.resolve(SelfplayConfig(batch_size="auto", weights="net.safetensors"), measure=measure, probe=probe,
                       total_cores=1)
    assert one.cfg.procs == 1 and one.measured == {9: CPU_CURVE}


def test_resolve_without_a_device_keeps_a_fixed_batch_and_one_process():
    choice = auto.resolve(SelfplayConfig(batch_size="auto", procs="auto"), measure=lambda cfg, t: {},
                          probe=lambda *a: pytest.fail("no measurement of processes without a network"),
                          total_cores=2)
    assert (choice.cfg.batch_size, choice.cfg.procs) == (auto.FALLBACK_BATCH, 1)
    assert "no device curve" in choice.line


def test_the_device_model_curve_reaches_max_batch_size_and_auto_picks_from_it():
    choice = auto.resolve(SelfplayConfig(batch_size="auto", procs="auto", device="model", device_model="20b256c",
                                         board_sizes=[19]))
    curve = choice.measured[19]
    assert max(curve) == 256 and choice.cfg.procs == 1
    assert choice.cfg.batch_size == auto.pick_batch(curve)


def test_batch_size_and_procs_take_auto_and_refuse_other_words(tmp_path):
    from sayuri_async.configfile import ConfigError
    from sayuri_async.selfplay.config import load_selfplay_config

    p = tmp_path / "c.toml"
    p.write_text('[selfplay]\nbatch_size = "auto"\nprocs = "auto"\n')
    cfg = load_selfplay_config(str(p))
    assert cfg.batch_size == "auto" and cfg.procs == "auto" and cfg.max_batch == 256
    p.write_text('[selfplay]\nbatch_size = "big"\n')
    with pytest.raises(ConfigError, match=r"batch_size: must be a whole number or 'auto', not 'big'"):
        load_selfplay_config(str(p))
    p.write_text('[selfplay]\nbatch_size = 64\nmax_batch_size = 32\n')
    with pytest.raises(ConfigError, match=r"max_batch_size: must be at least batch_size \(64\)"):
        load_selfplay_config(str(p))
    assert SelfplayConfig(batch_size=16).max_batch == 256
    assert SelfplayConfig(batch_size=128).max_batch == 512
    assert SelfplayConfig(batch_size=512).max_batch == 1024
    assert SelfplayConfig(batch_size=2048).max_batch == 2048


def test_idle_cores_taken_by_other_programs_read_as_contended_not_as_a_process_lever():
    f = busy_figures(FLAT_CURVE, 32, 600.0, cores=2, used=0.6, procs=1)
    f.host_load = 1.8  # 3.6 runnable on 2 cores, the engine 0.6 of them
    v = diagnose(f, settings(32))
    assert v.kind == "contended" and "procs" not in v.advice and "load is 1.8 per core" in v.text
    f.host_load = 0.55  # the engine's own 1.1: nobody else
    f.cores_used = 1.1
    assert diagnose(f, settings(32)).kind == "cores idle"


def test_a_new_network_of_the_same_shape_keeps_the_curve_and_another_shape_is_measured(tmp_path, monkeypatch):
    """A loop's next generation (same blocks and channels, same device) runs
    at the same speed: swapping it in must not stall on a new measurement."""
    from sayuri_async.net.backends import TorchBackend
    from sayuri_async.net.model import Net, NetConfig
    from sayuri_async.selfplay.engine import Engine

    measured: list[str] = []

    def measure(self, n, batch_size):
        measured.append(self.name)
        return {1: 10.0, 2: 20.0}

    monkeypatch.setattr(TorchBackend, "measure_rates", measure)
    cfg = SelfplayConfig(batch_size=2, out=str(tmp_path), write_sgf=False, writer_process=False)
    first = TorchBackend(Net(NetConfig(blocks=1, channels=8)), threads=1, max_batch=2, name="a")
    engine = Engine(cfg, first)
    try:
        engine._measure_device()
        same = TorchBackend(Net(NetConfig(blocks=1, channels=8)), threads=1, max_batch=2, name="b")
        other = TorchBackend(Net(NetConfig(blocks=2, channels=8)), threads=1, max_batch=2, name="c")
        assert engine._rates_of(same) == ({1: 10.0, 2: 20.0}, 20.0)
        assert measured == ["a"]
        engine._rates_of(other)
        assert measured == ["a", "c"]
    finally:
        engine.close()


def test_auto_keeps_to_batches_a_short_run_can_fill():
    """24 games in 2 processes: 12 a process, 48 requests in flight, so by
    the rule of thumb batches of at most 24: the pick is among 1..16."""
    assert auto.games_fillable(24, 2, 4) == 24 and auto.games_fillable(0, 2, 4) is None
    assert auto.pick_batch(CPU_CURVE, most=24) == 16
    assert auto.pick_batch(CPU_CURVE, most=0) == 1  # nothing that small: the smallest bucket
    cfg = SelfplayConfig(batch_size="auto", procs=2, num_games=24, weights="net.safetensors")
    choice = auto.resolve(cfg, measure=lambda c, t: dict(CPU_CURVE), total_cores=2)
    assert choice.cfg.batch_size == 16 and "24 games fill batches of at most 24 a process" in choice.line


def test_the_verdict_advises_no_batch_the_run_has_not_the_games_to_fill():
    f = busy_figures(CPU_CURVE, 16, 1262.0)
    f.games_live, f.games_unstarted = 8, 4  # 12 games left, one leaf each: batches of 6 by the rule of thumb
    v = diagnose(f, settings(16))
    assert "batch_size" not in v.advice
    f.games_unstarted = 1000  # a long run: the faster batch
    assert diagnose(f, settings(16)).advice.get("batch_size") == 64
