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
            -1 loss, side to move), four average Q values (average, short,
            middle, long term), final score (side to move), four average
            score leads (same order), Q and score stddev, policy KLD.
binary plane  one line: each hex digit holds 4 points, the first point in its
            lowest bit; with an odd ``N*N`` one last ``0``/``1`` for the last
            point. Planes are Sayuri's input planes 1-37 (our 0-36).
chunk file  many records one after another, gzip-compressed (``.gz``) or
            plain text; positions may be of several board sizes.
sample      one position in the form of our chunks (``docs/data-format.md``):
            the 43 ``sayuri-v3`` planes (the last six rebuilt from rule and
            komi as ``encoder.py`` writes them), policy, opp_policy (the
            auxiliary policy as it is, soft), next_action, action, wdl,
            score, ownership, to_move, komi, full_search, after_resign, game,
            root_value, q_avg, score_avg, stddev, policy_kld.
stream      ``convert`` reads record after record and keeps, per board size,
            at most ``chunk_positions`` samples (packed) before it writes
            them as a chunk: memory stays bounded however many files and
            records come in. Chunks span input files; a game cut by a chunk
            boundary continues in the next chunk (``game`` is an index
            within a chunk).

What is derived rather than read: ``next_action`` is the most likely move of
the auxiliary policy (-1 when it is all zero); ``action`` is read off the
next record's last-move plane when that record continues the same game one
ply later, else -1; ``game`` counts runs of such consecutive records (Sayuri
leaves out positions it does not record, so one game can span several runs);
``root_value`` is ``(average Q + 1) / 2``.

