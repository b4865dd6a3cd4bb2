"""``sayuri-async tune``: measure self-play throughput over a grid of
(parallel_games, batch_size, procs) and recommend the best setting.

Vocabulary
----------
Point        one setting of the grid: ``parallel_games``, ``batch_size`` and
             ``procs`` (engine processes per device; ``default_procs`` when
             ``--procs`` is not given: on a CPU 1 and the number of cores).
threads      torch threads per process (``torch_threads``): on a CPU with a
             network each of K processes gets cores // K; the table, the CSV
             and the recommendation say it.
MeasureSpec  how a point is measured: ``warmup_s`` after every process has
             sent its first batch (excluded: numba loading, CUDA graph
             capture, the first games' openings), then contiguous windows of
             ``window_s``. The point ends when the last ``min_windows``
             windows agree (stdev/mean at most ``cv_target``) or after
             ``max_windows`` (then it is flagged unstable).
Sample       the figures of one window: evals/s (summed over processes, each
             process's counters over its own clock), device efficiency
             (evals/s over the device's best, as the backend measured it),
             batch fill, busy (the device's own time where the backend
             reports it, per device), the driver's utilization (NVML, when
             available), loop busy (mean and max over processes), average
             batch size.
Result       a point and its samples (the stable tail): mean, stdev, min, max.
PointMeter   a reporter for ``run_selfplay`` that takes these samples from
             the engines' statuses and asks them to stop when done. It only
             reads the statuses' own clocks, so a fake engine can feed it
             virtual time.
measure      ``measure(point, spec) -> Result``; ``engine_measure(cfg)``
             runs the real engine (in this process for procs=1, child
             processes otherwise). Injectable: tests pass a fake one.
recommend    the point with the highest mean evals/s, and the cheaper points
             whose spread reaches it.
pictures     ``tune.png`` (the sweep) and ``curve.png`` (the device's curve
             with the measured points on it) beside ``tune.csv``
             (``tune_plot``).
"""
from __future__ import annotations

import argparse
import csv
import itertools
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..configfile import ConfigError, between, from_options, within
from ..console import console as wide_console
from ..usererror import ArgumentParser, UserError, answered, check_device, input_file, output_folder, stopped_by
from ..infer.stats import add_efficiency, rates
from .config import SelfplayConfig, add_device_model_options, device_model_overrides, load_selfplay_config
from .report import Figures, busy_label, cores, device_rates_of, diagnose, host_load
from .status import Status
from .tune_plot import device_curve, draw_curve, draw_png


@dataclass(frozen=True)
class Point:
    parallel_games: int
    batch_size: int
    procs: int = 1

    def label(self, threads: int | None = None) -> str:
        """``threads``: torch threads per process, where the point sets them."""
        each = f" x {threads} thread{'s' if threads > 1 else ''}" if threads else ""
        return f"procs {self.procs}{each}, games {self.parallel_games}, batch {self.batch_size}"


@dataclass
class MeasureSpec:
    warmup_s: float = 5.0
    window_s: float = 2.0
    min_windows: int = 4
    max_windows: int = 12
    cv_target: float = 0.05
    start_timeout_s: float = 300.0  # wall time allowed for the first batch

    def __post_init__(self) -> None:
        """Range checks (see ``configfile``): every point ends in bounded time."""
        between(self, 0, 3600, "warmup_s")
        within(self, "(0, 3600]", "window_s")
        between(self, 2, 1000, "min_windows")
        between(self, self.min_windows, 10_000, "max_windows")
        within(self, "(0, 1]", "cv_target")
        within(self, "(0, 86_400]", "start_timeout_s")


SPEC_OPTIONS = {"warmup_s": "--warmup", "window_s": "--window", "min_windows": "--min-windows",
                "max_windows": "--max-windows", "cv_target": "--cv"}
MAX_POINTS = 256  # points of one grid


