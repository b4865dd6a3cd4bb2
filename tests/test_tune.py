"""The sweep: measurement of one point from a fake engine on virtual time
(warm-up excluded, stability rule), recommendation, CSV/PNG output."""
from __future__ import annotations

import csv
import math
import sys

import numpy as np
import pytest

from sayuri_async.infer.stats import HIST_BINS, Counters
from sayuri_async.search.config import SearchConfig
from sayuri_async.selfplay.config import SelfplayConfig
from sayuri_async.selfplay.status import EngineSettings, Status
from sayuri_async.selfplay.tune import (
    MeasureSpec, Point, PointMeter, Result, Sample, cv, engine_measure, grid, main, recommend, run_sweep,
)
from sayuri_async.selfplay.tune_plot import device_curve, draw_curve, draw_png

SPEC = MeasureSpec(warmup_s=3.0, window_s=1.0, min_windows=4, max_windows=8, cv_target=0.05)


def known_rate(p: Point, leaves: int = 1) -> float:
    """Evals/s per process of the fake engine: peaks at batch 64 with two
    batches of requests in flight, and a second process adds 60%."""
    per = 1000.0 * (6.0 - 0.5 * (math.log2(p.batch_size) - 6.0) ** 2)
    per *= min(p.parallel_games * leaves / (2 * p.batch_size), 1.0)
    return per * (1.0 + 0.6 * (p.procs - 1)) / p.procs


class FakeEngines:
    """``run(cfg, reporter)`` like ``run_selfplay``: ``cfg.procs`` processes
    on a virtual clock, no evals for ``start_s``, half speed until
    ``slow_s``, then ``rate`` evals/s each (times ``wobble(window)``)."""

    def __init__(self, start_s: float = 1.0, slow_s: float = 2.5, wobble=None, stop_after: float | None = None):
        self.start_s, self.slow_s = start_s, slow_s
        self.wobble = wobble or (lambda k: 1.0)
        self.stop_after = stop_after
        self.cfgs: list[SelfplayConfig] = []

    def __call__(self, cfg: SelfplayConfig, reporter) -> list[Status]:
        self.cfgs.append(cfg)
        p = Point(cfg.parallel_games, cfg.batch_size, cfg.procs)
        rate = known_rate(p, cfg.search.leaves_per_await)
        evals = [0.0] * cfg.procs
        t, dt = 0.0, 0.5
        statuses: list[Status] = []
        while t < 1000:
            t += dt
            for i in range(cfg.procs):
                if t > self.start_s:
                    speed = 0.5 if t <= self.slow_s else self.wobble(int(t))
                    evals[i] += rate * speed * dt
            statuses = [self._status(i, t + 0.01 * i, evals[i], cfg) for i in range(cfg.procs)]
            if self.stop_after is not None and t >= self.stop_after:
                break
            if any(c.get("stop") for c in reporter.update(statuses)):
                break
        reporter.close(statuses)
        return statuses

    @staticmethod
    def _status(i: int, t: float, evals: float, cfg: SelfplayConfig) -> Status:
        b = cfg.batch_size
        batches = int(evals / b)
        hist = np.zeros(HIST_BINS, dtype=np.int64)
        hist[b] = batches
        c = Counters(evals=int(evals), batches=batches, flush={"full": batches, "waiting": 0, "timeout": 0},
                     busy_s=0.4 * t, queue_wait_s=0.0, cache_lookups=0, cache_hits=0, requests=int(evals),
                     playouts=int(evals), moves=0, games=0, positions=0, hist=hist, queue_depth=0, in_flight=0)
        return Status(t=100.0 + t, elapsed=t, loop_cpu_s=0.99 * t, counters=c,
                      settings=EngineSettings(batch_size=b, parallel_games=cfg.parallel_games, timeout_ms=5.0,
                                              paused=False, device="cuda:0"),
                      games=[], finished=0, chunks=0, positions_written=0, pid=1000 + i)


ONE_LEAF = SelfplayConfig(search=SearchConfig(leaves_per_await=1))


def measure_with(fake: FakeEngines, point: Point, spec: MeasureSpec = SPEC, base: SelfplayConfig = ONE_LEAF) -> Result:
    return engine_measure(base, run=fake)(point, spec)


