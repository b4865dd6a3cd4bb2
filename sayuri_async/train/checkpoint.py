"""Checkpoints (resumable training state) and weight exports (what the engine loads).

Vocabulary:
  checkpoint  ``<out>/checkpoints/ckpt-<step 9 digits>.pt``: a ``torch.save``
              dict with model, optimizer, schedule, averaged (EMA/SWA) weights,
              step, samples, RNG states and the data position of every reader.
              It is our own file, read back with ``weights_only=True`` (plain
              containers and tensors only, never arbitrary objects).
  atomic      written to a temporary name in the same folder, flushed and
              fsynced, then renamed over the final name (and the folder
              fsynced): a reader sees the old file or the whole new one, never
              half of one, even after a crash or power cut.
  export      ``<out>/weights/<name>-s<step 9 digits>.safetensors`` through
              ``sayuri_async.net.weights.save_weights`` (safetensors, no
              pickle) with metadata about the run; also copied atomically to
              ``<name>-latest.safetensors``.
  log         ``<out>/train_log.csv``: one row per logging interval (columns
              ``log_columns``: ``LOG_COLUMNS``, plus a Sayuri net's other
              losses); on resume, rows after the checkpoint's step are
              dropped so the file reads as one uninterrupted run. A row is
              appended whole or not at all (a full disk leaves the file as
              it was: ``fileio.append_whole``).
  unreadable  a checkpoint that fails to load (truncated, empty, not ours)
              is renamed ``ckpt-<step>.pt.unreadable`` (out of the rotation,
              kept to look at; ``ckpt-<step>-2.pt.unreadable`` and so on when
              that name is taken, so none replaces another) and the next
              older one is tried: ``newest_readable``.
  retention   ``save_checkpoint`` keeps the newest ``keep`` checkpoints and
              deletes older ones, but never the one the run resumed from
              (``spare``): while the run lasts it is the last known good
              state.
  earlier run  ``earlier_run(out)``: what a run already left in a folder
              (checkpoints, exports, a log with rows), so that a fresh start
              does not write over it.
  temporaries  ``clean_stale(out)`` removes the stale temporaries
              (``fileio.clean_stale_temps``) of killed writes in the run folder,
              ``checkpoints/`` and ``weights/``.
"""
from __future__ import annotations

import csv
import io
import os
import re
from pathlib import Path
from typing import Any, Callable

import torch

from sayuri_async.fileio import append_whole, clean_stale_temps, write_bytes_atomic
from sayuri_async.train.losses import SAYURI_LOSS_NAMES

CHECKPOINT_FORMAT = "sayuri-async-train-checkpoint"
CHECKPOINT_VERSION = 1
_CKPT = re.compile(r"^ckpt-(\d+)\.pt$")
UNREADABLE_SUFFIX = ".unreadable"


class CheckpointError(Exception):
    """A checkpoint that cannot be read; the message names the file."""


# one atomic writer for the whole project (temporary name, fsync, rename, folder fsync)
atomic_write_bytes = write_bytes_atomic


def checkpoint_dir(out: str | os.PathLike) -> Path:
    return Path(out) / "checkpoints"


def checkpoint_path(out: str | os.PathLike, step: int) -> Path:
    return checkpoint_dir(out) / f"ckpt-{step:09d}.pt"


def list_checkpoints(out: str | os.PathLike) -> list[tuple[int, Path]]:
    """``(step, path)`` of every checkpoint under ``out``, oldest first."""
    folder = checkpoint_dir(out)
    if not folder.is_dir():
        return []
    found = []
    for p in folder.iterdir():
        m = _CKPT.match(p.name)
        if m:
            found.append((int(m.group(1)), p))
    return sorted(found)


def save_checkpoint(out: str | os.PathLike, step: int, state: dict[str, Any], keep: int,
                    spare: Path | None = None) -> Path:
    """Write ``state`` as the checkpoint for ``step``; keep the newest
    ``keep`` and ``spare`` (the checkpoint the run resumed from: see
    "retention")."""
    state = {"format": CHECKPOINT_FORMAT, "version": CHECKPOINT_VERSION, **state}
    buf = io.BytesIO()
    torch.save(state, buf)
    path = checkpoint_path(out, step)
    atomic_write_bytes(path, buf.getvalue())
    for _, old in list_checkpoints(out)[:-keep]:
        if spare is None or old.name != Path(spare).name:
            old.unlink(missing_ok=True)
    return path


def load_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise CheckpointError(f"{path}: cannot read checkpoint ({type(e).__name__}: {e})") from None
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise CheckpointError(f"{path}: not a {CHECKPOINT_FORMAT} file")
    if state.get("version") != CHECKPOINT_VERSION:
        raise CheckpointError(f"{path}: checkpoint version {state.get('version')!r}, "
                              f"this program reads {CHECKPOINT_VERSION}")
    return state