Output: chunks in the format of ``sayuri_async/chunkfile.py``, named
``chunk-<generation>-<run stamp>-<serial>.npz`` (``chunkfile.chunk_name``,
``fileio.run_stamp``), written through ``chunkfile.write_new_chunk``: a
temporary name, never over an existing file.
"""
from __future__ import annotations

import collections
import functools
import gzip
import io
import zlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from ..chunkfile import make_meta, write_new_chunk
from ..configfile import between, check_tables, fill, read_toml
from ..encoders.sayuri_v3 import MISC_PLANES, NAME, P_KOMI, P_NEG_KOMI, P_ONES, P_RULE, PLANES, komi_count
from ..fileio import run_stamp
from ..usererror import UserError

RECORD_LINES = 53
RECORD_VERSION = 2
BINARY_PLANES = PLANES - MISC_PLANES  # 37
_HEX = np.full(256, 255, np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _HEX[_c] = _i
for _i, _c in enumerate(b"ABCDEF"):
    _HEX[_c] = 10 + _i
_REV4 = np.array([int(f"{v:04b}"[::-1], 2) for v in range(16)] + [0] * 240, np.uint8)  # nibble bits reversed
_READ_BLOCK = 1 << 20  # bytes read (decompressed) at a time
MAX_LINE_BYTES = 1 << 20  # the longest line read: a 19x19 record's longest (a policy) is about 2 KB
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
    planes: np.ndarray  # uint8 [37, ceil(N*N/8)], bit-packed (numpy.packbits order)
    black_to_move: bool
    policy: np.ndarray  # float32 [N*N+1]
    aux_policy: np.ndarray  # float32 [N*N+1]
    ownership: np.ndarray  # int8 [N*N], side to move
    result: int
    q: np.ndarray  # float32 [4]: average, short, middle, long
    final_score: float
    score: np.ndarray  # float32 [4]: average, short, middle, long
    stddev: np.ndarray  # float32 [2]: Q, score
    kld: float


def _open(path: str) -> io.BufferedIOBase:
    with open(path, "rb") as f:
        magic = f.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


def _floats(line: bytes, count: int, what: str) -> np.ndarray:
    """``count`` numbers of one line; the zeros (most of a policy) are not
    converted one by one."""
    words = line.split()
    if len(words) != count:
        raise ValueError(f"{what}: {len(words)} numbers, expected {count}")
    out = np.zeros(count, dtype=np.float32)
    nonzero = [i for i, w in enumerate(words) if w != b"0"]
    if nonzero:
        out[nonzero] = [float(words[i]) for i in nonzero]
    if not np.isfinite(out).all():
        raise ValueError(f"{what}: a number that is not finite")
    return out


def _planes(lines: list[bytes], n: int) -> np.ndarray:
    """The binary planes of ``lines`` at once, bit-packed as our chunks hold
    them (``numpy.packbits`` order): ``uint8 [len(lines), ceil(N*N/8)]``.
    Two hex digits (8 points, the first in the lowest bit of the first
    digit) make one byte (the first point in its highest bit)."""
    nn = n * n
    q = nn // 4
    extra = nn % 4
    width = q + (1 if extra else 0)
    rows = [line.strip() for line in lines]
    for i, line in enumerate(rows):
        if len(line) != width:
            raise ValueError(f"plane {i}: {len(line)} characters, expected {width}")
    chars = np.frombuffer(b"".join(rows), np.uint8).reshape(len(rows), width)
    nibbles = _HEX[chars[:, :q]]
    if (nibbles == 255).any():
        raise ValueError(f"plane {int(np.nonzero((nibbles == 255).any(axis=1))[0][0])}: "
                         "a character that is not a hex digit")
    nibbles = _REV4[nibbles]  # first point in the nibble's highest bit
    if q % 2:
        nibbles = np.concatenate([nibbles, np.zeros((len(rows), 1), np.uint8)], axis=1)
    out = np.zeros((len(rows), (nn + 7) // 8), np.uint8)
    out[:, :nibbles.shape[1] // 2] = (nibbles[:, 0::2] << 4) | nibbles[:, 1::2]
    if extra:
        last = chars[:, q]
        bad = (last != ord("0")) & (last != ord("1"))
        if bad.any():
            i = int(np.nonzero(bad)[0][0])
            raise ValueError(f"plane {i}: last point is {bytes([last[i]])!r}, expected 0 or 1")
        out[:, (nn - 1) // 8] |= ((last - ord("0")) << (7 - (nn - 1) % 8)).astype(np.uint8)
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
        stddev=_floats(lines[51], 2, "Q and score stddev"), kld=float(lines[52]),
    )


class LineTooLong(ValueError):
    """A line longer than ``MAX_LINE_BYTES``: ``number`` counts from 1."""

    def __init__(self, number: int) -> None:
        super().__init__(f"line {number} is longer than {MAX_LINE_BYTES >> 20} MiB (a record's lines "
                         f"are at most a few KB); not Sayuri training data")
        self.number = number


def _lines(f: io.BufferedIOBase, limit: int | None = None) -> Iterator[bytes]:
    """The lines of ``f`` (each with its newline but the last), read in
    blocks of ``_READ_BLOCK`` bytes: far fewer calls than ``readline``. A
    line is gathered from its blocks once, when it ends, and one longer
    than ``limit`` (default ``MAX_LINE_BYTES``) raises ``LineTooLong`` as
    soon as that much of it is read: time and memory stay bounded."""
    limit = MAX_LINE_BYTES if limit is None else limit
    pieces: list[bytes] = []  # the unfinished line's blocks
    held = 0
    number = 0
    while True:
        block = f.read(_READ_BLOCK)
        if not block:
            if pieces:
                yield b"".join(pieces)
            return
        parts = block.split(b"\n")
        if len(parts) == 1:  # no line ends in this block
            pieces.append(block)
            held += len(block)
            if held > limit:
                raise LineTooLong(number + 1)
            continue
        pieces.append(parts[0])
        parts[0] = b"".join(pieces)
        last = parts.pop()
        pieces, held = [last], len(last)
        for line in parts:
            number += 1
            if len(line) > limit:
                raise LineTooLong(number)
            yield line + b"\n"


def _raw_records(path: str) -> Iterator[tuple[int, list[bytes]]]:
    """``(record number, its 53 lines)`` of one file, unparsed;
    SayuriDataError for a file that cannot be read or a truncated record."""
    try:
        f = _open(path)
    except OSError as e:
        raise SayuriDataError(f"{path}: cannot open: {e}") from e
    with f:
        k = 0
        lines_of = _lines(f)
        while True:
            try:
                first = next(lines_of, b"")
                while first and not first.strip():
                    first = next(lines_of, b"")
                if not first:
                    return
                lines = [first] + [next(lines_of, b"") for _ in range(RECORD_LINES - 1)]
            except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as e:
                raise SayuriDataError(f"{path}: record {k}: cannot read: {e}") from e
            except LineTooLong as e:
                raise SayuriDataError(f"{path}: record {k}: {e}") from None
            if not lines[-1]:
                raise SayuriDataError(f"{path}: record {k}: truncated ({sum(1 for x in lines if x)} of "
                                      f"{RECORD_LINES} lines)")
            yield k, lines
            k += 1


def _parse_batch(batch: list[list[bytes]]) -> tuple[list[Record], tuple[int, str] | None]:
    """Parse records in a worker: ``(records, (index, message) of the first
    bad one or None)``; the records before a bad one are returned."""
    out = []
    for i, lines in enumerate(batch):
        try:
            out.append(parse_record(lines))
        except (ValueError, IndexError) as e:
            return out, (i, str(e))
    return out, None


def iter_records(path: str | os.PathLike, pool: Any = None, in_flight: int = 2) -> Iterator[Record]:
    """The records of one file in order; SayuriDataError names file and record
    (after the records before it). With ``pool`` (a ``multiprocessing``
    pool) records are parsed in its processes, ``PARSE_BATCH`` at a time, at
    most ``in_flight`` batches at once: the order and the errors are those of
    the serial reading, memory stays bounded."""
    path = str(path)
    if pool is None:
        for k, lines in _raw_records(path):
            try:
                yield parse_record(lines)
            except (ValueError, IndexError) as e:
                raise SayuriDataError(f"{path}: record {k}: {e}") from e
        return
    raw = _raw_records(path)
    pending: collections.deque = collections.deque()
    deferred: SayuriDataError | None = None  # what ends the file: an error or _END

    def submit() -> None:
        nonlocal deferred
        batch, first = [], -1
        try:
            for k, lines in raw:
                first = k if first < 0 else first
                batch.append(lines)
                if len(batch) == PARSE_BATCH:
                    break
            else:
                deferred = deferred or _END
        except SayuriDataError as e:
            deferred = e
        if batch:
            pending.append((first, pool.apply_async(_parse_batch, (batch,))))

    while deferred is None and len(pending) < max(1, in_flight):
        submit()
    while pending:
        first, job = pending.popleft()
        records, bad = job.get()
        yield from records
        if bad is not None:
            raise SayuriDataError(f"{path}: record {first + bad[0]}: {bad[1]}")
        if deferred is None:
            submit()
    if deferred is not None and deferred is not _END:
        raise deferred


PARSE_BATCH = 256
_END = SayuriDataError("end of file")  # marker: the file is read to its end


def sample_planes(rec: Record) -> np.ndarray:
    """The 43 ``sayuri-v3`` planes of a record, bit-packed: ``uint8 [43, ceil(N*N/8)]``."""
    out = np.empty((PLANES, rec.planes.shape[1]), np.uint8)
    out[:BINARY_PLANES] = rec.planes
    out[BINARY_PLANES:] = _misc_planes(rec.board_size, rec.rule > 0.5,
                                       rec.komi if rec.black_to_move else -rec.komi)
    return out


@functools.lru_cache(maxsize=1024)
def _misc_planes(n: int, territory: bool, komi_stm: float) -> np.ndarray:
    """Planes 37-42 (rule, the komi count, ones; wave and size are decoded on
    the device), packed: they depend on the board size, rule and komi only."""
    nn = n * n
    out = np.zeros((MISC_PLANES, nn), np.uint8)
    out[P_RULE - BINARY_PLANES] = 1 if territory else 0
    pos, neg = komi_count(komi_stm, n)
    out[P_KOMI - BINARY_PLANES, :pos] = 1
    out[P_NEG_KOMI - BINARY_PLANES, :neg] = 1
    out[P_ONES - BINARY_PLANES] = 1
    packed = np.packbits(out, axis=-1)
    packed.flags.writeable = False
    return packed


def _continues(prev: Record, cur: Record) -> bool:
    """``cur`` is the position one ply after ``prev`` in the same game: its
    stones one ply ago (planes 3, 4) are ``prev``'s now (planes 1, 0)."""
    return (prev.board_size == cur.board_size and prev.black_to_move != cur.black_to_move
            and np.array_equal(cur.planes[3], prev.planes[1]) and np.array_equal(cur.planes[4], prev.planes[0]))


