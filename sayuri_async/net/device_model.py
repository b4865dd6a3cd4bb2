"""The device model: a backend that behaves like a GPU running a given net,
without a GPU, for studying scheduling.

Vocabulary
----------
table        a JSON file of measured forward times (``nets``: rows of
             ``net``, ``board``, ``mode``, ``batch``, ``ms``), as
             ``tools/bench_infer.py`` writes them and as the shipped
             ``device_tables/h200.json`` (an NVIDIA H200, torch 2.11, bf16;
             ``bf16graph`` rows are CUDA-graph replays) holds them.
             ``DeviceTable`` is one net's rows in one mode.
forward time ``t(B)``: the table's time for a batch padded to its bucket,
             as the CUDA backend pads (powers of two up to ``max_batch``,
             and ``max_batch``); between table rows it is interpolated
             linearly in B, past the last row extrapolated from the last two.
device clock one modeled device shared by every engine process of the
             machine that names it (``model`` or ``model:K``): a lock file
             in the temporary folder holds the time (CLOCK_MONOTONIC, the
             same in every process) at which the device becomes free. A
             batch takes the interval ``[max(now, free), + t(B))`` under the
             lock, so batches of several processes queue on the device as
             they do on one GPU and never overlap; the caller then sleeps
             until the interval ends (the sleep releases the GIL, as a CUDA
             synchronize does).
device time  the sum of the intervals: the device's own busy clock. Each
             answer carries its interval's length in ``NetOutput.device_s``,
             which the batcher counts as busy time instead of the worker
             thread's wall time (which also counts its waits for the GIL).
capture      as the CUDA backend captures a bucket's graph on its first
             use (three warm-up passes and the capture), the first batch of
             a bucket holds the device ``CAPTURE_PASSES`` forward times longer;
             ``measure_rates`` captures the buckets of its curve, as the CUDA
             backend's does, so only a bucket beyond it pays on first use.
             ``stalls`` lists the captures' seconds.
answers      as the random network (``RandomBackend``): near-uniform policy,
             neutral value.

A spec names the net and, optionally, the mode: ``20b256c`` (``bf16graph``)
or ``20b256c/bf16``.
"""
from __future__ import annotations

import json
import os
import re
import struct
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..encoders import DEFAULT_ENCODER
from .backends import Backend, NetOutput, RandomBackend, default_buckets, pad_to_bucket
from ..usererror import UserError

TABLES = Path(__file__).resolve().parent / "device_tables"
DEFAULT_TABLE = TABLES / "h200.json"
DEFAULT_MODE = "bf16graph"
CAPTURE_PASSES = 4  # a first use of a bucket: three warm-up passes and the capture (``backends._Graph``)


class DeviceModelError(ValueError, UserError):
    """A table that cannot be read, or a net or mode it does not have."""


@dataclass(frozen=True)
class DeviceTable:
    device: str  # the measured device's name, e.g. "NVIDIA H200"
    net: str  # e.g. "20b256c"
    mode: str  # e.g. "bf16graph"
    board: int  # the board size the times were measured on
    ms: dict[int, float]  # batch -> forward milliseconds

    def forward_s(self, batch: int) -> float:
        """Seconds to evaluate a batch of exactly ``batch`` (no padding)."""
        bs = sorted(self.ms)
        b = max(int(batch), 1)
        if len(bs) == 1:
            return self.ms[bs[0]] * max(b / bs[0], 1.0) / 1000.0
        if b <= bs[0]:
            return self.ms[bs[0]] / 1000.0
        lo, hi = bs[-2], bs[-1]
        for x, y in zip(bs, bs[1:]):
            if b <= y:
                lo, hi = x, y
                break
        ms = self.ms[lo] + (self.ms[hi] - self.ms[lo]) * (b - lo) / (hi - lo)
        return max(ms, 1e-3) / 1000.0

    def evals_s(self, batch: int) -> float:
        return batch / self.forward_s(batch)


def _parse_spec(spec: str) -> tuple[str, str]:
    net, _, mode = spec.strip().partition("/")
    return net.strip(), (mode.strip() or DEFAULT_MODE)