def latest_checkpoint(out: str | os.PathLike) -> Path | None:
    found = list_checkpoints(out)
    return found[-1][1] if found else None


def newest_readable(out: str | os.PathLike, warn: Callable[[str], None]) -> tuple[Path, dict[str, Any]] | None:
    """``(path, state)`` of the newest checkpoint that loads, or None when
    none does. Each newer one that fails is renamed aside (see the
    vocabulary), with ``warn`` told which and why."""
    for _, path in reversed(list_checkpoints(out)):
        try:
            return path, load_checkpoint(path)
        except CheckpointError as e:
            aside = set_aside(path)
            warn(f"{e}; renamed it {aside.name} and took the next older checkpoint")
    return None


def set_aside(path: Path) -> Path:
    """Rename an unreadable checkpoint out of the rotation (see "unreadable")
    without replacing an earlier one set aside; returns its new path."""
    aside = path.with_name(path.name + UNREADABLE_SUFFIX)
    n = 1
    while aside.exists():
        n += 1
        aside = path.with_name(f"{path.stem}-{n}{path.suffix}{UNREADABLE_SUFFIX}")
    os.rename(path, aside)
    return aside


def earlier_run(out: str | os.PathLike, name: str) -> list[Path]:
    """The checkpoints, exports (``<name>-*.safetensors``) and non-empty log
    an earlier run left in ``out``."""
    found = [p for _, p in list_checkpoints(out)]
    weights = Path(out) / "weights"
    if weights.is_dir():
        found += sorted(weights.glob(f"{name}-*.safetensors"))
    log = Path(out) / "train_log.csv"
    if log.is_file():
        with open(log, newline="") as f:
            if sum(1 for _ in csv.reader(f)) > 1:
                found.append(log)
    return found


def clean_stale(out: str | os.PathLike) -> list[Path]:
    """Remove stale temporaries of killed writes in a run folder (see the vocabulary)."""
    return [p for d in (Path(out), checkpoint_dir(out), Path(out) / "weights") for p in clean_stale_temps(d)]


def export_path(out: str | os.PathLike, name: str, step: int) -> Path:
    return Path(out) / "weights" / f"{name}-s{step:09d}.safetensors"


def export_weights(out: str | os.PathLike, name: str, step: int, net: torch.nn.Module,
                   meta: dict[str, Any]) -> Path:
    """Save ``net`` (our ``Net``, or a ``SayuriNet`` in our import format with
    its norms folded) for the engine; returns the path."""
    from sayuri_async.net.weights import save_weights
    from sayuri_async.sayuri.model import SayuriNet
    from sayuri_async.sayuri.weights import save_imported

    path = export_path(out, name, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    save = save_imported if isinstance(net, SayuriNet) else save_weights
    save(path, net, {"step": step, "name": f"{name}-s{step}", **meta})
    atomic_write_bytes(path.with_name(f"{name}-latest.safetensors"), path.read_bytes())
    return path


LOG_COLUMNS = ("step", "samples", "lr", "loss", "policy", "opp_policy", "wdl", "score", "ownership",
               "samples_per_s", "data_wait", "elapsed_s")


def log_columns(sayuri: bool) -> tuple[str, ...]:
    """The log's columns: ``LOG_COLUMNS``, then a Sayuri net's other losses."""
    return LOG_COLUMNS + (SAYURI_LOSS_NAMES if sayuri else ())


class CsvLog:
    """Appends rows to ``<out>/train_log.csv`` (rank 0 only)."""

    def __init__(self, out: str | os.PathLike, resume_step: int | None,
                 columns: tuple[str, ...] = LOG_COLUMNS) -> None:
        self.columns = columns
        self.path = Path(out) / "train_log.csv"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        kept: list[dict[str, str]] = []
        if resume_step is not None and self.path.exists():
            with open(self.path, newline="") as f:
                kept = [r for r in csv.DictReader(f) if _int(r.get("step")) <= resume_step]
        buf = io.StringIO()
        writer = csv.DictWriter(buf, columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(kept)
        atomic_write_bytes(self.path, buf.getvalue().encode())

    def write(self, row: dict[str, float | int]) -> None:
        """Append one row, whole or not at all (``fileio.append_whole``)."""
        buf = io.StringIO()
        csv.DictWriter(buf, self.columns, extrasaction="ignore").writerow(
            {k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in row.items()})
        append_whole(self.path, buf.getvalue().encode())


def _int(text: str | None) -> int:
    try:
        return int(text or "")
    except ValueError:
        return 1 << 62