class SampleBuffer:
    """The samples of one board size waiting to be written, packed as they
    come (about 3 KB a 19x19 sample): ``add`` one, ``arrays`` for a chunk."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.rows: list[tuple[Record, np.ndarray, int, int]] = []  # record, packed planes, action, game

    def __len__(self) -> int:
        return len(self.rows)

    def add(self, rec: Record, action: int, game: int) -> None:
        packed = sample_planes(rec)
        slim = Record(rec.board_size, rec.komi, rec.rule, rec.wave, np.empty((0, 0), np.uint8), rec.black_to_move,
                      rec.policy.astype(np.float16), rec.aux_policy.astype(np.float16), rec.ownership, rec.result,
                      rec.q, rec.final_score, rec.score, rec.stddev, rec.kld)
        self.rows.append((slim, packed, action, game))

    def arrays(self, name: str) -> dict[str, Any]:
        """The chunk arrays of the samples held (``meta`` included), in order."""
        rs = [r for r, _, _, _ in self.rows]
        m = len(rs)
        aux = np.stack([r.aux_policy for r in rs])
        has_aux = aux.astype(np.float32).sum(axis=1) > 0
        nxt = np.where(has_aux, aux.argmax(axis=1), -1).astype(np.int16)
        policy = np.stack([r.policy for r in rs])
        wdl = np.zeros((m, 3), np.float32)
        wdl[np.arange(m), [1 - r.result for r in rs]] = 1.0
        _, game_ids = np.unique(np.array([g for _, _, _, g in self.rows]), return_inverse=True)
        q = np.stack([r.q for r in rs]).astype(np.float32)
        return {
            "meta": make_meta(NAME, PLANES, self.n, int(game_ids.max()) + 1 if m else 0, name),
            "planes": np.stack([p for _, p, _, _ in self.rows]),
            "policy": policy,
            "opp_policy": aux,
            "next_action": nxt,
            "action": np.array([a for _, _, a, _ in self.rows], np.int16),
            "wdl": wdl,
            "score": np.array([r.final_score for r in rs], np.float32),
            "ownership": np.stack([r.ownership for r in rs]).astype(np.int8),
            "to_move": np.array([1 if r.black_to_move else 2 for r in rs], np.int8),
            "komi": np.array([r.komi for r in rs], np.float32),
            "full_search": policy.astype(np.float32).sum(axis=1) > 0,
            "after_resign": np.zeros(m, bool),
            "game": game_ids.astype(np.int32).reshape(m),
            "root_value": (q[:, 0] + 1.0) / 2.0,
            "q_avg": q,
            "score_avg": np.stack([r.score for r in rs]).astype(np.float32),
            "stddev": np.stack([r.stddev for r in rs]).astype(np.float32),
            "policy_kld": np.array([r.kld for r in rs], np.float32),
        }


def _last_move(rec: Record) -> int:
    last = np.nonzero(np.unpackbits(rec.planes[2], count=rec.board_size ** 2))[0]
    return int(last[0]) if len(last) else rec.board_size ** 2


def iter_samples(path: str | os.PathLike, pool: Any = None,
                 in_flight: int = 2) -> Iterator[tuple[Record, int, bool]]:
    """``(record, action, continues)`` for each record of one file, one record
    late (a record's action is read off the next one); ``continues``: the
    record is the ply after the one yielded before it, in the same game.
    SayuriDataError comes after the samples before the bad record."""
    prev: Record | None = None
    prev_continues = False
    try:
        for rec in iter_records(path, pool, in_flight):
            continues = prev is not None and _continues(prev, rec)
            if prev is not None:
                yield prev, _last_move(rec) if continues else -1, prev_continues
            prev, prev_continues = rec, continues
    except SayuriDataError:  # the last good record before the damaged one is kept too
        if prev is not None:
            yield prev, -1, prev_continues
        raise
    if prev is not None:
        yield prev, -1, prev_continues


def read_sayuri_chunk(path: str | os.PathLike) -> dict[int, dict[str, Any]]:
    """One Sayuri data file as samples grouped by board size (in memory: for
    small files and tests; ``convert`` streams)."""
    buffers: dict[int, SampleBuffer] = {}
    game = -1
    for rec, action, continues in iter_samples(path):
        game += 0 if continues else 1
        buffers.setdefault(rec.board_size, SampleBuffer(rec.board_size)).add(rec, action, game)
    return {n: b.arrays(f"sayuri:{Path(path).name}") for n, b in sorted(buffers.items())}


DEFAULT_CHUNK_POSITIONS = 8192
MAX_CHUNK_POSITIONS = 1 << 20  # positions held in memory per board size before a chunk is written
MAX_GENERATION = 999_999  # six digits in chunk names (chunkfile.chunk_name)


@dataclass
class ImportConfig:
    """``[import]`` of ``import-data --config FILE`` (``configs/sayuri-import.toml``);
    the command line's options override it."""
    out: str = ""  # the chunks' folder ("": -o must give it)
    generation: int = 0
    chunk_positions: int = DEFAULT_CHUNK_POSITIONS
    jobs: int = 1

    def __post_init__(self) -> None:
        between(self, 0, MAX_GENERATION, "generation")
        between(self, 1, MAX_CHUNK_POSITIONS, "chunk_positions")
        between(self, 1, 256, "jobs")


def load_import_config(path: str) -> ImportConfig:
    """The ``[import]`` table of ``path`` (ConfigError naming file and key)."""
    raw = read_toml(path)
    check_tables(raw, ["import"], path)
    return fill(ImportConfig, raw.get("import", {}), path, "import")


@dataclass
class ImportResult:
    written: list[str]
    warnings: list[str]
    positions: int = 0
    files: int = 0


def convert(paths: list[str], out_dir: str | os.PathLike, generation: int = 0,
            chunk_positions: int = DEFAULT_CHUNK_POSITIONS, jobs: int = 1) -> ImportResult:
    """Convert Sayuri data files into our chunks under ``out_dir``, streaming
    (see ``stream``). Files are taken in the order given, so chunks keep
    their order for the training window. A damaged file adds a warning; its
    records before the damage are kept, the rest of it is skipped. An empty
    file (no record) adds a warning too. ``jobs``
    above 1 parses records in that many processes (``iter_records``); the
    chunks are the same as with one."""
    if chunk_positions < 1:
        raise ValueError(f"chunk_positions {chunk_positions} must be at least 1")
    if jobs < 1:
        raise ValueError(f"jobs {jobs} must be at least 1")
    if jobs > 1:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(jobs) as pool:
            return _convert(paths, out_dir, generation, chunk_positions, pool, 2 * jobs)
    return _convert(paths, out_dir, generation, chunk_positions, None, 0)


def _convert(paths: list[str], out_dir: str | os.PathLike, generation: int, chunk_positions: int,
             pool: Any, in_flight: int) -> ImportResult:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    result = ImportResult([], [])
    stamp = run_stamp()  # names differ from every earlier import's and self-play run's
    serial = 0
    buffers: dict[int, SampleBuffer] = {}
    game = -1

    def flush(buf: SampleBuffer) -> None:
        nonlocal serial
        arrays = buf.arrays(f"sayuri-import:{stamp}")
        meta = arrays.pop("meta")
        dst, serial = write_new_chunk(out, generation, stamp, serial + 1, meta, arrays)
        result.written.append(str(dst))
        result.positions += len(buf)
        buf.rows.clear()

    for src in paths:
        kept = 0
        try:
            for rec, action, continues in iter_samples(src, pool, in_flight):
                game += 0 if continues else 1
                buf = buffers.setdefault(rec.board_size, SampleBuffer(rec.board_size))
                buf.add(rec, action, game)
                kept += 1
                if len(buf) >= chunk_positions:
                    flush(buf)
        except SayuriDataError as e:
            result.warnings.append(f"skipping the rest of {e}" + (f" ({kept} records before it kept)"
                                                                   if kept else ""))
        else:
            if not kept:
                result.warnings.append(f"{src}: no records in it (an empty file); nothing imported from it")
        result.files += 1
    for n in sorted(buffers):
        if len(buffers[n]):
            flush(buffers[n])
    return result