@dataclass
class Sample:
    evals_s: float
    gpu_busy: float
    loop_busy: float
    loop_busy_max: float
    avg_batch: float
    driver_util: float | None = None
    verdict: str = ""
    efficiency: float | None = None  # evals/s over the device's best (None without a device)
    batch_fill: float = 0.0  # avg_batch over batch_size
    advice: dict = field(default_factory=dict)  # the verdict's advice (``report.Verdict.advice``)


@dataclass
class Result:
    point: Point
    samples: list[Sample] = field(default_factory=list)
    windows: int = 0  # windows measured in all (samples holds the tail)
    stable: bool = False
    error: str = ""
    device_rates: dict[int, float] = field(default_factory=dict)  # the device's curve (``tune_plot.device_curve``)
    threads: int | None = None  # torch threads per process (``torch_threads``)

    def values(self, key: str) -> list[float]:
        return [getattr(s, key) for s in self.samples if getattr(s, key) is not None]

    def mean(self, key: str = "evals_s") -> float:
        v = self.values(key)
        return statistics.fmean(v) if v else float("nan")

    @property
    def stdev(self) -> float:
        v = self.values("evals_s")
        return statistics.stdev(v) if len(v) > 1 else 0.0

    @property
    def lo(self) -> float:
        return min(self.values("evals_s"), default=float("nan"))

    @property
    def hi(self) -> float:
        return max(self.values("evals_s"), default=float("nan"))

    @property
    def ok(self) -> bool:
        return not self.error and bool(self.samples)

    @property
    def verdict(self) -> str:
        kinds = [s.verdict for s in self.samples if s.verdict]
        return max(set(kinds), key=kinds.count) if kinds else ""

    @property
    def advice(self) -> dict:
        """The advice of the most frequent verdict's latest window."""
        kind = self.verdict
        return next((dict(s.advice) for s in reversed(self.samples) if s.verdict == kind), {})


MeasureFn = Callable[[Point, MeasureSpec], Result]
INTERRUPTED = "interrupted"


def cv(values: list[float]) -> float:
    """stdev / mean (0 for fewer than two values, inf for a zero mean)."""
    if len(values) < 2:
        return 0.0
    m = statistics.fmean(values)
    return statistics.stdev(values) / m if m > 0 else math.inf


