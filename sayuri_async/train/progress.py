"""What a training run tells its user: messages, warnings, the progress bar, log rows.

Vocabulary:
  say         rank 0's messages (default: stderr through rich; a caller such
              as the RL loop passes its own ``Reporter``).
  warning     any rank's (prefixed ``rank r:`` under DDP), yellow on stderr:
              bad chunks the readers met, unreadable checkpoints.
  progress    a rich progress bar on rank 0 when ``progress`` is on
              (``"auto"``: when stderr is a terminal); without it one line per
              logging interval.
  interval    ``[run] log_every`` steps: the mean of each loss over the
              interval (averaged over ranks), samples/s and the data wait.
  data wait   the fraction of wall time the loop spent blocked on the data
              loader: near 0 means the readers keep the device fed.
  log row     one row of ``train_log.csv`` (``checkpoint.CsvLog``) per
              interval: step, samples, lr, the losses, samples_per_s,
              data_wait, elapsed_s.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import torch
import torch.distributed as dist

from sayuri_async.train.checkpoint import CsvLog
from sayuri_async.train.distributed import DistInfo
from sayuri_async.train.errors import TrainError

Reporter = Callable[[str], None]
Bar = tuple[Any, Any]  # a rich Progress and its task


class RunMessages:
    """Messages, warnings, the bar and the log rows of one rank (see the vocabulary)."""

    def __init__(self, info: DistInfo, say: Reporter | None, progress: bool | None, setting: str) -> None:
        from rich.console import Console

        self.info = info
        self.console = Console(stderr=True)
        self._say = say or (lambda text: self.console.print(text, markup=False, highlight=False, soft_wrap=True))
        self.show_progress = progress if progress is not None else (
            setting == "on" or (setting == "auto" and self.console.is_terminal))

    def say(self, text: str) -> None:
        if self.info.rank == 0:
            self._say(text)

    def warn(self, text: str) -> None:
        prefix = f"rank {self.info.rank}: " if self.info.enabled else ""
        self.console.print(f"warning: {prefix}{text}", style="yellow", markup=False, highlight=False,
                           soft_wrap=True)

    def progress_bar(self, total_steps: int, step: int, lr: float) -> Bar | None:
        """A started bar on rank 0 when progress is on, else None."""
        if not self.show_progress or self.info.rank != 0:
            return None
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        # narrow enough for 80 columns; the losses come as whole lines above it (interval)
        bar = Progress(TextColumn("step {task.completed}/{task.total}"), BarColumn(bar_width=24),
                       TextColumn("{task.fields[speed]}"), TextColumn("lr {task.fields[lr]}"), TimeRemainingColumn(),
                       console=self.console)
        task = bar.add_task("train", total=total_steps, completed=step, speed="", lr=f"{lr:.3g}")
        bar.start()
        return bar, task

    def interval(self, means: torch.Tensor, loss_names: tuple[str, ...], step: int, samples: int, lr: float,
                 speed: float, wait: float, elapsed: float, bar: Bar | None, log: CsvLog | None
                 ) -> dict[str, float]:
        """Report one interval: ``means`` holds the total loss then
        ``loss_names``' parts (this rank's); returns the losses by name,
        averaged over ranks. TrainError when the loss is not finite."""
        if self.info.enabled:
            dist.all_reduce(means)
            means = means / self.info.world
        values = [float(v) for v in means.cpu()]
        if not math.isfinite(values[0]):
            raise TrainError(f"the loss became {values[0]} at step {step}; lower the learning rate "
                             "or check the data")
        losses = {"loss": values[0], **dict(zip(loss_names, values[1:]))}
        # speed: samples of the global batch; every rank consumes its share at the same pace
        row = {"step": step, "samples": samples, "lr": lr, **losses,
               "samples_per_s": speed, "data_wait": wait, "elapsed_s": elapsed}
        if log is not None:
            log.write(row)
        text = " ".join(f"{k} {v:.4g}" for k, v in losses.items())
        if bar is not None:
            bar[0].update(bar[1], speed=f"{speed:,.0f} samples/s", lr=f"{lr:.3g}")
        # whole, never cut to the bar's width (above the bar while it shows; a pipe gets the same lines)
        self.say(f"step {step} | {speed:,.0f} samples/s | data wait {wait:.0%} | {text} | lr {lr:.3g}")
        return losses
