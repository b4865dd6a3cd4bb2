"""``selfplay --follow-weights DIR``: play the newest network that appears in a folder.

Vocabulary
----------
newest      among the folder's ``*.safetensors`` files (not below it, hidden
            names left out): the latest modification time, and among equal
            times the greatest name. ``train --follow`` publishes its exports
            there under ``<name>-s<step>.safetensors`` (temporary name, then
            rename), so the newest is the latest step.
poll        every ``interval_s`` seconds a thread of its own (neither the
            event loop nor an engine waits for it) looks for the newest file.
            A file it has already looked at (same name, time and size, and
            the same time of its sidecar) is passed over; a new one is checked: its sha256 (against its
            sidecar, ``net/identity.py``, when it has one) and that it loads
            (on the CPU). A good file that is not the network playing now
            becomes a ``{"network": {"path", "name", "sha256"}}`` control for
            every engine (``engine.py``), which loads it and swaps it in
            between batches.
refused     a file that fails its check is reported in one line (``warn``)
            and the network playing keeps playing; it is looked at again
            only when it changes (a copy that was still in progress).
start       ``starting_network``: the newest good file when the run starts,
            so that the engines start on it (``--weights`` given as well is
            played until a newer file appears); with none, the random network
            plays until one appears.
"""
from __future__ import annotations

import os
import queue
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..net.identity import NetworkId, check_file, sidecar_path

DEFAULT_INTERVAL_S = 5.0
Warn = Callable[[str], None]


@dataclass(frozen=True)
class Candidate:
    path: Path
    mtime_ns: int
    size: int


def weights_newest_first(folder: str | os.PathLike) -> list[Candidate]:
    """The weights files of ``folder``, newest first (see the vocabulary);
    [] when the folder cannot be read."""
    out: list[Candidate] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return out
    for e in entries:
        if e.name.startswith(".") or not e.name.endswith(".safetensors"):
            continue
        try:
            st = e.stat()
        except OSError:  # removed while we looked
            continue
        out.append(Candidate(Path(e.path), st.st_mtime_ns, st.st_size))
    return sorted(out, key=lambda c: (c.mtime_ns, c.path.name), reverse=True)


def newest_weights(folder: str | os.PathLike) -> Candidate | None:
    """The newest weights file in ``folder`` (see the vocabulary), or None."""
    found = weights_newest_first(folder)
    return found[0] if found else None


def sidecar_time(path: Path) -> int | None:
    """The modification time of a weights file's sidecar (None: it has none)."""
    try:
        return sidecar_path(path).stat().st_mtime_ns
    except OSError:
        return None


def check_weights(path: str | os.PathLike) -> NetworkId:
    """The file's NetworkId once its sha256 and its loading passed (any
    exception otherwise: the caller reports it)."""
    from ..sayuri.weights import load_any_weights

    network = check_file(path)
    load_any_weights(path)
    return network


def one_line(e: BaseException) -> str:
    return " ".join(f"{type(e).__name__}: {e}".split())


class WeightsFollower:
    """Polls a folder (see the vocabulary); ``take()`` hands over the
    controls for the engines, ``stop()`` ends the thread."""

    def __init__(self, folder: str | os.PathLike, interval_s: float, warn: Warn,
                 current: NetworkId | None = None) -> None:
        self.folder = Path(folder)
        self.interval_s = float(interval_s)
        self.warn = warn
        self.current = current
        self.offered = 0  # networks handed to the engines
        self._looked: tuple[Candidate, int | None] | None = None
        self._controls: queue.SimpleQueue = queue.SimpleQueue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll(self) -> tuple[Path, NetworkId] | None:
        """One look (see "poll"): the new network to play, or None."""
        cand = newest_weights(self.folder)
        if cand is None:
            return None
        looked = (cand, sidecar_time(cand.path))
        if looked == self._looked:
            return None
        self._looked = looked
        try:
            network = check_weights(cand.path)
        except Exception as e:  # any failure to read or load: one line, the current network stays
            playing = self.current.label if self.current is not None else "the current network"
            self.warn(f"follow-weights: refused {cand.path} ({one_line(e)}); {playing} keeps playing")
            return None
        if network == self.current:
            return None
        self.current = network
        return cand.path, network

    def starting_network(self) -> tuple[Path, NetworkId] | None:
        """The newest good file now (see "start")."""
        return self.poll()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="follow-weights", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                found = self.poll()
            except Exception as e:  # the folder went away, a bug: say so, keep following
                self.warn(f"follow-weights: {self.folder}: {one_line(e)}")
                continue
            if found is not None:
                path, network = found
                self.offered += 1
                self._controls.put({"network": {"path": str(path), **network.as_dict()}})

    def take(self) -> list[dict]:
        out = []
        while True:
            try:
                out.append(self._controls.get_nowait())
            except queue.Empty:
                return out

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
