"""Reading self-play chunks and streaming shuffled, augmented training batches.

Vocabulary (the chunk format itself is ``docs/data-format.md`` and ``chunkfile.py``):
  chunk     one ``.npz`` file of positions of one board size.
  window    the newest chunks holding about ``window_size(total)`` positions,
            the rest of the data set being too old to train on; chosen once when
            a run starts (rank 0 scans, every rank uses its list).
  shard     one reader: shard ``rank * W + w`` for data-loader worker ``w`` of
            ``W`` on rank ``rank``; ``S = world * W`` shards read disjoint data.
  pass      one sweep over the window. Pass ``p`` orders the window's files by a
            permutation drawn from ``(seed, p)``; shard ``s`` takes files
            ``s, s+S, ...`` (or, with fewer files than shards, every file's rows
            ``s, s+S, ...``). These (file, row offset, row stride) are *pieces*.
  block     ``k`` consecutive pieces whose positions fill about
            ``shuffle_buffer`` rows: loaded together, permuted, cut into batches
            (the last batch topped up from the block's start). This is the
            shuffle buffer; because a block depends only on ``(seed, pass,
            shard, block)``, a reader can restart at any block exactly.
  rehearsal chunks of an older data set (``[data] rehearsal_dir``, the
            start network's own training data) added to the window so that
            they are ``rehearsal_fraction`` of its positions
            (``rehearsal_positions``); which ones is drawn from the run's
            data seed (``pick_rehearsal``), so a refreshed window (the RL
            loop's next generation) rehearses other positions.
  position  ``(pass, block, batch)``: where a shard is; the trainer stores the
            position of the last batch it consumed from each shard, so
            ``--resume`` replays nothing and skips nothing.

Chunks are read and checked by ``sayuri_async/chunkfile.py`` (the format's
one home). Bad chunks (truncated, wrong shapes, wrong format or size, or
values that break the format's contract: ``chunkfile.check_values``) are
skipped with a warning naming the file (and the field); the warning travels
with the next batch so the training process prints it. No value of a
skipped chunk reaches a batch.

Workers: ``make_loader`` runs the stream in ``[data] workers`` processes.
A worker ends quietly (status 0) on SIGTERM, whoever sends it: a SIGTERM to
the whole process group stops training through the main process's own
handler (one line, exit status 143), not through torch's "DataLoader worker
... is killed by signal: Terminated" error. A worker that dies otherwise
(the out-of-memory killer's SIGKILL) surfaces as torch's RuntimeError;
``worker_failure`` reads it, and the trainer stops with one line.

Optional targets (``chunkfile.OPTIONAL``: ``opp_policy``, ``q_avg``,
``score_avg``, ``stddev``, ``policy_kld``) are checked when a chunk has them.
A chunk without ``opp_policy`` gets the one-hot of its
``next_action``; missing Q and score averages (absent, or NaN in a row) come
to the losses as zero with a zero mask, never as invented values.
"""
from __future__ import annotations

import math
import os
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np
import torch

from sayuri_async.chunkfile import ChunkError, generation_of, peek_chunk, read_chunk
from sayuri_async.usererror import ending_quietly


@dataclass(frozen=True)
class ChunkInfo:
    path: str
    positions: int
    generation: int
    mtime: float


def list_chunks(data_dir: str | os.PathLike, board_size: int | None = None
                ) -> tuple[list[ChunkInfo], list[str]]:
    """Chunks under ``data_dir`` (recursively), oldest first, and warnings.

    Order: generation parsed from ``chunk-<generation>-...``, then modification
    time, then name. Hidden files and unreadable headers are left out (the
    latter with a warning), and so are chunks of another board size when
    ``board_size`` is given (a mixed-size data set; one note counts them).
    """
    found: list[ChunkInfo] = []
    warnings: list[str] = []
    other_sizes: dict[object, int] = {}
    for path in sorted(Path(data_dir).rglob("*.npz")):
        if path.name.startswith("."):
            continue
        try:
            positions, meta = peek_chunk(path)
            mtime = path.stat().st_mtime
        except (ChunkError, OSError) as e:
            warnings.append(f"skipping chunk: {e}")
            continue
        if board_size is not None and meta.get("board_size") != board_size:
            other_sizes[meta.get("board_size")] = other_sizes.get(meta.get("board_size"), 0) + 1
            continue
        found.append(ChunkInfo(str(path), positions, generation_of(path.name), mtime))
    found.sort(key=lambda c: (c.generation, c.mtime, c.path))
    if other_sizes:
        found_sizes = ", ".join(f"{k} of {n}x{n}" for n, k in sorted(other_sizes.items(), key=lambda kv: str(kv[0])))
        warnings.append(f"left out chunks of other board sizes than {board_size}: {found_sizes}")
    return found, warnings


