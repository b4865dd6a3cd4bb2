"""Sayuri's training data (gzip text, record version 2) -> our training samples.

Vocabulary
----------
record      53 text lines per position (Sayuri's ``src/neural/training_data.h``):
            version (2), mode, board size N, komi (black's, handicap
            penalty included), rule (0 area, 1 territory), wave, 37 binary
            planes, side to move (1 black, 0 white), policy target
            (``N*N+1`` numbers), the opponent's next policy (auxiliary
            target), ownership (one character per point: ``1`` side to
            move, ``3`` opponent, ``0`` neither), result (1 win, 0 draw,
            -1 loss, side to move), four average Q values, final score
            (side to move), four average score leads, Q and score stddev,
            policy KLD.
binary plane  one line: each hex digit holds 4 points, the first point in its
            lowest bit; with an odd ``N*N`` one last ``0``/``1`` for the last
            point. Planes are Sayuri's input planes 1-37 (our 0-36).
chunk file  many records one after another, gzip-compressed (``.gz``) or
            plain text; positions may be of several board sizes.
sample      one position in the form of our chunks (``docs/data-format.md``):
            the 43 ``sayuri-v3`` planes (the last six rebuilt from rule and
            komi as ``encoder.py`` writes them), policy, next_action,
            action, wdl, score, ownership, to_move, komi, full_search,
            after_resign, game, root_value.

What is derived rather than read: ``next_action`` is the most likely move of
the auxiliary policy (-1 when it is all zero); ``action`` is read off the
next record's last-move plane when that record continues the same game one
ply later, else -1; ``game`` counts runs of such consecutive records (Sayuri
leaves out positions it does not record, so one game can span several runs);
``root_value`` is ``(average Q + 1) / 2``.

Output: ``chunk-<generation>-<run stamp>-<serial>.npz`` (``fileio.run_stamp``),
written through ``fileio.atomic_path`` and never over an existing file.
"""
from __future__ import annotations

import gzip
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ..fileio import NameTaken, atomic_path, run_stamp
from .encoder import MISC_PLANES, NAME, P_KOMI, P_NEG_KOMI, P_ONES, P_RULE, PLANES, komi_count
from ..usererror import UserError