class PointMeter:
    """A ``run_selfplay`` reporter that measures one point (see the module
    docstring). ``probe()`` may return the driver's utilization (0..1)."""

    def __init__(self, point: Point, spec: MeasureSpec, procs: int, devices: int = 1,
                 probe: Callable[[], float | None] | None = None, clock: Callable[[], float] = time.monotonic,
                 leaves_per_await: int = 1) -> None:
        self.point = point
        self.leaves = leaves_per_await
        self.spec = spec
        self.procs = procs
        self.devices = devices
        self.probe = probe
        self.clock = clock
        self.t_created = clock()
        self.latest: dict[str, Status] = {}
        self.warm_from: dict[str, float] | None = None  # each process's clock when all were running
        self.start: dict[str, Status] | None = None  # window start statuses
        self.samples: list[Sample] = []
        self._driver: list[float] = []
        self.done = False
        self.stable = False
        self.error = ""

    # ---- reporter protocol -------------------------------------------
    def update(self, statuses: list[Status]) -> list[dict]:
        for i, s in enumerate(statuses):
            self.latest[str(s.pid or i)] = s
        if not self.done:
            self._advance()
        return [{"stop": True}] if self.done else []

    def close(self, statuses: list[Status]) -> None:
        if not self.done and not self.error:  # Ctrl-C, or an engine process that died
            self.error = INTERRUPTED + ("" if self.samples else " before the first window")

    # ---- measuring -----------------------------------------------------
    def _advance(self) -> None:
        sp = self.spec
        if self.warm_from is None:
            running = [s for s in self.latest.values() if s.counters.evals > 0]
            if len(running) >= self.procs:
                self.warm_from = {k: s.t for k, s in self.latest.items()}
            elif self.clock() - self.t_created > sp.start_timeout_s:
                self.error = f"no batches within {sp.start_timeout_s:.0f} s"
                self.done = True
            return
        if self.start is None:
            if all(self.latest[k].t >= t0 + sp.warmup_s for k, t0 in self.warm_from.items()):
                self.start = dict(self.latest)
            return
        if self.probe is not None:
            u = self.probe()
            if u is not None:
                self._driver.append(u)
        if all(self.latest[k].t >= s.t + sp.window_s for k, s in self.start.items()):
            self.samples.append(self._sample(self.start, self.latest))
            self.start = dict(self.latest)
            self._driver.clear()
            self._check_done()

    def _sample(self, a: dict[str, Status], b: dict[str, Status]) -> Sample:
        evals_s = busy_s = sum_batches_s = 0.0
        evals = batches = 0.0
        loops = []
        flush = {"full": 0, "waiting": 0, "timeout": 0}
        for k, sa in a.items():
            sb = b[k]
            ca, cb = sa.counters, sb.counters
            dt = sb.t - sa.t
            r = rates(ca, cb, dt, sb.loop_cpu_s - sa.loop_cpu_s)
            evals_s += r.nn_evals_s
            sum_batches_s += r.nn_batches_s
            busy_s += (cb.busy_s - ca.busy_s) / dt
            evals += cb.evals - ca.evals
            batches += cb.batches - ca.batches
            loops.append(r.loop_busy)
            for reason in flush:
                flush[reason] += cb.flush.get(reason, 0) - ca.flush.get(reason, 0)
        nflush = max(sum(flush.values()), 1)
        avg = evals / batches if batches else 0.0
        gpu = min(busy_s / max(self.devices, 1), 1.0)
        fig = Figures(nn_evals_s=evals_s, gpu_busy=gpu, loop_busy=statistics.fmean(loops), loop_busy_max=max(loops),
                      avg_batch_size=avg, flush_share={r: n / nflush for r, n in flush.items()},
                      host_load=host_load(), cores=os.cpu_count() or 1, procs=len(a), nn_batches_s=sum_batches_s)
        settings = replace(next(iter(b.values())).settings, leaves_per_await=self.leaves)
        best = max((s.device_best for s in b.values()), default=0.0)
        add_efficiency(fig, best, self.point.batch_size, self.devices)
        driver = statistics.fmean(self._driver) if self._driver else None
        fig.device_rates = device_rates_of(b.values())
        v = diagnose(fig, settings)
        return Sample(evals_s, gpu, fig.loop_busy, fig.loop_busy_max, avg, driver,
                      v.kind, fig.device_efficiency, fig.batch_fill, v.advice)

    def _check_done(self) -> None:
        sp = self.spec
        tail = self.samples[-sp.min_windows:]
        if len(self.samples) >= sp.min_windows and cv([s.evals_s for s in tail]) <= sp.cv_target:
            self.stable = True
            self.done = True
        elif len(self.samples) >= sp.max_windows:
            self.done = True

    def result(self) -> Result:
        tail = self.samples[-self.spec.min_windows:] if self.stable else list(self.samples)
        return Result(self.point, tail, len(self.samples), self.stable, self.error,
                      device_curve(self.latest.values()))


