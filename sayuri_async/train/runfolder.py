"""The run folder (``[run] out``) at the start of a run.

Vocabulary:
  run folder   ``run.out``: ``checkpoints/``, ``weights/``, ``train_log.csv``
               (``checkpoint.py`` writes them).
  earlier run  what a run already left there (``checkpoint.earlier_run``). A
               fresh start (no resume) refuses such a folder with
               ``RunFolderInUse``, naming a few of its files and how to go on;
               ``resume = "auto"`` without a checkpoint starts afresh over it,
               saying so.
  stale        temporaries of killed writes (``checkpoint.clean_stale``):
               removed at the start, by rank 0, each one said.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from sayuri_async.train import checkpoint as ckpt
from sayuri_async.train.distributed import DistInfo, broadcast
from sayuri_async.train.errors import RunFolderInUse


def clean_stale(out: Path, info: DistInfo, say: Callable[[str], None]) -> None:
    """Rank 0 removes the stale temporaries of killed writes under ``out``."""
    if info.rank == 0:
        for stale in ckpt.clean_stale(out):
            say(f"removed {stale}, the temporary file of a killed write")


def check_fresh_folder(out: Path, name: str, auto: bool, info: DistInfo, say: Callable[[str], None]) -> None:
    """A fresh start must not write over an earlier run (see the vocabulary);
    rank 0 looks, every rank raises the same ``RunFolderInUse``."""
    error = None
    if info.rank == 0:
        earlier = ckpt.earlier_run(out, name)
        if earlier and auto:
            say(f"note: {out} holds no checkpoint to resume; starting afresh over "
                f"{len(earlier)} file(s) of an earlier start")
        elif earlier:
            shown = ", ".join(p.name for p in earlier[:3]) + (f" and {len(earlier) - 3} more"
                                                               if len(earlier) > 3 else "")
            how = ("continue it with --resume" if ckpt.latest_checkpoint(out) is not None
                   else "start over it with --auto-resume (it has no checkpoint)")
            error = f"{out} already holds a training run ({shown}); {how}, or give a new --out"
    error = broadcast(error, info)
    if error:
        raise RunFolderInUse(error)
