"""The chunk file: the one home of the training-data format (``docs/data-format.md``).

Every writer (self-play, ``import-sgf``, ``import-data``) and every reader
(the trainer, the RL loop, ``tools/kill_runs.py``) goes through this module.

Vocabulary
----------
chunk       one ``.npz`` archive (``numpy.savez_compressed``) of the positions
            of finished games of one board size: a ``meta`` entry and the
            per-position arrays (fields).
meta        the header, a JSON object in the ``meta`` entry: ``format``
            (``FORMAT``), ``version`` (``VERSION``), ``encoder``, ``planes``
            (C), ``board_size`` (N), ``games``, ``generator`` (``make_meta``);
            self-play adds the optional ``META_PROVENANCE`` keys: ``host``
            (the machine's full name), ``networks`` (the distinct networks
            that played, ``{"name", "sha256"}`` each) and ``game_networks``
            (per game, in ``game`` order, the indices into ``networks`` of
            the networks it was played with, in order).
field       one per-position array: its name, the dtype it is written with
            and its shape in the symbols of ``Field.dims`` (``M`` positions,
            ``A = N*N + 1`` actions, ``NN = N*N`` points, ``C`` planes, ``P =
            ceil(N*N/8)`` bytes of a bit-packed plane, or a number).
            ``REQUIRED`` fields are in every chunk; ``OPTIONAL`` ones may be
            absent (older chunks, writers that do not know them); of those,
            ``ownership_mask`` reads as all true when absent, the others stay
            absent (``train.dataset.training_arrays`` says what training
            makes of that).
kind        what a reader checks of a dtype: its numpy kind (``u``, ``i``,
            ``f``, ``b``), so that chunks written with wider dtypes still
            read; writers cast to the field's dtype.
name        ``chunk-<generation, 6 digits>-<tag>-<serial, 6 digits>.npz``
            (``chunk_name``); ``generation_of`` reads the generation back
            (-1 for a name that is not a chunk's). ``write_new_chunk`` takes
            the first free serial: a chunk never replaces an existing file.
size limits ``check_chunk_sizes``: checked on the zip directory before
            anything is decompressed (a lying header or a zip bomb costs no
            memory): the ``action`` array holds the positions the header
            claims, and all arrays together take at most
            ``position_bytes_bound`` bytes a position (``MAX_CHUNK_BYTES`` in
            all) uncompressed, the ``meta`` entry at most ``MAX_META_BYTES``.
values      ``check_values``, on every read: the contract of each field's
            values (``docs/data-format.md``, "Values"): distributions
            (``policy``, ``opp_policy``, ``wdl``) finite, not negative, rows
            summing to 1 within ``SUM_TOLERANCE`` (or all zeros where the
            format allows), actions, owners and sides in range, ``score``
            and ``score_avg`` within ``score_limit``, ``komi`` within
            ``KOMI_LIMIT``, Q and root values in range (``VALUE_TOLERANCE``
            of rounding), NaN only where it means "unknown" (``q_avg``,
            ``score_avg``). The ChunkError names the field and its first bad
            row.
peek        ``peek_chunk``: positions and meta from the headers only.
"""
from __future__ import annotations

import json
import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .fileio import NameTaken, atomic_path

FORMAT = "sayuri-async-chunk"
VERSION = 1
MAX_CHUNK_BYTES = 1 << 30  # a chunk's arrays, uncompressed: 50 games of 19x19 take about 150 MB
MAX_META_BYTES = 1 << 20
NAME_TRIES = 10_000  # serials tried past taken names before giving up
META_KEYS = ("format", "version", "encoder", "planes", "board_size", "games", "generator")
META_PROVENANCE = ("host", "networks", "game_networks")


class ChunkError(ValueError):
    """A chunk that cannot be used; the message starts with its file name."""