def engine_measure(base: SelfplayConfig, run: Callable | None = None,
                   probe: Callable[[], float | None] | None = None) -> MeasureFn:
    """A measure function over the real engine (``run`` defaults to
    ``run_selfplay``): self-play until stopped, output in a temporary folder."""
    devices = [d for d in base.device.split(",") if d.strip()] or ["cpu"]

    def measure(point: Point, spec: MeasureSpec) -> Result:
        runner = run
        if runner is None:
            from .runner import run_selfplay as runner
        with tempfile.TemporaryDirectory(prefix="sayuri-tune-") as tmp:
            cfg = replace(base, parallel_games=point.parallel_games, batch_size=point.batch_size,
                          procs=point.procs, num_games=0, out=tmp, write_sgf=False)
            meter = PointMeter(point, spec, procs=point.procs * len(devices), devices=len(devices), probe=probe,
                               leaves_per_await=base.search.leaves_per_await)
            try:
                if run is None:  # a signal stops the point cleanly and sets the command's exit status
                    runner(cfg, meter, on_signal=stopped_by)
                else:
                    runner(cfg, meter)
            except Exception as e:  # one bad point (out of memory, say) must not end the sweep
                meter.error = f"{type(e).__name__}: {e}"
        return replace(meter.result(), threads=torch_threads(base, point.procs))

    return measure


def run_sweep(points: list[Point], measure: MeasureFn, spec: MeasureSpec,
              on_result: Callable[[Result], None] | None = None,
              on_start: Callable[[Point], None] | None = None) -> list[Result]:
    """Measure each point in turn; an interrupted point ends the sweep."""
    out = []
    for p in points:
        if on_start is not None:
            on_start(p)
        res = measure(p, spec)
        out.append(res)
        if on_result is not None:
            on_result(res)
        if res.error.startswith(INTERRUPTED):
            break
    return out


def recommend(results: list[Result]) -> tuple[Result | None, list[Result]]:
    """The best point by mean evals/s, and cheaper points (fewer processes,
    then fewer games) whose best window reaches the best point's worst."""
    good = [r for r in results if r.ok]
    if not good:
        return None, []
    best = max(good, key=lambda r: r.mean())
    cost = (best.point.procs, best.point.parallel_games)
    close = [r for r in good if r is not best and r.hi >= best.lo and (r.point.procs, r.point.parallel_games) < cost]
    close.sort(key=lambda r: (r.point.procs, r.point.parallel_games, -r.mean()))
    return best, close


def grid(games: list[str], batches: list[int], procs: list[int], leaves_per_await: int = 1) -> list[Point]:
    """Points of the grid. A games token ``"Nx"`` means enough games for N
    batches of requests in flight: N x batch_size / leaves_per_await."""
    out: list[Point] = []
    for pr, b, g in itertools.product(procs, batches, games):
        n = math.ceil(float(g[:-1]) * b / max(leaves_per_await, 1)) if g.endswith("x") else int(g)
        p = Point(max(n, 1), b, pr)
        if p not in out:
            out.append(p)
    return out


def default_procs(device: str) -> list[int]:
    """``--procs`` when not given: on a CPU one process and one per core
    (``report.cores``), the two ends ``procs = "auto"`` chooses between; on a
    GPU or the device model one (give ``--procs`` when the verdict says
    CPU-bound)."""
    return sorted({1, cores()}) if device == "cpu" else [1]


def torch_threads(base: SelfplayConfig, procs: int) -> int | None:
    """Torch threads per engine process at ``procs`` processes: on a CPU with
    a network each gets its share of the cores (as ``runner`` builds its
    backend); None where the count does not apply."""
    return max(1, cores() // max(procs, 1)) if base.weights and base.device == "cpu" else None


# ---- output ---------------------------------------------------------------
CSV_FIELDS = ["procs", "threads", "parallel_games", "batch_size", "evals_s_mean", "evals_s_stdev", "evals_s_min",
              "evals_s_max", "windows", "stable", "avg_batch", "batch_fill", "device_efficiency", "busy",
              "driver_util", "loop_busy", "loop_busy_max", "verdict", "error", "samples_evals_s"]


def _f(x: float | None, fmt: str = ".4g") -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, fmt)


