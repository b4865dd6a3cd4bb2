"""An engine's local folder of finished files, and the thread that uploads them.

Vocabulary
----------
spool root  ``--spool`` when given, else ``node_spool_root()``: the folder
            ``sayuri-async-spool`` in the temporary folder of the node where
            the engine runs (its ``RAY_TMPDIR``, else its ``TMPDIR``, else
            ``/tmp``: what ``cluster head`` or ``cluster join`` was started
            with), never a path of the driver's machine.
spool       ``<spool root>/<actor name>/``, on the node's own disk: the
            engine writes its chunks (``data/``) and game records (``sgf/``)
            there, as ``selfplay`` writes into ``--out``. A finished file is
            one whose name does not start with ``.`` (the writers' temporary
            names do, ``fileio``).
lock        ``.lock`` in the spool, held (``flock``) while its actor lives.
            The kernel lets go of it when the process dies, SIGKILL included.
leftovers   a spool whose lock nobody holds belongs to an actor that died:
            any live actor on the node adopts it, uploads its finished files
            and removes it once empty. A restarted actor takes its own
            spool back the same way.
Uploader    a thread that sends each finished file's bytes to ``put(kind,
            name, data)`` (Ingest, ``ingest.py``) and deletes the spool copy
            only once the put is acknowledged; a failed put is tried again
            on the next pass (at least once to Ingest, which writes each
            name once: exactly once on disk).
networks    ``<spool root>/networks/``: the node's copies of the networks the
            fleet published (``actor.py``), never adopted as a spool.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from ..fileio import clean_stale_temps
from ..selfplay.follow import one_line
from .ingest import KINDS

NETWORKS = "networks"
LOCK = ".lock"
SPOOL_FOLDER = "sayuri-async-spool"
Put = Callable[[str, str, bytes], str]


def node_spool_root() -> Path:
    """This node's default spool root (see the vocabulary); Ray's worker
    processes inherit the environment of the node's ``ray start``."""
    tmp = os.environ.get("RAY_TMPDIR") or tempfile.gettempdir()
    return Path(tmp) / SPOOL_FOLDER


def _take_lock(folder: Path) -> int | None:
    """The lock of ``folder`` held by this process (its fd), or None when another holds it."""
    fd = os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def finished_files(folder: Path) -> list[tuple[str, Path]]:
    """``(kind, path)`` of the finished files of a spool, oldest first."""
    out = []
    for kind in KINDS:
        try:
            entries = list(os.scandir(folder / kind))
        except OSError:
            continue
        for e in entries:
            if e.name.startswith("."):
                continue
            try:  # the uploader may remove a file between the listing and its stat
                if e.is_file():
                    out.append((e.stat().st_mtime_ns, kind, Path(e.path)))
            except FileNotFoundError:
                continue
    return [(kind, path) for _, kind, path in sorted(out)]


class Spool:
    """This actor's spool (see the vocabulary), locked while it lives."""

    def __init__(self, root: str | os.PathLike, name: str) -> None:
        self.root = Path(root)
        self.folder = self.root / name
        for kind in KINDS:
            (self.folder / kind).mkdir(parents=True, exist_ok=True)
            clean_stale_temps(self.folder / kind)
        fd = _take_lock(self.folder)
        if fd is None:
            raise RuntimeError(f"{self.folder}: another engine holds this spool")
        self._fd = fd

    def leftovers(self) -> list[tuple[Path, int]]:
        """Other spools of the node nobody holds, each with its lock now
        held by this process (``release`` them after use)."""
        out = []
        try:
            entries = list(os.scandir(self.root))
        except OSError:
            return out
        for e in entries:
            folder = Path(e.path)
            if not e.is_dir() or e.name == NETWORKS or folder == self.folder or not (folder / LOCK).exists():
                continue
            fd = _take_lock(folder)
            if fd is not None:
                out.append((folder, fd))
        return out

    @staticmethod
    def release(folder: Path, fd: int) -> None:
        """Let go of an adopted spool, removing it once it holds no finished file."""
        try:
            for kind in KINDS:
                clean_stale_temps(folder / kind)
            if not finished_files(folder):
                shutil.rmtree(folder, ignore_errors=True)
        finally:
            os.close(fd)

    def close(self) -> None:
        os.close(self._fd)


class Uploader:
    """Uploads the spool's finished files, and any leftovers (see the vocabulary)."""

    def __init__(self, spool: Spool, put: Put, interval_s: float = 1.0) -> None:
        self.spool = spool
        self.put = put
        self.interval_s = interval_s
        self.uploaded = 0  # files acknowledged and removed from the spool
        self.bytes_uploaded = 0
        self.failed_puts = 0
        self.error: str | None = None  # the last failed put, in one line; None once one succeeds
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def pending(self) -> int:
        return len(finished_files(self.spool.folder))

    def upload_pass(self) -> bool:
        """Upload every finished file once; True when none failed."""
        with self._lock:
            ok = self._upload_folder(self.spool.folder)
            for folder, fd in self.spool.leftovers():
                try:
                    ok = self._upload_folder(folder) and ok
                finally:
                    Spool.release(folder, fd)
            return ok

    def _upload_folder(self, folder: Path) -> bool:
        for kind, path in finished_files(folder):
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                continue
            try:
                self.put(kind, path.name, data)
            except Exception as e:  # Ingest restarting, the head unreachable: kept, tried again next pass
                self.failed_puts += 1
                self.error = one_line(e)
                return False
            self.error = None
            path.unlink(missing_ok=True)
            self.uploaded += 1
            self.bytes_uploaded += len(data)
        return True

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="spool-upload", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.upload_pass()

    def drain(self, timeout_s: float) -> bool:
        """Stop the thread and upload what is left, trying until ``timeout_s``;
        True when the spool is empty."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout_s)
        deadline = time.monotonic() + timeout_s
        while True:
            if self.upload_pass() and self.pending() == 0:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(self.interval_s, 1.0))
