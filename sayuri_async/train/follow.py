"""``train --follow``: train without end while self-play adds data, and publish each network.

Vocabulary
----------
round       one ``launch.train`` call: from the run folder's checkpoint (the
            first round: as ``--resume``/``--auto-resume``/``--init`` say),
            on a replay window chosen anew from the chunks now on disk
            (``--refresh-window``: the trainer's window rule, ``[data]
            window_*``), it trains ``export_every`` steps, then writes a
            checkpoint and an export. Model, optimizer, averages, schedule
            and the exact resume are the trainer's own.
budget      the steps the data allows: ``reuse`` samples for each position
            of the chunks of the board size under ``[data] dir``
            (``schedule.reuse_steps``: the RL loop's ``samples_per_position``
            rule), counting every position on disk, those there before the
            run included. A round starts only when the budget reaches its
            last step; until then the trainer waits, looking at the data
            every ``poll_s`` seconds (KataGo's training rows per new data
            row).
publish     each round's export is copied into the publish folder as
            ``<name>-s<step>.safetensors``: its sidecar (``<file>.sha256``,
            ``net/identity.py``) first, then the network, written to a
            temporary name and renamed, so a reader (``selfplay
            --follow-weights``) never sees part of a file, and a copy that
            is still on its way on a shared filesystem fails its sha256
            check instead of loading.
end         ``--steps`` reached, or Ctrl-C / SIGTERM (the last checkpoint
            stands, as in ``train``); a round interrupted in its middle is
            resumed by the next start (``--auto-resume``).
"""
from __future__ import annotations

import math
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from sayuri_async.fileio import atomic_path, write_bytes_atomic
from sayuri_async.net.identity import file_sha256, sidecar_path
from sayuri_async.train import checkpoint as ckpt
from sayuri_async.train.config import TrainConfig
from sayuri_async.train.dataset import list_chunks
from sayuri_async.train.schedule import reuse_steps

DEFAULT_REUSE = 4.0
DEFAULT_POLL_S = 10.0
PUBLISH_FOLDER = "published"

Say = Callable[[str], None]


@dataclass
class FollowSettings:
    reuse: float = DEFAULT_REUSE  # training samples per position on disk
    export_every: int = 1000  # steps per round
    poll_s: float = DEFAULT_POLL_S  # seconds between looks at the data while waiting
    publish: str = ""  # the folder selfplay --follow-weights reads ("": <run out>/published)
    steps: int | None = None  # stop at this step (None: never)


@dataclass
class FollowResult:
    steps: int
    rounds: int
    published: list[str]


def positions_on_disk(cfg: TrainConfig) -> int:
    """Positions in the readable chunks of the board size under ``[data] dir``."""
    chunks, _ = list_chunks(cfg.data.dir, cfg.data.board_size)
    return sum(c.positions for c in chunks)


def publish(export: str | Path, folder: str | Path) -> Path:
    """Copy an export into ``folder`` (see "publish"); returns its path there."""
    src = Path(export)
    dest = Path(folder) / src.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(sidecar_path(dest), f"{file_sha256(src)}  {dest.name}\n".encode())
    with atomic_path(dest) as tmp:
        shutil.copyfile(src, tmp)
    return dest


def current_step(out: str | Path) -> int:
    """The step of the run folder's newest checkpoint (0 without one)."""
    found = ckpt.list_checkpoints(out)
    return found[-1][0] if found else 0


def follow(cfg: TrainConfig, settings: FollowSettings, init: str | None = None, resume: bool | str = False,
           say: Say | None = None, progress: bool | None = None, sleep: Callable[[float], None] = time.sleep,
           train: Callable | None = None) -> FollowResult:
    """Rounds of training paced by the data (see the vocabulary) until
    ``settings.steps``; ``train`` stands in for ``launch.train``."""
    if train is None:
        from sayuri_async.train.launch import train
    tell = say or (lambda text: print(text, file=sys.stderr, flush=True))  # beside the trainer's own lines
    folder = Path(settings.publish or Path(cfg.run.out) / PUBLISH_FOLDER)
    batch = cfg.optim.batch_size
    step = current_step(cfg.run.out)
    first = True
    rounds, published = 0, []
    waiting_for = -1
    while settings.steps is None or step < settings.steps:
        target = step + settings.export_every
        if settings.steps is not None:
            target = min(target, settings.steps)
        positions = positions_on_disk(cfg)
        allowed = reuse_steps(positions, settings.reuse, batch)
        if allowed < target:
            if waiting_for != target:
                need = math.ceil((target - 1) * batch / settings.reuse) + 1 - positions
                tell(f"follow: waiting for data: {positions} positions allow step {allowed} at "
                     f"{settings.reuse:g} samples a position; step {target} needs about {max(need, 1)} more")
                waiting_for = target
            sleep(settings.poll_s)
            continue
        waiting_for = -1
        result = train(cfg, steps=target, init=init if first else None, resume=resume if first else True,
                       refresh_window=True, progress=progress)
        first = False
        rounds += 1
        step = result.steps
        if result.export is None:
            continue
        dest = publish(result.export, folder)
        published.append(str(dest))
        reuse = step * batch / positions if positions else 0.0
        tell(f"follow: step {step}, {positions} positions on disk ({reuse:.2f} samples a position); "
             f"published {dest}")
    return FollowResult(step, rounds, published)