def test_meter_excludes_warmup_and_stops_when_stable():
    fake = FakeEngines()
    p = Point(128, 64, 1)
    res = measure_with(fake, p)
    assert res.ok and res.stable and res.windows == SPEC.min_windows
    assert res.mean() == pytest.approx(known_rate(p), rel=1e-3)  # the half-speed start is not in it
    assert res.stdev == pytest.approx(0.0, abs=1.0)
    assert res.mean("avg_batch") == pytest.approx(64, rel=1e-2)
    assert res.mean("gpu_busy") == pytest.approx(0.4, rel=1e-3)
    assert res.verdict == "CPU-bound"  # loop 99%, GPU 40%
    cfg = fake.cfgs[0]
    assert (cfg.parallel_games, cfg.batch_size, cfg.procs, cfg.num_games) == (128, 64, 1, 0)
    assert not cfg.write_sgf


def test_meter_sums_processes():
    p = Point(64, 32, 2)
    res = measure_with(FakeEngines(), p)
    assert res.stable and res.mean() == pytest.approx(2 * known_rate(p), rel=1e-3)
    assert res.mean("gpu_busy") == 0.8  # 2 x 0.4 on one device


def test_unstable_point_runs_max_windows_and_reports_spread():
    res = measure_with(FakeEngines(wobble=lambda k: 1.3 if k % 2 else 0.7), Point(64, 32, 1))
    assert res.ok and not res.stable and res.windows == SPEC.max_windows
    assert len(res.samples) == SPEC.max_windows
    base = known_rate(Point(64, 32, 1))
    assert res.lo == pytest.approx(0.7 * base, rel=1e-3) and res.hi == pytest.approx(1.3 * base, rel=1e-3)
    assert res.stdev > 0.2 * base


def test_meter_reports_interruption_and_failures():
    res = measure_with(FakeEngines(stop_after=7.0), Point(64, 32, 1))
    assert res.error == "interrupted" and not res.ok
    res = measure_with(FakeEngines(stop_after=2.0), Point(64, 32, 1))
    assert res.error == "interrupted before the first window"

    def broken(cfg, reporter):
        raise RuntimeError("CUDA out of memory")

    res = engine_measure(SelfplayConfig(), run=broken)(Point(64, 32, 1), SPEC)
    assert res.error == "RuntimeError: CUDA out of memory"


def test_meter_gives_up_without_batches():
    clock = iter(range(0, 10000, 100))
    meter = PointMeter(Point(8, 4), MeasureSpec(start_timeout_s=250), procs=1, clock=lambda: next(clock))
    st = FakeEngines._status(0, 1.0, 0.0, SelfplayConfig(batch_size=4, parallel_games=8))
    assert meter.update([st]) == [] and meter.update([st]) == []
    assert meter.update([st]) == [{"stop": True}]
    assert "no batches" in meter.result().error


def test_sweep_recommends_the_best_point_of_the_fake_engine():
    points = grid(["2x", "1x"], [16, 32, 64, 128], [1, 2])
    fake = FakeEngines()
    results = run_sweep(points, lambda p, s: measure_with(fake, p, s), SPEC)
    assert len(results) == len(points) == 16
    best, _ = recommend(results)
    truth = max(points, key=lambda p: known_rate(p) * p.procs)
    assert best.point == truth == Point(128, 64, 2)


def test_recommend_lists_cheaper_points_within_the_spread():
    def res(p, vals):
        return Result(p, [Sample(v, 0.5, 0.5, 0.5, 32) for v in vals], len(vals), True)

    best_r = res(Point(256, 64, 2), [1000, 1100, 1050])
    near = res(Point(128, 64, 1), [990, 1010, 1000])
    far = res(Point(64, 32, 1), [500, 510, 505])
    failed = Result(Point(512, 256, 1), error="RuntimeError: CUDA out of memory")
    best, close = recommend([far, near, best_r, failed])
    assert best is best_r and close == [near]
    assert recommend([failed]) == (None, [])


def test_sweep_stops_when_interrupted():
    calls = []

    def measure(p, s):
        calls.append(p)
        return Result(p, error="interrupted")

    started, done = [], []
    results = run_sweep(grid(["2x"], [8, 16], [1]), measure, SPEC, done.append, started.append)
    assert len(results) == 1 and calls == started == [Point(16, 8)] and done == results


def test_grid_and_cv():
    assert grid(["2x", "100"], [32, 64], [1]) == [Point(64, 32), Point(100, 32), Point(128, 64), Point(100, 64)]
    assert grid(["1.5x"], [16], [1, 4]) == [Point(24, 16, 1), Point(24, 16, 4)]
    assert grid(["2x", "64"], [32], [1]) == [Point(64, 32)]  # duplicates once
    assert grid(["2x"], [32], [1], leaves_per_await=4) == [Point(16, 32)]
    assert grid(["3x"], [10], [1], leaves_per_await=4) == [Point(8, 10)]
    assert cv([5.0]) == 0.0 and cv([0.0, 0.0]) == math.inf and cv([9.0, 11.0]) == pytest.approx(0.1414, rel=1e-3)