def write_csv(results: list[Result], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_FIELDS)
        for r in results:
            p = r.point
            drv = r.mean("driver_util") if r.values("driver_util") else None
            w.writerow([p.procs, r.threads or "", p.parallel_games, p.batch_size, _f(r.mean(), ".1f"),
                        _f(r.stdev, ".1f"), _f(r.lo, ".1f"), _f(r.hi, ".1f"), r.windows, int(r.stable),
                        _f(r.mean("avg_batch"), ".2f"), _f(r.mean("batch_fill"), ".4f"),
                        _f(r.mean("efficiency"), ".4f"), _f(r.mean("gpu_busy"), ".4f"), _f(drv, ".4f"),
                        _f(r.mean("loop_busy"), ".4f"), _f(r.mean("loop_busy_max"), ".4f"), r.verdict, r.error,
                        ";".join(f"{s.evals_s:.1f}" for s in r.samples)])


def _pct(r: Result, key: str) -> str:
    return f"{r.mean(key):.0%}" if r.values(key) else "n/a"


def results_table(results: list[Result], best: Result | None, dev: str = "GPU"):
    """``dev``: what the busy figure measured (``report.busy_label``).
    Where the points set torch threads, the procs column reads ``procs x
    threads`` (per process)."""
    from rich.table import Table

    t = Table(title="sayuri-async tune: nnEvals/s per setting (warm-up excluded)")
    threads = any(r.threads for r in results)
    for col, just in [("procs x threads" if threads else "procs", "right"), ("games", "right"), ("batch", "right"),
                      ("evals/s", "right"), ("± stdev", "right"), ("min-max", "right"), ("windows", "right"),
                      ("avg batch", "right"), ("fill", "right"), ("efficiency", "right"), (f"{dev} busy", "right"),
                      ("driver", "right"), ("loop max", "right"), ("verdict", "left")]:
        t.add_column(col, justify=just)
    for r in results:
        p = r.point
        procs = f"{p.procs} x {r.threads}" if r.threads else str(p.procs)
        if not r.ok:
            t.add_row(procs, str(p.parallel_games), str(p.batch_size), "-", "", "", str(r.windows), "",
                      "", "", "", "", "", f"[red]{r.error}[/]")
            continue
        win = f"{len(r.samples)}/{r.windows}" + ("" if r.stable else " unstable")
        t.add_row(procs, str(p.parallel_games), str(p.batch_size), f"{r.mean():.0f}", f"{r.stdev:.0f}",
                  f"{r.lo:.0f}-{r.hi:.0f}", win, f"{r.mean('avg_batch'):.1f}", _pct(r, "batch_fill"),
                  _pct(r, "efficiency"), f"{r.mean('gpu_busy'):.0%}", _pct(r, "driver_util"),
                  f"{r.mean('loop_busy_max'):.0%}", r.verdict, style="bold green" if r is best else "")
    return t


def recommendation_lines(best: Result | None, close: list[Result], dev: str = "GPU") -> list[str]:
    if best is None:
        return ["no point was measured: no recommendation"]
    p = best.point
    eff = f", device efficiency {best.mean('efficiency'):.0%}" if best.values("efficiency") else ""
    lines = [f"recommended: --procs {p.procs} --parallel-games {p.parallel_games} --batch-size {p.batch_size}  "
             f"({best.mean():.0f} evals/s, stdev {best.stdev:.0f}{eff}, {dev} busy {best.mean('gpu_busy'):.0%}"
             + (f", {best.threads} torch thread(s) per process" if best.threads else "") + ")"]
    if not best.stable:
        lines.append("  note: this point did not settle within the windows allowed; measure longer (--max-windows)")
    for r in close[:3]:
        lines.append(f"  within its spread and cheaper: {r.point.label(r.threads)} ({r.mean():.0f} evals/s)")
    return lines


# ---- command line ------------------------------------------------------------
def _ints(s: str, option: str = "--batch") -> list[int]:
    """Comma-separated whole numbers of at least 1; UserError naming ``option``."""
    try:
        values = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"{option} {s!r}: whole numbers separated by commas") from None
    if not values or min(values) < 1:
        raise UserError(f"{option} {s!r}: each value must be at least 1")
    return values


