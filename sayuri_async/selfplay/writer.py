"""Training-data chunks and SGF files from finished games.

Vocabulary
----------
ChunkWriter  collects GameRecords per board size and writes a chunk (the
             ``.npz`` schema of ``docs/data-format.md``) every ``chunk_games``
             games and on ``close()``; every file goes through a temporary
             name (``fileio.atomic_path``) and never replaces an existing
             file: a name already taken moves on to the next serial.
chunk name   ``chunk-<generation>-<tag>-<serial>.npz``: the generation of the
             network that played (six digits; the RL loop's counter, 0
             outside it), then ``tag`` to tell processes and runs apart (the
             runner makes it ``<run stamp>-p<i>``, see ``fileio.run_stamp``),
             then a serial from 1. SGF files are
             ``game-<generation>-<tag>-<game serial>.sgf``.
read_chunk   loads and checks a chunk: any missing key, wrong dtype or shape
             raises ChunkError naming the file and the problem. The optional
             ``ownership_mask`` (``OPTIONAL_KEYS``) of older chunks that lack
             it reads as all true.
"""
from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import numpy as np

from ..fileio import NameTaken, atomic_path, clean_stale_temps
from ..go import board as B
from ..go.sgf import SgfInfo, save_sgf_file
from ..sayuri.targets import term_averages
from .game import GameRecord

FORMAT = "sayuri-async-chunk"
VERSION = 1


class ChunkError(ValueError):
    """A chunk file that cannot be used; the message names the file."""


def records_to_arrays(records: list[GameRecord], planes: int) -> dict[str, np.ndarray]:
    """The per-position arrays of a chunk from finished games of one size."""
    n = records[0].size
    a_count = n * n + 1
    rows = sum(len(r) for r in records)
    packed = (n * n + 7) // 8
    out = {
        "planes": np.zeros((rows, planes, packed), dtype=np.uint8),
        "policy": np.zeros((rows, a_count), dtype=np.float16),
        "next_action": np.full(rows, -1, dtype=np.int16),
        "action": np.zeros(rows, dtype=np.int16),
        "wdl": np.zeros((rows, 3), dtype=np.float32),
        "score": np.zeros(rows, dtype=np.float32),
        "ownership": np.zeros((rows, n * n), dtype=np.int8),
        "to_move": np.zeros(rows, dtype=np.int8),
        "komi": np.zeros(rows, dtype=np.float32),
        "full_search": np.zeros(rows, dtype=bool),
        "after_resign": np.zeros(rows, dtype=bool),
        "game": np.zeros(rows, dtype=np.int32),
        "root_value": np.zeros(rows, dtype=np.float32),
        "q_avg": np.zeros((rows, 4), dtype=np.float32),  # root Q, then Sayuri's term averages of it
        "ownership_mask": np.zeros(rows, dtype=bool),
    }
    i = 0
    for gi, r in enumerate(records):
        m = len(r)
        if m == 0:
            continue
        sl = slice(i, i + m)
        out["planes"][sl] = np.stack(r.planes)
        out["policy"][sl] = np.stack(r.policy).astype(np.float16)
        acts = np.asarray(r.action, dtype=np.int16)
        out["action"][sl] = acts
        out["next_action"][i : i + m - 1] = acts[1:]
        tm = np.asarray(r.to_move, dtype=np.int8)
        out["to_move"][sl] = tm
        sign = np.where(tm == B.BLACK, 1.0, -1.0).astype(np.float32)  # black's view -> side to move
        s = sign * np.float32(r.score)
        out["score"][sl] = s
        out["wdl"][sl, 0] = s > 0
        out["wdl"][sl, 1] = s == 0
        out["wdl"][sl, 2] = s < 0
        own = np.rint(r.ownership).astype(np.int8)
        out["ownership"][sl] = own[None, :] * sign[:, None].astype(np.int8)
        out["komi"][sl] = r.komi
        out["full_search"][sl] = r.full_search
        out["after_resign"][sl] = r.after_resign
        out["game"][sl] = gi
        out["root_value"][sl] = r.root_value
        q = 2.0 * np.asarray(r.root_value, dtype=np.float64) - 1.0
        out["q_avg"][sl, 0] = q
        out["q_avg"][sl, 1:] = term_averages(q, tm, n)
        out["ownership_mask"][sl] = r.ownership_known
        i += m
    return out


def write_chunk(path: str | os.PathLike, records: list[GameRecord], encoder: str, planes: int, generator: str,
                replace: bool = True) -> int:
    """Write one chunk atomically; returns the number of positions. With
    ``replace=False`` an existing ``path`` raises ``fileio.NameTaken``."""
    arrays = records_to_arrays(records, planes)
    meta = {
        "format": FORMAT,
        "version": VERSION,
        "encoder": encoder,
        "planes": planes,
        "board_size": records[0].size,
        "games": len(records),
        "generator": generator,
    }
    with atomic_path(path, replace=replace) as tmp:
        with open(tmp, "wb") as f:
            np.savez_compressed(f, meta=np.array(json.dumps(meta)), **arrays)
    return int(arrays["action"].shape[0])


