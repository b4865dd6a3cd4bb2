"""Atomic file writes: write to a temporary name in the target's folder,
fsync, then rename, so a killed run never leaves a half-written file.

Vocabulary: ``atomic_path(path)`` is a context manager yielding the temporary
path to write; on success it is renamed to ``path`` (and the folder synced),
on error removed. Temporary names start with ``.`` and end with ``.tmp`` so
readers skip them and ``selfplay.writer.clean_stale_temp`` can find them.
Every writer of chunks, SGF, checkpoints, weights and loop state goes
through here.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = ".tmp") -> Iterator[Path]:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=suffix, dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(target.parent)


def _fsync_dir(folder: Path) -> None:
    """Make the rename itself durable (best effort: not every OS allows it)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    """UTF-8 text, written as is (no newline translation)."""
    write_bytes_atomic(path, text.encode("utf-8"))