@dataclass(frozen=True)
class Field:
    """One per-position array of a chunk (see the vocabulary)."""
    name: str
    dtype: type
    dims: tuple[str | int, ...]

    def shape(self, m: int, n: int, c: int) -> tuple[int, ...]:
        size = {"M": m, "A": n * n + 1, "NN": n * n, "C": c, "P": (n * n + 7) // 8}
        return tuple(size[d] if isinstance(d, str) else d for d in self.dims)

    @property
    def kind(self) -> str:
        return np.dtype(self.dtype).kind


REQUIRED = (
    Field("planes", np.uint8, ("M", "C", "P")),
    Field("policy", np.float16, ("M", "A")),
    Field("next_action", np.int16, ("M",)),
    Field("action", np.int16, ("M",)),
    Field("wdl", np.float32, ("M", 3)),
    Field("score", np.float32, ("M",)),
    Field("ownership", np.int8, ("M", "NN")),
    Field("to_move", np.int8, ("M",)),
    Field("komi", np.float32, ("M",)),
    Field("full_search", np.bool_, ("M",)),
    Field("after_resign", np.bool_, ("M",)),
    Field("game", np.int32, ("M",)),
    Field("root_value", np.float32, ("M",)),
)
OPTIONAL = (
    Field("ownership_mask", np.bool_, ("M",)),  # absent: all true
    Field("opp_policy", np.float16, ("M", "A")),
    Field("q_avg", np.float32, ("M", 4)),
    Field("score_avg", np.float32, ("M", 4)),
    Field("stddev", np.float32, ("M", 2)),
    Field("policy_kld", np.float32, ("M",)),
)
FIELDS = {f.name: f for f in (*REQUIRED, *OPTIONAL)}
SUM_TOLERANCE = 0.01  # how far a distribution's row sum (policy, opp_policy, wdl) may be from 1
VALUE_TOLERANCE = 1e-3  # rounding room around the 0..1 of root_value and the -1..1 of q_avg
KOMI_LIMIT = 2 * 25 * 25  # |komi| at most twice the largest board's area
_NAME = re.compile(r"chunk-(\d+)-")


# ------------------------------------------------------------------ names

def chunk_name(generation: int, tag: str, serial: int) -> str:
    """The file name of a chunk (see the vocabulary)."""
    return f"chunk-{generation:06d}-{tag}-{serial:06d}.npz"


def generation_glob(generation: int) -> str:
    """A glob for the chunks of one generation."""
    return f"chunk-{generation:06d}-*.npz"


def generation_of(name: str) -> int:
    """The generation in a chunk's file name, -1 when it is not a chunk's name."""
    m = _NAME.match(name)
    return int(m.group(1)) if m else -1


def zeros(name: str, m: int, n: int, c: int) -> np.ndarray:
    """A zeroed array of field ``name`` for ``m`` positions of ``n``x``n``, ``c`` planes."""
    f = FIELDS[name]
    return np.zeros(f.shape(m, n, c), dtype=f.dtype)


# ------------------------------------------------------------------ meta and checks

def make_meta(encoder: str, planes: int, board_size: int, games: int, generator: str,
              provenance: dict[str, Any] | None = None) -> dict[str, Any]:
    """The header of a new chunk; ``provenance`` holds the optional
    ``META_PROVENANCE`` keys (see the vocabulary)."""
    extra = dict(provenance or {})
    unknown = sorted(set(extra) - set(META_PROVENANCE))
    if unknown:
        raise ValueError(f"meta keys {unknown} are not chunk provenance ({', '.join(META_PROVENANCE)})")
    return {"format": FORMAT, "version": VERSION, "encoder": encoder, "planes": int(planes),
            "board_size": int(board_size), "games": int(games), "generator": generator, **extra}


def position_bytes_bound(n: int, c: int) -> int:
    """At most what one position of an ``n``x``n`` chunk with ``c`` planes
    can take uncompressed: every array at 8 bytes a value (the real dtypes
    take less), the bit-packed planes as they are; the optional arrays
    (``opp_policy`` another row of actions, the averages) included."""
    return c * ((n * n + 7) // 8) + 8 * (2 * (n * n + 1) + n * n + 32)


def _size_and_planes(meta: dict[str, Any], path: str | os.PathLike) -> tuple[int, int]:
    try:
        n, c = int(meta["board_size"]), int(meta["planes"])
    except (KeyError, TypeError, ValueError) as e:
        raise ChunkError(f"{path}: meta lacks board_size/planes ({e})") from None
    if not (2 <= n <= 25 and 1 <= c <= 4096):
        raise ChunkError(f"{path}: meta claims board size {n} and {c} planes (2..25, 1..4096)")
    return n, c


def check_chunk_sizes(z: zipfile.ZipFile, path: str | os.PathLike, positions: int, action_itemsize: int,
                      meta: dict[str, Any]) -> None:
    """ChunkError unless the sizes in the zip directory fit what the header
    claims (see "size limits" in the vocabulary)."""
    n, c = _size_and_planes(meta, path)
    held = z.getinfo("action.npy").file_size
    if positions * action_itemsize > held:
        raise ChunkError(f"{path}: header claims {positions:,} positions, its action array holds "
                         f"{held:,} bytes")
    total = sum(i.file_size for i in z.infolist())
    bound = min(MAX_CHUNK_BYTES, positions * position_bytes_bound(n, c) + (1 << 20))
    if total > bound:
        raise ChunkError(f"{path}: {total:,} bytes uncompressed for {positions:,} positions of {n}x{n}, "
                         f"more than the {bound:,} such a chunk can take")


def check_arrays(path: str | os.PathLike, n: int, c: int, arrays: dict[str, Any]) -> int:
    """ChunkError unless ``arrays`` hold every required field (and the
    optional ones present) with the documented shape and kind; returns M."""
    if "action" not in arrays:
        raise ChunkError(f"{path}: no 'action' array")
    m = int(arrays["action"].shape[0]) if np.ndim(arrays["action"]) == 1 else -1
    for f in (*REQUIRED, *OPTIONAL):
        if f.name not in arrays:
            if f in OPTIONAL:
                continue
            raise ChunkError(f"{path}: no {f.name!r} array")
        a = arrays[f.name]
        shape = f.shape(m, n, c)
        if a.shape != shape:
            raise ChunkError(f"{path}: {f.name!r} has shape {list(a.shape)}, expected {list(shape)}")
        if a.dtype.kind != f.kind:
            raise ChunkError(f"{path}: {f.name!r} has dtype {a.dtype}, expected kind {f.kind!r}")
    return m


def score_limit(n: int, komi: np.ndarray | float) -> np.ndarray | float:
    """The largest ``|score|`` (and ``|score_avg|``) a chunk of ``n``x``n``
    may hold at komi ``komi``: ``2 * n * n + |komi|`` (an area count is at
    most ``n * n``; the rest leaves room for the territory counts of
    imported records)."""
    return 2 * n * n + np.abs(komi)


def _bad(path: str | os.PathLike, key: str, what: str, rows: np.ndarray) -> ChunkError:
    """The error for field ``key`` failing in ``rows`` (a bool mask over positions)."""
    first = int(np.argmax(rows))
    count = int(rows.sum())
    return ChunkError(f"{path}: {key!r} {what} ({count} position(s), the first at row {first})")


def _rows(mask: np.ndarray) -> np.ndarray:
    """A per-position bool mask from a per-value one (any over the non-first axes)."""
    return mask.reshape(len(mask), -1).any(axis=1) if mask.ndim > 1 else mask


def _check_distribution(path: str | os.PathLike, key: str, p: np.ndarray, full: np.ndarray | None) -> None:
    """Non-negative rows that sum to 1 (``SUM_TOLERANCE``) or are all zeros;
    the rows of ``full`` (when given) must sum to 1."""
    sums = p.sum(axis=1, dtype=np.float64)  # NaN or infinite wherever a row holds one
    if not np.isfinite(sums).all():
        raise _bad(path, key, "holds NaN or infinite values", _rows(~np.isfinite(p)))
    if _any_sign_bit(p) and (p < 0).any():
        raise _bad(path, key, "holds negative values", _rows(p < 0))
    one = np.abs(sums - 1.0) <= SUM_TOLERANCE
    if not (one | (sums == 0)).all():
        raise _bad(path, key, "has rows that neither sum to 1 nor are all zeros", ~(one | (sums == 0)))
    if full is not None and not one[full].all():
        raise _bad(path, key, "has full-search rows that do not sum to 1", full & ~one)


def _any_sign_bit(a: np.ndarray) -> bool:
    """Whether a float array holds a value with its sign bit set (a negative
    number or -0.0): a fast test on the bits (float16 arithmetic is slow)."""
    ints = {2: np.int16, 4: np.int32, 8: np.int64}.get(a.dtype.itemsize)
    if ints is None or a.size == 0 or not a.flags.c_contiguous:
        return bool(a.size) and bool(np.signbit(a).any())
    return bool(a.view(ints).min() < 0)


def _check_range(path: str | os.PathLike, key: str, a: np.ndarray, lo: float | np.ndarray,
                 hi: float | np.ndarray, unknown_nan: bool = False) -> None:
    """Finite values in ``lo..hi`` (arrays: one bound per position); NaN
    allowed (unknown) when ``unknown_nan``."""
    if a.size == 0:
        return
    if a.dtype.kind == "f":
        nan = np.isnan(a)
        if not unknown_nan and nan.any():
            raise _bad(path, key, "holds NaN", _rows(nan))
        if np.isinf(a).any():
            raise _bad(path, key, "holds infinite values", _rows(np.isinf(a)))
        if nan.all():
            return
        low, high = np.nanmin(a), np.nanmax(a)
    else:
        low, high = a.min(), a.max()
    if not np.ndim(lo) and not np.ndim(hi) and lo <= low and high <= hi:
        return  # the common case: one pass for each bound
    shape = (len(a),) + (1,) * (a.ndim - 1)
    lo_b = np.reshape(lo, shape) if np.ndim(lo) else lo
    hi_b = np.reshape(hi, shape) if np.ndim(hi) else hi
    out = (a < lo_b) | (a > hi_b)  # NaN compares false: an unknown value is never out of range
    if out.any():
        bounds = f"|{key}| at most 2*N*N + |komi|" if np.ndim(hi) else f"{lo:g}..{hi:g}"
        raise _bad(path, key, f"out of range ({bounds})", _rows(out))


def check_values(path: str | os.PathLike, n: int, arrays: dict[str, Any]) -> None:
    """ChunkError, naming the field, for values that break the format's
    contract (``docs/data-format.md``, "values"): NaN or infinity where a
    number is due, distributions that are negative or do not sum to 1,
    actions, owners, sides, results, Q and scores out of range."""
    a = n * n + 1
    full = arrays["full_search"].astype(bool)
    _check_distribution(path, "policy", arrays["policy"], full)
    if "opp_policy" in arrays:
        _check_distribution(path, "opp_policy", arrays["opp_policy"], None)
    wdl = arrays["wdl"]
    _check_range(path, "wdl", wdl, 0.0, 1.0)
    off = np.abs(wdl.astype(np.float64).sum(axis=1) - 1.0) > SUM_TOLERANCE
    if off.any():
        raise _bad(path, "wdl", "has rows that do not sum to 1", off)
    _check_range(path, "komi", arrays["komi"], -KOMI_LIMIT, KOMI_LIMIT)
    limit = score_limit(n, arrays["komi"].astype(np.float64))
    _check_range(path, "score", arrays["score"], -limit, limit)
    _check_range(path, "action", arrays["action"], -1, a - 1)  # -1: unknown (import-data)
    _check_range(path, "next_action", arrays["next_action"], -1, a - 1)
    _check_range(path, "ownership", arrays["ownership"], -1, 1)
    _check_range(path, "to_move", arrays["to_move"], 1, 2)
    _check_range(path, "game", arrays["game"], 0, np.iinfo(np.int32).max)
    _check_range(path, "root_value", arrays["root_value"], -VALUE_TOLERANCE, 1.0 + VALUE_TOLERANCE)
    if "q_avg" in arrays:
        _check_range(path, "q_avg", arrays["q_avg"], -1.0 - VALUE_TOLERANCE, 1.0 + VALUE_TOLERANCE, unknown_nan=True)
    if "score_avg" in arrays:
        _check_range(path, "score_avg", arrays["score_avg"], -limit, limit, unknown_nan=True)
    if "stddev" in arrays:
        _check_range(path, "stddev", arrays["stddev"], 0.0, np.inf)
    if "policy_kld" in arrays:
        _check_range(path, "policy_kld", arrays["policy_kld"], -np.inf, np.inf)


def _check_meta(path: str | os.PathLike, meta: Any) -> tuple[int, int, str]:
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ChunkError(f"{path}: meta.format is not {FORMAT!r}")
    if meta.get("version") != VERSION:
        raise ChunkError(f"{path}: meta.version {meta.get('version')!r} is not {VERSION}")
    n, c = _size_and_planes(meta, path)
    if "encoder" not in meta:
        raise ChunkError(f"{path}: meta lacks encoder")
    return n, c, str(meta["encoder"])


# ------------------------------------------------------------------ reading

def peek_chunk(path: str | os.PathLike) -> tuple[int, dict[str, Any]]:
    """``(positions, meta)`` of a chunk without decompressing its arrays.

    Positions come from the ``action`` array's header, meta from the small
    ``meta`` entry; a truncated zip (its directory is at the end) fails here,
    and so do sizes that do not fit the header (``check_chunk_sizes``).
    """
    try:
        with zipfile.ZipFile(path) as z:
            with z.open("action.npy") as f:
                version = np.lib.format.read_magic(f)
                read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                        else np.lib.format.read_array_header_2_0)
                shape, _, dtype = read(f)
            if z.getinfo("meta.npy").file_size > MAX_META_BYTES:
                raise ChunkError(f"{path}: its meta entry is over 1 MiB")
            with z.open("meta.npy") as f:
                meta = json.loads(str(np.lib.format.read_array(f, allow_pickle=False)[()]))
            if len(shape) != 1:
                raise ChunkError(f"{path}: 'action' has shape {shape}, expected [M]")
            if not isinstance(meta, dict):
                raise ChunkError(f"{path}: 'meta' is not a JSON object")
            check_chunk_sizes(z, path, int(shape[0]), dtype.itemsize, meta)
    except ChunkError:
        raise
    except Exception as e:  # truncated zip, missing member, bad header, bad JSON
        raise ChunkError(f"{path}: cannot read chunk header ({type(e).__name__}: {e})") from None
    return int(shape[0]), meta


def peek_positions(path: str | os.PathLike) -> int:
    """Position count of a chunk (see :func:`peek_chunk`)."""
    return peek_chunk(path)[0]


def read_chunk(path: str | os.PathLike, board_size: int | None = None,
               encoder: str | None = None, planes: int | None = None) -> dict[str, Any]:
    """Load and check one chunk; returns its arrays plus ``meta`` (a dict).

    Raises :class:`ChunkError` (message starting with the file name) when the
    file is unreadable or too large for its header (``check_chunk_sizes``),
    has the wrong format or version, a missing or misshapen array, values
    out of range (``check_values``), or does not match the wanted board
    size, encoder or plane count. An absent ``ownership_mask`` reads as all
    true.
    """
    peek_chunk(path)  # sizes checked before anything is decompressed
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except Exception as e:
        raise ChunkError(f"{path}: unreadable ({type(e).__name__}: {e})") from None
    if "meta" not in arrays:
        raise ChunkError(f"{path}: no 'meta' entry")
    try:
        meta = json.loads(str(arrays.pop("meta")[()]))
    except (ValueError, TypeError) as e:
        raise ChunkError(f"{path}: 'meta' is not JSON ({e})") from None
    n, c, meta_encoder = _check_meta(path, meta)
    if board_size is not None and n != board_size:
        raise ChunkError(f"{path}: board size {n}, training {board_size}")
    if encoder is not None and meta_encoder != encoder:
        raise ChunkError(f"{path}: encoder {meta_encoder!r}, the network uses {encoder!r}")
    if planes is not None and c != planes:
        raise ChunkError(f"{path}: {c} planes, the network takes {planes}")
    m = check_arrays(path, n, c, arrays)
    check_values(path, n, arrays)
    arrays.setdefault("ownership_mask", np.ones(m, dtype=bool))  # optional: older chunks lack it
    arrays["meta"] = meta
    return arrays


# ------------------------------------------------------------------ writing

def write_chunk(path: str | os.PathLike, meta: dict[str, Any], arrays: dict[str, np.ndarray],
                replace: bool = True) -> int:
    """Write one chunk through ``fileio.atomic_path``; returns its positions.

    ``meta`` is ``make_meta``'s; ``arrays`` are checked like a reader checks
    them (ChunkError for a missing, misshapen or unknown array) and cast to
    their fields' dtypes. With ``replace=False`` an existing ``path`` raises
    ``fileio.NameTaken`` and stays as it is.
    """
    missing = [k for k in META_KEYS if k not in meta]
    if missing:
        raise ChunkError(f"{path}: meta lacks {missing}")
    n, c, _ = _check_meta(path, meta)
    unknown = sorted(set(arrays) - set(FIELDS))
    if unknown:
        raise ChunkError(f"{path}: arrays {unknown} are not chunk fields")
    m = check_arrays(path, n, c, arrays)
    data = {k: np.asarray(v).astype(FIELDS[k].dtype, copy=False) for k, v in arrays.items()}
    with atomic_path(path, replace=replace) as tmp:
        with open(tmp, "wb") as f:
            np.savez_compressed(f, meta=np.array(json.dumps(meta)), **data)
    return m


def write_new_chunk(folder: str | os.PathLike, generation: int, tag: str, serial: int, meta: dict[str, Any],
                    arrays: dict[str, np.ndarray]) -> tuple[Path, int]:
    """Write a chunk under the first free name ``chunk_name(generation, tag,
    s)`` for ``s = serial, serial + 1, ...``; returns ``(path, s)``. Gives up
    with ``fileio.NameTaken`` after ``NAME_TRIES`` taken names."""
    for s in range(serial, serial + NAME_TRIES):
        path = Path(folder) / chunk_name(generation, tag, s)
        try:
            write_chunk(path, meta, arrays, replace=False)
            return path, s
        except NameTaken:
            continue
    raise NameTaken(f"{folder}: {NAME_TRIES} chunk names of tag {tag} are taken")