def window_size(total: int, min_positions: int, max_positions: int,
                expand_per_position: float, taper_exponent: float) -> int:
    """Positions to train on when ``total`` have been generated (KataGo's power law).

    Up to ``min_positions`` everything is used. Beyond it the window grows like
    ``min + expand * ((total - min + min)^a - min^a) / (a * min^(a-1))``: its
    slope is ``expand`` at ``total = min`` and falls off as ``total^(a-1)``; it
    is capped at ``max_positions``.
    """
    if total <= min_positions:
        return total
    a, m = taper_exponent, float(min_positions)
    grown = ((total - min_positions + m) ** a - m ** a) / (a * m ** (a - 1))
    return int(min(max_positions, min_positions + expand_per_position * grown))


def select_window(chunks: list[ChunkInfo], want: int) -> list[ChunkInfo]:
    """The newest chunks holding at least ``want`` positions (or all), oldest first."""
    picked: list[ChunkInfo] = []
    have = 0
    for info in reversed(chunks):
        if have >= want:
            break
        picked.append(info)
        have += info.positions
    picked.reverse()
    return picked


def rehearsal_positions(window_positions: int, fraction: float) -> int:
    """Rehearsal positions that make ``fraction`` of a window that holds
    ``window_positions`` newer ones."""
    if fraction <= 0.0:
        return 0
    return math.ceil(window_positions * fraction / (1.0 - fraction) - 1e-9)  # 1 x 0.9/0.1 is 9, not 10


def pick_rehearsal(chunks: list[ChunkInfo], want: int, seed: int) -> list[ChunkInfo]:
    """Chunks in an order drawn from ``seed`` until they hold at least
    ``want`` positions (or all of them): ``select_window`` over a shuffle."""
    order = np.random.default_rng([seed, 0x5EE]).permutation(len(chunks))
    return select_window([chunks[int(i)] for i in order], want)


# ----------------------------------------------------------------- symmetries

def _sym_planes(x: np.ndarray, k: int) -> np.ndarray:
    from sayuri_async.symmetry import apply_planes

    return np.ascontiguousarray(apply_planes(x, k))


def _sym_policy(p: np.ndarray, k: int, n: int) -> np.ndarray:
    from sayuri_async.symmetry import apply_policy

    return np.ascontiguousarray(apply_policy(p, k, n))


# -------------------------------------------------------------------- stream

@dataclass(frozen=True)
class Piece:
    path: str
    offset: int
    stride: int
    positions: int


@dataclass(frozen=True)
class StreamSpec:
    """Everything a shard needs; identical on every rank (pickled to workers)."""
    files: tuple[tuple[str, int], ...]  # (path, positions) of the window
    board_size: int
    encoder: str | None
    planes: int
    batch_size: int  # per rank
    shuffle_buffer: int
    seed: int
    world: int
    workers: int  # loader workers per rank; shards = world * max(workers, 1)
    symmetries: bool


Position = tuple[int, int, int]  # (pass, block, next batch in block)


def pass_pieces(spec: StreamSpec, shard: int, pass_index: int) -> list[Piece]:
    """The pieces shard ``shard`` reads in pass ``pass_index``: disjoint across shards."""
    shards = spec.world * max(spec.workers, 1)
    order = np.random.default_rng([spec.seed, pass_index, 0x5eed]).permutation(len(spec.files))
    files = [spec.files[i] for i in order]
    if len(files) >= shards:
        return [Piece(p, 0, 1, n) for p, n in files[shard::shards]]
    return [Piece(p, shard, shards, len(range(shard, n, shards))) for p, n in files]


def block_size(spec: StreamSpec, pieces: list[Piece]) -> int:
    """Pieces per block: enough to fill the shuffle buffer on average."""
    if not pieces:
        return 1
    mean = sum(p.positions for p in pieces) / len(pieces)
    return max(1, math.ceil(spec.shuffle_buffer / max(mean, 1.0)))