_DTYPES = {
    "planes": np.uint8, "policy": np.float16, "next_action": np.int16, "action": np.int16,
    "wdl": np.float32, "score": np.float32, "ownership": np.int8, "to_move": np.int8,
    "komi": np.float32, "full_search": np.bool_, "after_resign": np.bool_, "game": np.int32,
    "root_value": np.float32,
}
OPTIONAL_KEYS = {"ownership_mask": np.bool_}  # absent in older chunks: all true


def read_chunk(path: str | os.PathLike) -> tuple[dict, dict[str, np.ndarray]]:
    """``(meta, arrays)`` of a chunk, checked against the documented schema."""
    p = Path(path)
    try:
        with np.load(p, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise ChunkError(f"{p}: not a readable chunk ({e})") from None
    if "meta" not in data:
        raise ChunkError(f"{p}: no 'meta' entry")
    try:
        meta = json.loads(str(data.pop("meta")))
    except json.JSONDecodeError as e:
        raise ChunkError(f"{p}: meta is not JSON ({e})") from None
    if meta.get("format") != FORMAT or meta.get("version") != VERSION:
        raise ChunkError(f"{p}: format {meta.get('format')!r} version {meta.get('version')!r} is not {FORMAT} {VERSION}")
    n = int(meta["board_size"])
    c = int(meta["planes"])
    missing = set(_DTYPES) - set(data)
    if missing:
        raise ChunkError(f"{p}: missing arrays {sorted(missing)}")
    m = data["action"].shape[0]
    for k in OPTIONAL_KEYS:
        data.setdefault(k, np.ones(m, dtype=bool))
    shapes = {
        "planes": (m, c, (n * n + 7) // 8), "policy": (m, n * n + 1), "wdl": (m, 3), "ownership": (m, n * n),
    }
    for k, dt in {**_DTYPES, **OPTIONAL_KEYS}.items():
        arr = data[k]
        if arr.dtype != dt:
            raise ChunkError(f"{p}: array {k!r} has dtype {arr.dtype}, expected {np.dtype(dt)}")
        want = shapes.get(k, (m,))
        if arr.shape != want:
            raise ChunkError(f"{p}: array {k!r} has shape {arr.shape}, expected {want}")
    return meta, data


def clean_stale_temp(out_dir: str | os.PathLike) -> int:
    """Remove the stale temporaries (``fileio.is_stale_temp``: their writer is
    gone) a killed run left in ``data/`` and ``sgf/``; those of a writer
    still at work stay. Returns how many."""
    return sum(len(clean_stale_temps(Path(out_dir) / sub)) for sub in ("data", "sgf"))


NAME_TRIES = 10_000  # serials tried past taken names before giving up


class ChunkWriter:
    def __init__(self, out_dir: str | os.PathLike, encoder: str, planes: int, chunk_games: int,
                 tag: str, generator: str, write_sgf: bool = True, generation: int = 0) -> None:
        self.data_dir = Path(out_dir) / "data"
        self.sgf_dir = Path(out_dir) / "sgf"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if write_sgf:
            self.sgf_dir.mkdir(parents=True, exist_ok=True)
        self.encoder, self.planes = encoder, planes
        self.chunk_games = chunk_games
        self.tag, self.generator = tag, generator
        self.generation = generation
        self.write_sgf = write_sgf
        self._pending: dict[int, list[GameRecord]] = {}
        self._serial = 0
        self._games = 0
        self.chunks_written = 0
        self.positions_written = 0

    def add(self, rec: GameRecord) -> None:
        self._games += 1
        if self.write_sgf and rec.game is not None:
            info = SgfInfo(black=self.generator, white=self.generator, result=rec.result)
            for _ in range(NAME_TRIES):
                path = self.sgf_dir / f"game-{self.generation:06d}-{self.tag}-{self._games:06d}.sgf"
                try:
                    save_sgf_file(path, rec.game, info, result=rec.result, replace=False)
                    break
                except NameTaken:
                    self._games += 1
            else:
                raise NameTaken(f"{self.sgf_dir}: {NAME_TRIES} SGF names of tag {self.tag} are taken")
        if len(rec) == 0:
            return
        bucket = self._pending.setdefault(rec.size, [])
        bucket.append(rec)
        if len(bucket) >= self.chunk_games:
            self._write(rec.size)

    def _write(self, size: int) -> None:
        recs = self._pending.pop(size, [])
        if not recs:
            return
        for _ in range(NAME_TRIES):
            self._serial += 1
            path = self.data_dir / f"chunk-{self.generation:06d}-{self.tag}-{self._serial:06d}.npz"
            try:
                self.positions_written += write_chunk(path, recs, self.encoder, self.planes, self.generator,
                                                      replace=False)
                break
            except NameTaken:
                continue
        else:
            raise NameTaken(f"{self.data_dir}: {NAME_TRIES} chunk names of tag {self.tag} are taken")
        self.chunks_written += 1

    def close(self) -> None:
        """Write what is pending (whole games only)."""
        for size in list(self._pending):
            self._write(size)