def _games(s: str) -> list[str]:
    """``--games`` tokens: whole numbers of at least 1, or ``Nx`` with N > 0."""
    tokens = [g.strip() for g in s.split(",") if g.strip()]
    for g in tokens:
        try:
            ok = 0 < float(g[:-1]) <= 1000 if g.endswith("x") else int(g) >= 1
        except ValueError:
            ok = False
        if not ok:
            raise UserError(f"--games {g!r}: a number of games (at least 1) or Nx (N batches in flight, "
                            f"0 < N <= 1000)")
    if not tokens:
        raise UserError("--games: give at least one value")
    return tokens


def free_name(folder: Path, stem: str, suffix: str) -> Path:
    """``folder/stem.suffix``, or ``stem-2``, ``stem-3`` ... when taken: never over an earlier run's file."""
    path, k = folder / f"{stem}{suffix}", 2
    while path.exists():
        path, k = folder / f"{stem}-{k}{suffix}", k + 1
    return path


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="sayuri-async tune",
                                description="Measure self-play evals/s over a grid of settings and recommend one.")
    p.add_argument("--config", help="TOML config (default: configs/selfplay-9x9.toml)")
    p.add_argument("--weights", help="network weights (random network when absent)")
    p.add_argument("--device", help="cpu, cuda:0, a list like cuda:0,cuda:1, or model (the device model)")
    add_device_model_options(p)
    p.add_argument("--board-size", type=int, action="append", dest="board_sizes", help="board size (repeatable)")
    p.add_argument("--playouts", type=int, help="playouts per full search")
    p.add_argument("--batch", default="16,32,64", help="batch sizes, comma-separated (default 16,32,64)")
    p.add_argument("--games", default="2x",
                   help="parallel games per process: numbers, or Nx for N batches of requests in flight, "
                        "N x batch_size / leaves_per_await (default 2x)")
    p.add_argument("--procs", help="engine processes per device, comma-separated (default: on a CPU 1 and "
                                   "the number of cores, each process with its share of the cores as torch threads; "
                                   "elsewhere 1)")
    p.add_argument("--warmup", type=float, default=5.0, help="seconds excluded after the first batch (default 5)")
    p.add_argument("--window", type=float, default=2.0, help="seconds per measurement window (default 2)")
    p.add_argument("--min-windows", type=int, default=4, help="windows that must agree (default 4)")
    p.add_argument("--max-windows", type=int, default=12, help="give up on stability after this many (default 12)")
    p.add_argument("--cv", type=float, default=0.05, help="stability: stdev/mean of the last windows (default 0.05)")
    p.add_argument("--out", default="runs/tune", help="folder for tune.csv, tune.png and curve.png (default runs/tune; "
                                                      "tune-2.csv ... when an earlier run's are there)")
    return p