class ChunkStream(torch.utils.data.IterableDataset):
    """Endless stream of ready batches (dicts of arrays) for one rank.

    Each item also carries ``shard`` (which reader made it), ``position`` (where
    that reader will continue) and ``warnings`` (bad chunks met since the last
    item). ``start`` maps a shard to the position it resumes from;
    ``rotation`` lets worker ``w`` play shard ``(w + rotation) % W`` so that the
    data loader's round-robin order continues where the previous run stopped.
    """

    def __init__(self, spec: StreamSpec, rank: int = 0, start: dict[int, Position] | None = None,
                 rotation: int = 0) -> None:
        super().__init__()
        self.spec = spec
        self.rank = rank
        self.start = dict(start or {})
        self.rotation = rotation

    def shard_for_worker(self, worker: int) -> int:
        w = max(self.spec.workers, 1)
        return self.rank * w + (worker + self.rotation) % w

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Items for the data loader: ``planes`` plus all targets packed into ``targets``."""
        info = torch.utils.data.get_worker_info()
        worker = info.id if info is not None else 0
        shard = self.shard_for_worker(worker)
        n = self.spec.board_size
        for item in self.iterate(shard, self.start.get(shard, (0, 0, 0))):
            yield {"planes": item["planes"], "targets": pack_targets(item, n), "shard": item["shard"],
                   "position": item["position"], "warnings": item["warnings"]}

    def iterate(self, shard: int, start: Position) -> Iterator[dict[str, Any]]:
        spec = self.spec
        bad: set[str] = set()
        pending: list[str] = []
        pass_index, first_block, first_batch = start
        while True:
            pieces = pass_pieces(spec, shard, pass_index)
            if sum(p.positions for p in pieces) == 0:
                total = sum(n for _, n in spec.files)
                raise ChunkError(f"data shard {shard} gets no positions: the window holds {total}, too few "
                                 f"for {spec.world * max(spec.workers, 1)} readers; use fewer workers")
            k = block_size(spec, pieces)
            blocks = [pieces[i:i + k] for i in range(0, len(pieces), k)]
            rows_in_pass = 0
            for b in range(first_block, len(blocks)):
                block = self._load_block(blocks[b], bad, pending)
                n = len(block["wdl"]) if block else 0
                rows_in_pass += n
                if n == 0:
                    continue
                rng = np.random.default_rng([spec.seed, pass_index, shard, b])
                n_batches = -(-n // spec.batch_size)
                order = rng.permutation(n)
                order = np.resize(order, n_batches * spec.batch_size)  # top up cyclically from the start
                syms = rng.integers(0, 8, size=n_batches * spec.batch_size) if spec.symmetries else None
                for j in range(first_batch if b == first_block else 0, n_batches):
                    sel = slice(j * spec.batch_size, (j + 1) * spec.batch_size)
                    item = make_batch(block, order[sel], None if syms is None else syms[sel], spec)
                    nxt = (pass_index, b, j + 1) if j + 1 < n_batches else (pass_index, b + 1, 0)
                    item["shard"] = shard
                    item["position"] = nxt
                    item["warnings"] = pending[:]
                    pending.clear()
                    yield item
            if rows_in_pass == 0 and first_block == 0 and first_batch == 0:
                raise ChunkError(
                    f"data shard {shard}: none of its {len(pieces)} chunk(s) in pass {pass_index} "
                    f"could be read; {'; '.join(pending) or 'no data'}")
            pass_index, first_block, first_batch = pass_index + 1, 0, 0

    def _load_block(self, pieces: list[Piece], bad: set[str], pending: list[str]) -> dict[str, np.ndarray] | None:
        parts = []
        for piece in pieces:
            if piece.path in bad:
                continue
            try:
                arrays = read_chunk(piece.path, self.spec.board_size, self.spec.encoder, self.spec.planes)
            except ChunkError as e:
                bad.add(piece.path)
                pending.append(f"skipping chunk: {e}")
                continue
            keep = slice(piece.offset, None, piece.stride)
            parts.append(training_arrays(arrays, keep))
        if not parts:
            return None
        return {k: np.concatenate([p[k] for p in parts]) for k in _TRAIN_KEYS}


_TRAIN_KEYS = ("planes", "policy", "opp_policy", "wdl", "score", "ownership", "full_search", "q_avg",
               "score_avg", "ownership_mask")


def training_arrays(arrays: dict[str, Any], keep: slice) -> dict[str, np.ndarray]:
    """The rows ``keep`` of a chunk's arrays that training reads, the optional
    ones filled in (see the module doc): ``opp_policy`` from ``next_action``
    when absent, Q and score averages NaN (unknown) when absent."""
    out = {k: arrays[k][keep] for k in _TRAIN_KEYS if k in arrays}
    m = len(out["wdl"])
    if "opp_policy" not in out:
        nxt = arrays["next_action"][keep].astype(np.int64)
        opp = np.zeros((m, out["policy"].shape[1]), np.float16)
        rows = np.nonzero(nxt >= 0)[0]
        opp[rows, nxt[rows]] = 1.0
        out["opp_policy"] = opp
    for key in ("q_avg", "score_avg"):
        if key not in out:
            out[key] = np.full((m, 4), np.nan, np.float32)
    return out


def make_batch(block: dict[str, np.ndarray], rows: np.ndarray, syms: np.ndarray | None,
               spec: StreamSpec) -> dict[str, Any]:
    """Unpack, augment and convert the rows ``rows`` of a loaded block.

    Output (numpy, turned into tensors by the data loader): ``planes`` uint8
    ``[B, C, N, N]``; ``policy`` and ``opp_policy`` float32 ``[B, A]``;
    ``policy_mask`` (full-search rows) and ``opp_mask`` (rows with an
    opponent's policy) bool ``[B]``; ``wdl`` float32 ``[B, 3]``; ``score``
    float32 ``[B]``; ``ownership`` float32 ``[B, N*N]``; ``ownership_mask`` bool ``[B]``
    (rows whose ownership target is known); ``q_avg`` and
    ``score_avg`` float32 ``[B, 4]`` (unknown values 0) with their masks
    ``q_avg_mask`` and ``score_avg_mask`` (1 known, 0 not).
    """
    n = spec.board_size
    area = n * n
    b = len(rows)
    planes = np.unpackbits(block["planes"][rows], axis=-1, count=area).reshape(b, -1, n, n)
    policy = block["policy"][rows].astype(np.float32)
    opp = block["opp_policy"][rows].astype(np.float32)
    opp_mask = opp.sum(axis=1) > 0
    own = block["ownership"][rows].astype(np.float32).reshape(b, n, n)
    if syms is not None:
        for k in range(1, 8):
            sel = np.nonzero(syms == k)[0]
            if len(sel) == 0:
                continue
            planes[sel] = _sym_planes(planes[sel], k)
            own[sel] = _sym_planes(own[sel], k)
            policy[sel] = _sym_policy(policy[sel], k, n)
            opp[sel] = _sym_policy(opp[sel], k, n)
    return {
        "planes": planes,
        "policy": policy,
        "policy_mask": block["full_search"][rows].astype(bool),
        "opp_policy": opp,
        "opp_mask": opp_mask,
        "wdl": block["wdl"][rows].astype(np.float32),
        "score": block["score"][rows].astype(np.float32),
        "ownership": own.reshape(b, area),
        **_known("q_avg", block["q_avg"][rows]),
        **_known("score_avg", block["score_avg"][rows]),
        "ownership_mask": block["ownership_mask"][rows].astype(bool),
    }


def _known(name: str, values: np.ndarray) -> dict[str, np.ndarray]:
    """``{name: values with NaN as 0, name_mask: 1 where known}``."""
    v = values.astype(np.float32)
    known = np.isfinite(v)
    return {name: np.where(known, v, 0.0).astype(np.float32), f"{name}_mask": known.astype(np.float32)}


def target_layout(n: int) -> list[tuple[str, int]]:
    """Columns of the packed ``targets`` array, in order: (name, width)."""
    a = n * n + 1
    return [("policy", a), ("opp_policy", a), ("wdl", 3), ("score", 1), ("ownership", n * n),
            ("policy_mask", 1), ("opp_mask", 1), ("q_avg", 4), ("q_avg_mask", 4), ("score_avg", 4),
            ("score_avg_mask", 4), ("ownership_mask", 1)]


def pack_targets(batch: dict[str, Any], n: int) -> np.ndarray:
    """All targets of a batch in one float32 ``[B, W]`` array (one copy to the device, not seven)."""
    cols = [np.asarray(batch[name], dtype=np.float32).reshape(len(batch["score"]), width)
            for name, width in target_layout(n)]
    return np.concatenate(cols, axis=1)


def unpack_targets(targets: Any, n: int) -> dict[str, Any]:
    """Views of a packed ``targets`` array (numpy or torch) by name; masks come back as 0/1 floats."""
    out, col = {}, 0
    for name, width in target_layout(n):
        view = targets[:, col:col + width]
        out[name] = view[:, 0] if width == 1 else view
        col += width
    return out


def make_loader(stream: ChunkStream, pin_memory: bool, prefetch_batches: int = 4) -> torch.utils.data.DataLoader:
    """A data loader running the stream in ``spec.workers`` processes (0: in-process).

    Each worker keeps ``prefetch_batches`` finished batches queued, so the
    training loop only waits when the readers are slower than the model.
    """
    workers = stream.spec.workers
    kwargs: dict[str, Any] = {}
    if workers > 0:
        kwargs.update(num_workers=workers, prefetch_factor=prefetch_batches, worker_init_fn=_worker_init)
    return torch.utils.data.DataLoader(stream, batch_size=None, pin_memory=pin_memory, **kwargs)


def _worker_init(_: int) -> None:
    """One thread per worker; SIGTERM ends a worker quietly (see "workers"),
    and so does the trainer going away while the worker hands it a batch:
    the worker's multiprocessing threads (the resource sharer that passes
    the batch's tensors) print no traceback (``usererror.ending_quietly``;
    a worker's own failure reaches the trainer through the DataLoader)."""
    torch.set_num_threads(1)
    signal.signal(signal.SIGTERM, _end_quietly)
    ending_quietly()


def _end_quietly(_signum: int, _frame: object) -> None:
    os._exit(0)


_WORKER_FAILURE = re.compile(r"DataLoader worker \(pid(?:\(s\))? (?P<pids>[\d, ]+)\) "
                             r"(?:is killed by signal: (?P<signal>[^.]+)|exited unexpectedly"
                             r"(?: with exit code (?P<code>-?\d+))?)")


_SIGNAL_NAMES = {"Killed": "SIGKILL", "Terminated": "SIGTERM", "Segmentation fault": "SIGSEGV", "Bus error": "SIGBUS",
                 "Aborted": "SIGABRT", "Interrupt": "SIGINT"}


DEAD_WORKER_WAIT_S = 2.0


def dead_worker(wait_s: float = DEAD_WORKER_WAIT_S) -> str | None:
    """After a broken pipe or a cut message from the data loader: the worker
    that ended, as ``worker_failure`` says it, from torch's own look at the
    loader's workers (given ``wait_s`` to see the child's end); None when
    every worker lives."""
    from torch.utils.data._utils import signal_handling

    deadline = time.monotonic() + wait_s
    while True:
        try:
            signal_handling._error_if_any_worker_fails()
        except RuntimeError as e:
            return worker_failure(e)
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.05)


def worker_failure(e: BaseException, workers: Iterable = ()) -> str | None:
    """What torch's error ``e`` says of a data-loader worker that ended
    (killed by a signal, or gone), in a few words; None for another error.
    ``workers`` (the loader's processes) name the signal when torch's words
    do not (it reaped the worker before it looked)."""
    m = _WORKER_FAILURE.search(str(e))
    if m is None:
        return None
    who = f"a data-loader worker (pid {m['pids'].strip()})"
    pids = {int(p) for p in re.findall(r"\d+", m["pids"])}
    codes = [w.exitcode for w in workers if getattr(w, "pid", None) in pids and getattr(w, "exitcode", None)]
    if m["signal"]:
        name = _SIGNAL_NAMES.get(m["signal"].strip(), f"signal {m['signal'].strip()}")
    else:
        name = signal.Signals(-codes[0]).name if codes and -codes[0] in signal.valid_signals() else None
    if name:
        oom = " (the out-of-memory killer's signal: fewer [data] workers or a smaller shuffle_buffer need less " \
              "memory)" if name == "SIGKILL" else ""
        return f"{who} was killed by {name}{oom}"
    if m["code"]:
        return f"{who} exited with status {m['code']}"
    return f"{who} ended unexpectedly"