def test_main_prints_table_writes_csv_and_plot(tmp_path, capsys):
    conf = tmp_path / "c.toml"
    conf.write_text("[selfplay]\nboard_sizes = [9]\n[search]\nleaves_per_await = 2\n")
    two = SelfplayConfig(search=SearchConfig(leaves_per_await=2))
    fake = FakeEngines()
    rc = main(["--config", str(conf), "--batch", "16,64", "--games", "2x", "--procs", "1,2", "--warmup", "3",
               "--window", "1", "--out", str(tmp_path)], measure=lambda p, s: measure_with(fake, p, s, two))
    out = capsys.readouterr().out
    assert rc == 0
    assert "leaves_per_await 2" in out
    assert "recommended: --procs 2 --parallel-games 64 --batch-size 64" in out
    assert "evals/s" in out and "backend busy" in out  # a CPU run: no GPU was measured
    rows = list(csv.DictReader(open(tmp_path / "tune.csv")))
    assert len(rows) == 4
    top = max(rows, key=lambda r: float(r["evals_s_mean"]))
    assert (top["procs"], top["parallel_games"], top["batch_size"]) == ("2", "64", "64")
    assert top["stable"] == "1" and len(top["samples_evals_s"].split(";")) == 4
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib is not installed" in out and not (tmp_path / "tune.png").exists()
    else:
        assert (tmp_path / "tune.png").stat().st_size > 1000


def test_main_rejects_bad_arguments(capsys):
    assert main(["--batch", "x"], measure=lambda p, s: Result(p)) == 2
    assert main(["--min-windows", "1"], measure=lambda p, s: Result(p)) == 2
    assert main(["--batch", "8", "--out", "/tmp/sayuri-tune-none"], measure=lambda p, s: Result(p, error="boom")) == 1
    assert "no recommendation" in capsys.readouterr().out