def load_table(spec: str, path: str | os.PathLike | None = None) -> DeviceTable:
    """The rows of ``spec`` (``NET`` or ``NET/MODE``) in the table at
    ``path`` (the shipped H200 table when None or empty)."""
    where = Path(path) if path else DEFAULT_TABLE
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
        rows = data["nets"]
        device = str(data.get("device", where.stem))
    except FileNotFoundError:
        raise DeviceModelError(f"device table {where}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as e:
        raise DeviceModelError(f"device table {where}: not a table of forward times ({type(e).__name__}: {e})") from None
    net, mode = _parse_spec(spec)
    ms: dict[int, float] = {}
    board = 0
    try:
        for r in rows:
            if r["net"] == net and r["mode"] == mode:
                ms[int(r["batch"])] = float(r["ms"])
                board = int(r.get("board", 0))
    except (KeyError, TypeError, ValueError) as e:
        raise DeviceModelError(f"device table {where}: bad row ({type(e).__name__}: {e})") from None
    if not ms or any(not (v > 0) for v in ms.values()):
        known = sorted({f"{r.get('net')}/{r.get('mode')}" for r in rows if isinstance(r, dict)})
        raise DeviceModelError(f"device table {where}: no rows for net {net!r} in mode {mode!r}; "
                               f"it has {', '.join(known)}")
    return DeviceTable(device=device, net=net, mode=mode, board=board, ms=ms)


def device_index(device: str) -> int | None:
    """``K`` of a device model name ``model`` / ``model:K``; None when the
    name is not a device model."""
    m = re.fullmatch(r"model(?::(\d+))?", device.strip())
    if m is None:
        return None
    return int(m.group(1) or 0)


class DeviceClock:
    """The shared busy clock of one modeled device (see the vocabulary)."""

    def __init__(self, name: str, lock_dir: str | None = None) -> None:
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "device"
        uid = os.getuid() if hasattr(os, "getuid") else 0
        self.path = Path(lock_dir or tempfile.gettempdir()) / f"sayuri-async-{uid}-{slug}.devclock"
        self._thread_lock = threading.Lock()
        self._free_local = 0.0
        try:
            import fcntl  # noqa: F401  (POSIX only)

            self._fd: int | None = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except (ImportError, OSError):
            self._fd = None  # no shared file: the device is shared within this process only

    def take(self, seconds: float) -> tuple[float, float]:
        """Book ``seconds`` of device time; ``(start, end)`` on the
        ``time.monotonic`` clock."""
        with self._thread_lock:
            if self._fd is None:
                start = max(time.monotonic(), self._free_local)
                self._free_local = start + seconds
                return start, self._free_local
            import fcntl

            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                raw = os.pread(self._fd, 8, 0)
                free = struct.unpack("<d", raw)[0] if len(raw) == 8 else 0.0
                start = max(time.monotonic(), free)
                end = start + seconds
                os.pwrite(self._fd, struct.pack("<d", end), 0)
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            return start, end

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class DeviceModelBackend(Backend):
    """Holds its modeled device for ``t(bucket(B))``, then answers as the
    random network. Not ``cheap``: it runs in the inference worker thread,
    as a real device does."""

    def __init__(self, spec: str, table: str | os.PathLike | None = None, device: str = "model",
                 encoder: str = DEFAULT_ENCODER, seed: int | None = None, max_batch: int = 256,
                 lock_dir: str | None = None) -> None:
        k = device_index(device)
        if k is None:
            raise DeviceModelError(f"device {device!r} is not a device model (model or model:K)")
        self.table = load_table(spec, table)
        self._answer = RandomBackend(encoder=encoder, seed=seed)
        self.encoder = self._answer.encoder
        self.planes = self._answer.planes
        self.max_batch = int(max_batch)
        self.buckets = default_buckets(self.max_batch)
        self.device = f"model:{k}"
        self.name = f"model {self.table.net} ({self.table.device}, {self.table.mode})"
        self.clock = DeviceClock(f"{self.table.device}-{k}", lock_dir)
        self.intervals: list[tuple[float, float]] | None = None  # set to a list to record them (tests)
        self.captured: set[int] = set()  # buckets whose modeled graph exists
        self.stalls: list[float] = []  # seconds each capture held the device

    def bucket(self, b: int) -> int:
        """The padded size of a batch of ``b``, as ``TorchBackend.bucket``."""
        return pad_to_bucket(self.buckets, b)

    def launch(self, batch: np.ndarray) -> Callable[[], NetOutput]:
        """Book the device for the padded batch now (behind whatever is
        booked, by any process); ``collect`` sleeps until it is done."""
        b, _ = self._check(batch)
        bucket = self.bucket(b)
        seconds = self.table.forward_s(bucket)
        if bucket not in self.captured:
            self.captured.add(bucket)
            self.stalls.append(CAPTURE_PASSES * seconds)
            self.clock.take(CAPTURE_PASSES * seconds)
        start, end = self.clock.take(seconds)
        out = self._answer.run(batch)
        out.device_s = seconds
        if self.intervals is not None:
            self.intervals.append((start, end))

        def collect() -> NetOutput:
            left = end - time.monotonic()
            if left > 0:
                time.sleep(left)
            return out

        return collect

    def run(self, batch: np.ndarray) -> NetOutput:
        return self.launch(batch)()

    def measure_rates(self, n: int, batch_size: int) -> dict[int, float]:
        """The curve from the table: every bucket up to ``max_batch`` (and
        ``batch_size``'s bucket), whose graphs count as captured from here
        on (nothing to measure: the table's times are sustained ones)."""
        sizes = default_buckets(max(self.max_batch, self.bucket(batch_size)))
        self.captured.update(sizes)
        return {b: b / self.table.forward_s(b) for b in sizes}

    def close(self) -> None:
        self.clock.close()
