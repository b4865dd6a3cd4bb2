"""``sayuri-async plot``: PNG curves of the training log.

Vocabulary: the *log* is ``<run>/train_log.csv`` written by the trainer (one
row per logging interval, columns ``checkpoint.LOG_COLUMNS``). The command
writes ``losses.png`` (the total and each loss term with values against
steps, one panel each, a Sayuri net's other losses included) and ``lr.png``
(learning rate and samples/s) next to the log, or into ``--out``. Every row
is a point on its curve: a log of one row (a short run writes a row every
``[run] log_every`` steps and one at the end) shows that point, and the
command says in one line that curves need more rows. matplotlib is an optional extra (``pip install 'sayuri-async[plot]'``);
without it the command says so and exits with status 3.
"""
from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

from sayuri_async.train.losses import LOSS_NAMES, SAYURI_LOSS_NAMES
from sayuri_async.usererror import ArgumentParser, answered, output_folder

NO_MATPLOTLIB = 3
FEW_ROWS = 2  # below this many rows there is no curve, only points


def read_log(path: Path) -> dict[str, list[float]]:
    """Columns of the CSV log as float lists (unparseable cells become NaN)."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    columns: dict[str, list[float]] = {}
    for row in rows:
        for key, text in row.items():
            try:
                value = float(text)
            except (TypeError, ValueError):
                value = math.nan
            columns.setdefault(key, []).append(value)
    return columns


def drawable(values: list[float] | None) -> bool:
    """Has the column at least one finite value?"""
    return any(math.isfinite(v) for v in values or [])


def few_rows_note(log: Path, rows: int) -> str | None:
    """A line for a log too short for curves (``FEW_ROWS``), else None."""
    if rows >= FEW_ROWS:
        return None
    return (f"{log} has {rows} row{'s' if rows != 1 else ''} (one every [run] log_every steps, and one at the "
            f"end): the charts show {'it as a point' if rows == 1 else 'them as points'}; curves need more steps")


def _panels(ax_list, steps: list[float], cols: dict[str, list[float]], names: list[str], colors: list[str]) -> None:
    for ax, name, color in zip(ax_list, names, colors):
        ax.plot(steps, cols[name], lw=1.2, marker="o", ms=3, color=color)
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    ax_list[-1].set_xlabel("step")


def _figure(plt, steps: list[float], cols: dict[str, list[float]], names: list[str], colors: list[str],
            title: str, path: Path) -> Path:
    """One PNG with a panel per column of ``names``."""
    fig, axes = plt.subplots(len(names), 1, figsize=(8, max(2.2 * len(names), 3.0)), sharex=True, squeeze=False)
    _panels(list(axes[:, 0]), steps, cols, names, colors)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_log(log: Path, out: Path) -> list[Path]:
    """Draw the figures; returns the files written. Needs matplotlib. Only
    columns with values get a panel; every row is drawn as a point too, so
    a short log shows what it has."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = read_log(log)
    if not cols.get("step"):
        raise ValueError(f"{log}: no rows to plot")
    steps = cols["step"]
    losses = [name for name in ("loss", *LOSS_NAMES, *SAYURI_LOSS_NAMES) if drawable(cols.get(name))]
    if not losses:
        raise ValueError(f"{log}: no loss values in its {len(steps)} row(s)")
    out.mkdir(parents=True, exist_ok=True)
    written = [_figure(plt, steps, cols, losses, ["tab:blue"] * len(losses), f"losses: {log}",
                       out / "losses.png")]
    speed = [name for name in ("lr", "samples_per_s") if drawable(cols.get(name))]
    if speed:
        labels = {"lr": "learning rate", "samples_per_s": "samples/s"}
        renamed = {labels[name]: cols[name] for name in speed}
        written.append(_figure(plt, steps, renamed, [labels[n] for n in speed],
                               ["tab:orange", "tab:green"][:len(speed)], f"learning rate and speed: {log}",
                               out / "lr.png"))
    return written


@answered("plot")
def main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(prog="sayuri-async plot",
                                description="Draw loss and learning-rate curves from a training log.")
    p.add_argument("log", help="train_log.csv, or the run folder holding it")
    p.add_argument("--out", help="folder for the PNG files (default: beside the log)")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    log = Path(args.log)
    if log.is_dir():
        log = log / "train_log.csv"
    if not log.is_file():
        print(f"sayuri-async plot: {log}: no such log", file=sys.stderr)
        return 2
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, never a window
    except ImportError:
        print("sayuri-async plot: matplotlib is not installed; install the optional extra with "
              "`pip install 'sayuri-async[plot]'` (or `pip install matplotlib`)", file=sys.stderr)
        return NO_MATPLOTLIB
    out = output_folder(args.out, "--out") if args.out else log.parent
    try:
        written = plot_log(log, out)
    except (ValueError, UnicodeDecodeError, csv.Error) as e:  # not a training log
        print(f"sayuri-async plot: {log}: not a training log ({' '.join(str(e).split())})", file=sys.stderr)
        return 2
    for path in written:
        print(path)
    note = few_rows_note(log, len(read_log(log).get("step", [])))
    if note:
        print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
