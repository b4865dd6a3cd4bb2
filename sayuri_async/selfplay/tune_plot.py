"""``sayuri-async tune``'s pictures (matplotlib, when installed).

Vocabulary
----------
sweep plot   ``draw_png``: the grid's evals/s (mean, stdev bars) and busy
             against ``batch_size``, one line per (procs, games per batch):
             ``tune.png``.
curve        the device's evals/s per bucket as the backend measured it at
             the start of a point (``Status.device_rates``, the one curve the
             verdict and the live view read). ``device_curve(statuses)``
             takes it from a point's engine statuses: on a GPU (or the device
             model) every process measures the whole device, so the fullest
             set counts; on the CPU each process measures its own share of
             the cores, so a bucket's rates are added up over the processes
             (as ``report.device_best_of`` adds up their best rates).
curve plot   ``draw_curve``: the curve against the batch size (one per
             process count on a CPU, where the cores are shared out
             differently; one for a GPU), with the grid's measured points
             (self-play evals/s, mean and stdev) marked on it: how close
             self-play comes to what the device can do at each batch.
             ``curve.png`` beside ``tune.csv``.
Both return what happened, in words, for the report; neither fails the
sweep (no matplotlib, nothing measured: the picture is skipped, and says so).
Files are written to a temporary name and renamed (``fileio.atomic_path``).
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ..fileio import atomic_path
from .report import device_rates_of

if TYPE_CHECKING:  # tune imports this module
    from .status import Status
    from .tune import Result

NO_MATPLOTLIB = "matplotlib is not installed (pip install matplotlib)"


def _pyplot():
    """matplotlib's pyplot on the Agg backend, or None when not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def _save(fig, plt, path: Path) -> None:
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100, format="png")
    plt.close(fig)


def device_curve(statuses: Iterable[Status]) -> dict[int, float]:
    """A point's device curve from its engine statuses (see the vocabulary):
    on the CPU each bucket's rates added up over the processes (buckets
    every process measured), elsewhere the fullest set."""
    statuses = list(statuses)
    if not statuses or any(str(s.settings.device) != "cpu" for s in statuses):
        return {int(b): float(r) for b, r in device_rates_of(statuses).items()}
    rates = [{int(b): float(r) for b, r in s.device_rates.items()} for s in statuses]
    common = set.intersection(*(set(r) for r in rates))
    return {b: sum(r[b] for r in rates) for b in sorted(common)}


def draw_png(results: list[Result], path: Path, leaves_per_await: int = 1, dev: str = "GPU") -> str:
    """The sweep plot (see the vocabulary)."""
    plt = _pyplot()
    if plt is None:
        return f"{NO_MATPLOTLIB}: PNG skipped"
    good = [r for r in results if r.ok]
    if not good:
        return "nothing measured: PNG skipped"
    series: dict[str, list[Result]] = {}
    for r in good:
        p = r.point
        ratio = p.parallel_games * leaves_per_await / p.batch_size
        series.setdefault(f"procs {p.procs}, games {ratio:.3g}x (batches in flight)", []).append(r)
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(8, 7), sharex=True)
    for name, rs in sorted(series.items()):
        rs.sort(key=lambda r: r.point.batch_size)
        xs = [r.point.batch_size for r in rs]
        ax1.errorbar(xs, [r.mean() for r in rs], yerr=[r.stdev for r in rs], marker="o", capsize=3, label=name)
        ax2.plot(xs, [100 * r.mean("gpu_busy") for r in rs], marker="o", label=name)
    ax1.set_xscale("log", base=2)
    sizes = sorted({r.point.batch_size for r in good})
    ax1.set_xticks(sizes, [str(x) for x in sizes])
    ax1.set_ylim(bottom=0)
    ax1.set_ylabel("nnEvals/s (mean, stdev)")
    ax1.set_title("sayuri-async tune")
    ax1.legend(fontsize=8)
    ax2.set_ylabel(f"{dev} busy %")
    ax2.set_xlabel("batch_size")
    ax2.set_ylim(0, 105)
    ax1.grid(alpha=0.3)
    ax2.grid(alpha=0.3)
    _save(fig, plt, path)
    return f"plot written to {path}"


def curves_by_procs(results: list[Result], cpu: bool) -> dict[int, dict[int, float]]:
    """One curve per process count on a CPU (the fullest any of its points
    measured), one (under 0) elsewhere."""
    out: dict[int, dict[int, float]] = {}
    for r in results:
        if r.ok and r.device_rates:
            key = r.point.procs if cpu else 0
            if len(r.device_rates) > len(out.get(key, {})):
                out[key] = dict(r.device_rates)
    return out


def draw_curve(results: list[Result], path: Path, cpu: bool) -> str:
    """The curve plot (see the vocabulary); ``cpu``: the engines ran on the
    CPU (a curve per process count)."""
    curves = curves_by_procs(results, cpu)
    if not curves:
        return "no device curve (the random network measures none): curve PNG skipped"
    plt = _pyplot()
    if plt is None:
        return f"{NO_MATPLOTLIB}: curve PNG skipped"
    fig, ax = plt.subplots(figsize=(8, 5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    ticks: set[int] = set()
    for i, (procs, curve) in enumerate(sorted(curves.items())):
        colour = colours[i % len(colours)]
        xs = sorted(curve)
        ticks.update(xs)
        threads = next((r.threads for r in results if r.point.procs == procs and r.threads), None)
        name = "device"
        if cpu:
            name += f", procs {procs}" + (f" x {threads} thread{'s' if threads > 1 else ''}" if threads else "")
        ax.plot(xs, [curve[b] for b in xs], marker="o", color=colour, label=f"{name} (backend's measure)")
        points = sorted((r for r in results if r.ok and (not cpu or r.point.procs == procs)),
                        key=lambda r: r.point.batch_size)
        if points:
            ticks.update(r.point.batch_size for r in points)
            ax.errorbar([r.point.batch_size for r in points], [r.mean() for r in points],
                        yerr=[r.stdev for r in points], fmt="D", color=colour, capsize=3, markerfacecolor="none",
                        label=f"self-play, procs {procs}" if cpu else "self-play (the grid's points)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted(ticks), [str(x) for x in sorted(ticks)])
    ax.set_ylim(bottom=0)
    ax.set_xlabel("batch size (bucket)")
    ax.set_ylabel("nnEvals/s")
    ax.set_title("sayuri-async tune: the device's curve and the measured points")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    _save(fig, plt, path)
    return f"device curve written to {path}"