def test_png_is_skipped_without_matplotlib(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    res = measure_with(FakeEngines(), Point(64, 32, 1))
    msg = draw_png([res], tmp_path / "t.png")
    assert "matplotlib is not installed" in msg and "skipped" in msg and not (tmp_path / "t.png").exists()


@pytest.mark.slow
def test_a_second_run_keeps_the_first_runs_csv(tmp_path, capsys):
    fake = FakeEngines()
    args = ["--batch", "16", "--games", "2x", "--warmup", "3", "--window", "1", "--out", str(tmp_path)]
    assert main(args, measure=lambda p, s: measure_with(fake, p, s)) == 0
    first = (tmp_path / "tune.csv").read_text()
    capsys.readouterr()
    assert main(args, measure=lambda p, s: measure_with(fake, p, s)) == 0
    out = " ".join(capsys.readouterr().out.split())  # rich may wrap the long line
    assert (tmp_path / "tune.csv").read_text() == first
    assert (tmp_path / "tune-2.csv").is_file()
    assert f"table written to {tmp_path / 'tune-2.csv'} ({tmp_path / 'tune.csv'} holds an earlier run's, kept)" in out


CURVE = {8: 3000.0, 16: 5000.0, 32: 7000.0, 64: 8000.0, 128: 8100.0}


class CurveEngines(FakeEngines):
    """The fake engines on a CPU with a network: each process reports the
    device's curve it measured at its start (its share of the cores)."""

    @staticmethod
    def _status(i: int, t: float, evals: float, cfg: SelfplayConfig) -> Status:
        st = FakeEngines._status(i, t, evals, cfg)
        st.settings.device = "cpu"
        st.device_rates = {b: r / cfg.procs for b, r in CURVE.items()}
        return st


def test_default_procs_grid_is_one_and_the_cores_on_a_cpu(monkeypatch):
    import sayuri_async.selfplay.tune as tune

    monkeypatch.setattr(tune, "cores", lambda: 8)
    assert tune.default_procs("cpu") == [1, 8]
    assert tune.default_procs("cuda:0") == tune.default_procs("model") == tune.default_procs("cuda:0,cuda:1") == [1]
    monkeypatch.setattr(tune, "cores", lambda: 1)
    assert tune.default_procs("cpu") == [1]
    monkeypatch.setattr(tune, "cores", lambda: 4)
    net = SelfplayConfig(weights="net.safetensors", device="cpu")
    assert [tune.torch_threads(net, k) for k in (1, 2, 4, 8)] == [4, 2, 1, 1]  # as runner builds the backend
    assert tune.torch_threads(SelfplayConfig(device="cpu"), 2) is None  # the random network has no threads
    assert tune.torch_threads(SelfplayConfig(weights="n", device="cuda:0"), 2) is None


def test_main_tries_every_core_by_default_and_says_the_threads(tmp_path, capsys, monkeypatch):
    import sayuri_async.selfplay.tune as tune

    monkeypatch.setattr(tune, "cores", lambda: 2)
    weights = tmp_path / "net.safetensors"
    weights.write_bytes(b"not read: the engines are fake")
    base = SelfplayConfig(weights=str(weights), device="cpu", search=SearchConfig(leaves_per_await=1))
    fake = CurveEngines()
    conf = tmp_path / "c.toml"
    conf.write_text("[selfplay]\nboard_sizes = [9]\n[search]\nleaves_per_await = 1\n")
    rc = main(["--config", str(conf), "--weights", str(weights), "--device", "cpu", "--batch", "16,64",
               "--warmup", "3", "--window", "1", "--out", str(tmp_path / "out")],
              measure=lambda p, s: measure_with(fake, p, s, base))
    out = " ".join(capsys.readouterr().out.split())
    assert rc == 0
    assert sorted({c.procs for c in fake.cfgs}) == [1, 2]  # no --procs: 1 and the cores
    assert "procs 1,2 (the default: 1 and the 2 cores)" in out
    assert "procs 2 x 1 thread, games 32, batch 16" in out and "procs 1 x 2 threads, games 128, batch 64" in out
    assert "procs x threads" in out and "2 x 1" in out  # the table
    assert "recommended: --procs 2 --parallel-games 128 --batch-size 64" in out
    assert "1 torch thread(s) per process" in out
    rows = list(csv.DictReader(open(tmp_path / "out" / "tune.csv")))
    assert {(r["procs"], r["threads"]) for r in rows} == {("1", "2"), ("2", "1")}
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "curve PNG skipped" in out
    else:
        assert f"device curve written to {tmp_path / 'out' / 'curve.png'}" in out
        assert (tmp_path / "out" / "curve.png").stat().st_size > 1000


def test_a_points_result_carries_the_devices_curve():
    res = measure_with(CurveEngines(), Point(64, 32, 2))
    assert res.device_rates == pytest.approx(CURVE)  # the two processes' halves added up
    assert measure_with(FakeEngines(), Point(64, 32, 1)).device_rates == {}  # the random network measures none


def test_device_curve_adds_cpu_processes_and_takes_a_gpus_fullest():
    def st(device: str, rates: dict) -> Status:
        s = FakeEngines._status(0, 1.0, 0.0, SelfplayConfig(batch_size=8, parallel_games=16))
        s.settings.device = device
        s.device_rates = rates
        return s

    assert device_curve([st("cpu", {8: 100.0, 16: 150.0}), st("cpu", {8: 110.0})]) == {8: 210.0}  # buckets both have
    assert device_curve([st("cuda:0", {8: 100.0}), st("cuda:0", {8: 90.0, 16: 170.0})]) == {8: 90.0, 16: 170.0}
    assert device_curve([]) == {} and device_curve([st("cpu", {})]) == {}


def test_curve_png_is_drawn_with_the_measured_points(tmp_path):
    pytest.importorskip("matplotlib")
    results = [measure_with(CurveEngines(), Point(2 * b, b, k)) for b in (16, 64) for k in (1, 2)]
    for r in results:
        r.threads = 2 // r.point.procs
    msg = draw_curve(results, tmp_path / "curve.png", cpu=True)
    assert msg == f"device curve written to {tmp_path / 'curve.png'}"
    assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["curve.png"]  # no temporary left behind
    gpu = [measure_with(FakeEngines(), Point(32, 16, 1))]
    gpu[0].device_rates = dict(CURVE)
    assert "written" in draw_curve(gpu, tmp_path / "gpu.png", cpu=False)


def test_curve_png_is_skipped_without_rates_or_matplotlib(tmp_path, monkeypatch):
    res = measure_with(FakeEngines(), Point(64, 32, 1))
    msg = draw_curve([res], tmp_path / "c.png", cpu=False)
    assert "no device curve" in msg and "skipped" in msg and not (tmp_path / "c.png").exists()
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    res.device_rates = dict(CURVE)
    msg = draw_curve([res], tmp_path / "c.png", cpu=False)
    assert "matplotlib is not installed" in msg and "skipped" in msg and not (tmp_path / "c.png").exists()