@answered("tune")
def main(argv: list[str] | None = None, measure: MeasureFn | None = None) -> int:

    from .cli import DEFAULT_CONFIG

    args = build_parser().parse_args(argv)
    console = wide_console()
    config = args.config or (str(DEFAULT_CONFIG) if DEFAULT_CONFIG.exists() else None)
    try:
        base = load_selfplay_config(config, {"weights": args.weights, "device": args.device,
                                             "board_sizes": args.board_sizes, "playouts": args.playouts,
                                             **device_model_overrides(args)})
        spec = from_options(MeasureSpec, {"warmup_s": args.warmup, "window_s": args.window,
                                          "min_windows": args.min_windows, "max_windows": args.max_windows,
                                          "cv_target": args.cv}, SPEC_OPTIONS)
        batches = _ints(args.batch, "--batch")
        procs = _ints(args.procs, "--procs") if args.procs else default_procs(base.device)
        for b in batches:  # self-play's own ranges, naming tune's options
            from_options(SelfplayConfig, {"batch_size": b}, {"batch_size": "--batch"}, base=base)
        for k in procs:
            from_options(SelfplayConfig, {"procs": k}, base=base)
        points = grid(_games(args.games), batches, procs, base.search.leaves_per_await)
        if len(points) > MAX_POINTS:
            raise UserError(f"--games, --batch, --procs: a grid of {len(points)} points, at most {MAX_POINTS}")
        for pt in points:
            from_options(SelfplayConfig, {"parallel_games": pt.parallel_games, "batch_size": pt.batch_size,
                                          "procs": pt.procs},
                         {"parallel_games": "--games", "batch_size": "--batch", "procs": "--procs"}, base=base)
    except (ConfigError, ValueError) as e:
        print(f"sayuri-async tune: {e}", file=sys.stderr)
        return 2
    if base.weights:
        input_file(base.weights, "--weights", "weights file")
    check_device(base.device, "--device", allow=(r"model(:\d+)?",))
    out = output_folder(args.out, "--out", inputs=[base.weights, config])
    if measure is None:
        probe = None
        devices = [d for d in base.device.split(",") if d.strip()]
        from .tui import GpuProbe

        gp = GpuProbe(devices)
        if gp.available:
            def probe() -> float | None:
                vals = [u for _, u, _, _ in gp.read()]
                return statistics.fmean(vals) if vals else None
        measure = engine_measure(base, probe=probe)
    dev = busy_label(base.device)
    why_procs = ("" if args.procs else f" (the default: 1 and the {cores()} cores)" if len(procs) > 1
                 else " (the default)")
    net = base.weights or ("device model " + base.device_model if dev == "GPU" and base.device.startswith("model")
                           else "random network (no weights)")
    console.print(f"tune: {net} on {base.device}, boards {base.board_sizes}, playouts {base.playouts}, "
                  f"leaves_per_await {base.search.leaves_per_await}; procs {','.join(map(str, procs))}{why_procs}; "
                  f"{len(points)} point(s), warm-up {spec.warmup_s:g} s, windows of {spec.window_s:g} s "
                  f"({spec.min_windows} agreeing within {spec.cv_target:.0%}, at most {spec.max_windows})",
                  highlight=False)

    t0 = [time.monotonic()]

    def on_start(p: Point) -> None:
        t0[0] = time.monotonic()
        if console.is_terminal:
            console.print(f"  {p.label(torch_threads(base, p.procs)):<36} measuring...", end="\r", highlight=False)

    def on_result(r: Result) -> None:
        took = f"{time.monotonic() - t0[0]:5.0f} s"
        if r.ok:
            console.print(f"  {r.point.label(r.threads):<36} {r.mean():9.0f} evals/s  stdev {r.stdev:7.0f}  "
                          f"{dev} {r.mean('gpu_busy'):4.0%}  {len(r.samples)}/{r.windows} windows"
                          f"{'' if r.stable else ' (unstable)'}  {took}", highlight=False)
        else:
            console.print(f"  {r.point.label(r.threads):<36} failed: {r.error}  {took}", highlight=False)

    results = run_sweep(points, measure, spec, on_result, on_start)
    best, close = recommend(results)
    console.print(results_table(results, best, dev))
    csv_path = free_name(out, "tune", ".csv")
    write_csv(results, csv_path)
    earlier = f" ({out / 'tune.csv'} holds an earlier run's, kept)" if csv_path.name != "tune.csv" else ""
    console.print(f"table written to {csv_path}{earlier}", highlight=False)
    console.print(draw_png(results, csv_path.with_suffix(".png"), base.search.leaves_per_await, dev),
                  highlight=False)
    curve_png = csv_path.with_name(csv_path.name.replace("tune", "curve", 1)).with_suffix(".png")
    console.print(draw_curve(results, curve_png, base.device == "cpu"), highlight=False)
    for line in recommendation_lines(best, close, dev):
        console.print(line, highlight=False)
    return 0 if best is not None else 1


if __name__ == "__main__":
    sys.exit(main())
