"""``sayuri-async plot``: PNG curves of the training log.

Vocabulary: the *log* is ``<run>/train_log.csv`` written by the trainer (one
row per logging interval, columns ``checkpoint.LOG_COLUMNS``). The command
writes ``losses.png`` (the total and each loss term against steps, one panel
each) and ``lr.png`` (learning rate and samples/s) next to the log, or into
``--out``. matplotlib is an optional extra (``pip install 'sayuri-async[plot]'``);
without it the command says so and exits with status 3.
"""
from __future__ import annotations

import csv
import math
import sys
from pathlib import Path

from sayuri_async.train.losses import LOSS_NAMES
from sayuri_async.usererror import ArgumentParser, answered, output_folder

NO_MATPLOTLIB = 3


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


def plot_log(log: Path, out: Path) -> list[Path]:
    """Draw the figures; returns the files written. Needs matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = read_log(log)
    if not cols.get("step"):
        raise ValueError(f"{log}: no rows to plot")
    steps = cols["step"]
    out.mkdir(parents=True, exist_ok=True)
    names = ["loss", *LOSS_NAMES]
    fig, axes = plt.subplots(len(names), 1, figsize=(8, 2.2 * len(names)), sharex=True)
    for ax, name in zip(axes, names):
        ax.plot(steps, cols.get(name, [math.nan] * len(steps)), lw=1.2)
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("step")
    fig.suptitle(f"losses: {log}")
    fig.tight_layout()
    written = [out / "losses.png"]
    fig.savefig(written[0], dpi=100)
    plt.close(fig)

    fig, (ax_lr, ax_speed) = plt.subplots(2, 1, figsize=(8, 5), sharex=True)
    ax_lr.plot(steps, cols.get("lr", []), lw=1.2, color="tab:orange")
    ax_lr.set_ylabel("learning rate")
    ax_lr.grid(alpha=0.3)
    ax_speed.plot(steps, cols.get("samples_per_s", []), lw=1.2, color="tab:green")
    ax_speed.set_ylabel("samples/s")
    ax_speed.set_xlabel("step")
    ax_speed.grid(alpha=0.3)
    fig.suptitle(f"learning rate and speed: {log}")
    fig.tight_layout()
    written.append(out / "lr.png")
    fig.savefig(written[1], dpi=100)
    plt.close(fig)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