RECORD_LINES = 53
RECORD_VERSION = 2
BINARY_PLANES = PLANES - MISC_PLANES  # 37
_HEX = np.full(256, 255, np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _HEX[_c] = _i
for _i, _c in enumerate(b"ABCDEF"):
    _HEX[_c] = 10 + _i
_OWN = np.full(256, 127, np.int8)
_OWN[ord("0")], _OWN[ord("1")], _OWN[ord("2")], _OWN[ord("3")] = 0, 1, 0, -1


class SayuriDataError(ValueError, UserError):
    """A Sayuri data file that cannot be read; the message names the file and record."""


@dataclass
class Record:
    """One parsed position, still in Sayuri's terms."""
    board_size: int
    komi: float
    rule: float
    wave: float
    planes: np.ndarray  # uint8 [37, N*N]
    black_to_move: bool
    policy: np.ndarray  # float32 [N*N+1]
    aux_policy: np.ndarray  # float32 [N*N+1]
    ownership: np.ndarray  # int8 [N*N], side to move
    result: int
    q: np.ndarray  # float32 [4]: average, short, middle, long
    final_score: float
    score: np.ndarray  # float32 [4]


def _open(path: str) -> io.BufferedIOBase:
    with open(path, "rb") as f:
        magic = f.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


def _floats(line: bytes, count: int, what: str) -> np.ndarray:
    words = line.split()
    if len(words) != count:
        raise ValueError(f"{what}: {len(words)} numbers, expected {count}")
    return np.array([float(w) for w in words], dtype=np.float32)


def _planes(lines: list[bytes], n: int) -> np.ndarray:
    nn = n * n
    q = nn // 4
    extra = nn % 4
    out = np.empty((len(lines), nn), np.uint8)
    for i, line in enumerate(lines):
        line = line.strip()
        if len(line) != q + (1 if extra else 0):
            raise ValueError(f"plane {i}: {len(line)} characters, expected {q + (1 if extra else 0)}")
        codes = _HEX[np.frombuffer(line[:q], np.uint8)]
        if (codes == 255).any():
            raise ValueError(f"plane {i}: a character that is not a hex digit")
        out[i, :4 * q] = ((codes[:, None] >> np.arange(4, dtype=np.uint8)) & 1).reshape(-1)
        if extra:
            if line[q:q + 1] not in (b"0", b"1"):
                raise ValueError(f"plane {i}: last point is {line[q:q + 1]!r}, expected 0 or 1")
            out[i, nn - 1] = line[q] - ord("0")
    return out


def parse_record(lines: list[bytes]) -> Record:
    """A record from its 53 lines (ValueError saying what is wrong)."""
    version = int(lines[0])
    if version != RECORD_VERSION:
        raise ValueError(f"record version {version} is not supported (only {RECORD_VERSION})")
    n = int(lines[2])
    if not 2 <= n <= 25:
        raise ValueError(f"board size {n} out of range")
    a = n * n + 1
    own_line = lines[46].strip()
    if len(own_line) != n * n:
        raise ValueError(f"ownership has {len(own_line)} points, expected {n * n}")
    own = _OWN[np.frombuffer(own_line, np.uint8)]
    if (own == 127).any():
        raise ValueError("ownership holds a character other than 0-3")
    result = int(lines[47])
    if result not in (-1, 0, 1):
        raise ValueError(f"result {result} is not -1, 0 or 1")
    stm = int(lines[43])
    if stm not in (0, 1):
        raise ValueError(f"side to move {stm} is not 0 or 1")
    return Record(
        board_size=n, komi=float(lines[3]), rule=float(lines[4]), wave=float(lines[5]),
        planes=_planes(lines[6:6 + BINARY_PLANES], n), black_to_move=stm == 1,
        policy=_floats(lines[44], a, "policy"), aux_policy=_floats(lines[45], a, "auxiliary policy"),
        ownership=own, result=result, q=_floats(lines[48], 4, "average Q values"),
        final_score=float(lines[49]), score=_floats(lines[50], 4, "average score leads"),
    )


def iter_records(path: str | os.PathLike) -> Iterator[Record]:
    """The records of one file in order; SayuriDataError names file and record."""
    path = str(path)
    try:
        f = _open(path)
    except OSError as e:
        raise SayuriDataError(f"{path}: cannot open: {e}") from e
    with f:
        k = 0
        while True:
            try:
                first = f.readline()
                while first and not first.strip():
                    first = f.readline()
                if not first:
                    return
                lines = [first] + [f.readline() for _ in range(RECORD_LINES - 1)]
            except (OSError, EOFError, gzip.BadGzipFile) as e:
                raise SayuriDataError(f"{path}: record {k}: cannot read: {e}") from e
            if not lines[-1]:
                raise SayuriDataError(f"{path}: record {k}: truncated ({sum(1 for x in lines if x)} of "
                                      f"{RECORD_LINES} lines)")
            try:
                yield parse_record(lines)
            except (ValueError, IndexError) as e:
                raise SayuriDataError(f"{path}: record {k}: {e}") from e
            k += 1


def sample_planes(rec: Record) -> np.ndarray:
    """The 43 ``sayuri-v3`` planes ``[43, N*N]`` (uint8) of a record."""
    n = rec.board_size
    nn = n * n
    out = np.zeros((PLANES, nn), np.uint8)
    out[:BINARY_PLANES] = rec.planes
    out[P_RULE] = 1 if rec.rule > 0.5 else 0
    pos, neg = komi_count(rec.komi if rec.black_to_move else -rec.komi, n)
    out[P_KOMI, :pos] = 1
    out[P_NEG_KOMI, :neg] = 1
    out[P_ONES] = 1
    return out


def _continues(prev: Record, cur: Record) -> bool:
    """``cur`` is the position one ply after ``prev`` in the same game: its
    stones one ply ago (planes 3, 4) are ``prev``'s now (planes 1, 0)."""
    return (prev.board_size == cur.board_size and prev.black_to_move != cur.black_to_move
            and np.array_equal(cur.planes[3], prev.planes[1]) and np.array_equal(cur.planes[4], prev.planes[0]))


def records_to_samples(records: list[Record], name: str = "sayuri") -> dict[int, dict[str, Any]]:
    """Samples grouped by board size: ``{N: arrays of our chunk format + 'meta'}``."""
    games = np.zeros(len(records), np.int32)
    actions = np.full(len(records), -1, np.int16)
    g = 0
    for i, rec in enumerate(records):
        if i > 0:
            if _continues(records[i - 1], rec):
                last = np.nonzero(rec.planes[2])[0]
                actions[i - 1] = last[0] if len(last) else rec.board_size ** 2
            else:
                g += 1
        games[i] = g
    by_size: dict[int, list[int]] = {}
    for i, rec in enumerate(records):
        by_size.setdefault(rec.board_size, []).append(i)
    out: dict[int, dict[str, Any]] = {}
    for n, idx in sorted(by_size.items()):
        rs = [records[i] for i in idx]
        planes = np.stack([sample_planes(r) for r in rs])
        aux = np.stack([r.aux_policy for r in rs])
        nxt = np.where(aux.sum(axis=1) > 0, aux.argmax(axis=1), -1).astype(np.int16)
        policy = np.stack([r.policy for r in rs])
        wdl = np.zeros((len(rs), 3), np.float32)
        wdl[np.arange(len(rs)), [1 - r.result for r in rs]] = 1.0
        game_ids = games[idx]
        _, game_ids = np.unique(game_ids, return_inverse=True)
        out[n] = {
            "meta": {"format": "sayuri-async-chunk", "version": 1, "encoder": NAME, "planes": PLANES,
                     "board_size": n, "games": int(game_ids.max()) + 1 if len(rs) else 0, "generator": name},
            "planes": np.packbits(planes, axis=-1),
            "policy": policy.astype(np.float16),
            "next_action": nxt,
            "action": actions[idx],
            "wdl": wdl,
            "score": np.array([r.final_score for r in rs], np.float32),
            "ownership": np.stack([r.ownership for r in rs]).astype(np.int8),
            "to_move": np.array([1 if r.black_to_move else 2 for r in rs], np.int8),
            "komi": np.array([r.komi for r in rs], np.float32),
            "full_search": policy.sum(axis=1) > 0,
            "after_resign": np.zeros(len(rs), bool),
            "game": game_ids.astype(np.int32),
            "root_value": np.array([(r.q[0] + 1.0) / 2.0 for r in rs], np.float32),
        }
    return out


def read_sayuri_chunk(path: str | os.PathLike) -> dict[int, dict[str, Any]]:
    """One Sayuri data file as samples grouped by board size."""
    return records_to_samples(list(iter_records(path)), name=f"sayuri:{Path(path).name}")


def write_chunk(path: str | os.PathLike, arrays: dict[str, Any], replace: bool = True) -> None:
    """Write one group of samples as our chunk through the project's atomic
    writer (``fileio.atomic_path``; ``replace=False``: an existing file stays
    and ``fileio.NameTaken`` is raised)."""
    data = {k: v for k, v in arrays.items() if k != "meta"}
    data["meta"] = np.array(json.dumps(arrays["meta"]))
    with atomic_path(path, replace=replace) as tmp:
        with open(tmp, "wb") as f:
            np.savez_compressed(f, **data)


def convert(paths: list[str], out_dir: str | os.PathLike, generation: int = 0) -> tuple[list[str], list[str]]:
    """Convert Sayuri data files into our chunks under ``out_dir``:
    ``(written chunk paths, warnings for files skipped)``. Files are taken in
    the order given, so chunks keep their order for the training window."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    warnings: list[str] = []
    stamp = run_stamp()  # names differ from every earlier import's and self-play run's
    serial = 0
    for src in paths:
        try:
            groups = read_sayuri_chunk(src)
        except SayuriDataError as e:
            warnings.append(f"skipping {e}")
            continue
        for n, arrays in groups.items():
            while True:
                dst = out / f"chunk-{generation}-{stamp}-{serial:06d}.npz"
                serial += 1
                try:
                    write_chunk(dst, arrays, replace=False)
                    break
                except NameTaken:
                    continue
            written.append(str(dst))
    return written, warnings


def main(argv: list[str] | None = None) -> int:
    """``sayuri-async import-data FILE... -o DIR`` (see ``cli.data_main``)."""
    from .cli import data_main

    return data_main(argv)
