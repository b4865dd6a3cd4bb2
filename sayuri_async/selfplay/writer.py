"""Training-data chunks and SGF files from finished games.

Vocabulary
----------
ChunkWriter  collects GameRecords per board size and writes a chunk (the
             ``.npz`` schema of ``docs/data-format.md``) every ``chunk_games``
             games and on ``close()``; every file goes through a temporary
             name (``fileio.atomic_path``) and never replaces an existing
             file: a name already taken moves on to the next serial.
chunk name   ``chunk-<generation>-<tag>-<serial>.npz`` (``chunkfile.chunk_name``):
             the generation of the network that played (six digits; the RL
             loop's counter, 0 outside it), then ``tag`` to tell processes and runs apart (the
             runner makes it ``<run stamp>-p<i>``, see ``fileio.run_stamp``),
             then a serial from 1. SGF files are
             ``game-<generation>-<tag>-<game serial>.sgf``.
provenance   every chunk's meta names the host that played it (its full
             name) and the networks of its games (``chunkfile``'s
             ``META_PROVENANCE``: ``networks`` and ``game_networks``, from
             ``GameRecord.networks``); an SGF file names the game's first
             network as both players (``PB``, ``PW``) and, in its root
             comment, the host and every network of the game.
written      ``games_written``: the games whose files are all written, those
             of the chunks written and those of no position (an SGF file
             only); the others finished and wait for their chunk to fill
             (``chunk_games``).
format       the chunk format itself (fields, header, checks, reading) is
             ``sayuri_async/chunkfile.py``'s; this module turns GameRecords
             into its arrays (``records_to_arrays``).
"""
from __future__ import annotations

import os
import socket
from pathlib import Path

import numpy as np

from ..chunkfile import make_meta, write_chunk, write_new_chunk, zeros
from ..fileio import NameTaken, clean_stale_temps
from ..go import board as B
from ..go.sgf import SgfInfo, save_sgf_file
from ..sayuri.targets import term_averages
from .game import GameRecord


def records_to_arrays(records: list[GameRecord], planes: int) -> dict[str, np.ndarray]:
    """The per-position arrays of a chunk from finished games of one size."""
    n = records[0].size
    rows = sum(len(r) for r in records)
    names = ("planes", "policy", "action", "wdl", "score", "ownership", "to_move", "komi", "full_search",
             "after_resign", "game", "root_value", "q_avg", "ownership_mask")
    out = {k: zeros(k, rows, n, planes) for k in names}
    out["next_action"] = np.full(rows, -1, dtype=np.int16)  # -1: the game's last position
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


def provenance(records: list[GameRecord]) -> dict:
    """The ``META_PROVENANCE`` keys of a chunk of ``records`` (see the
    vocabulary); none for records that name no network (imports)."""
    if not any(r.networks for r in records):
        return {}
    networks: list = []
    per_game: list[list[int]] = []
    for r in records:
        idx = []
        for net in r.networks:
            if net not in networks:
                networks.append(net)
            idx.append(networks.index(net))
        per_game.append(idx)
    return {"host": socket.gethostname(), "networks": [n.as_dict() for n in networks], "game_networks": per_game}


def sgf_info(rec: GameRecord, generator: str) -> SgfInfo:
    """A game's SGF header: its first network plays both colours; the root
    comment names the host and every network of the game."""
    player = rec.networks[0].label if rec.networks else generator
    nets = ", ".join(n.label for n in rec.networks) or generator
    return SgfInfo(black=player, white=player, result=rec.result,
                   comment=f"self-play on {socket.gethostname()}; networks: {nets}")


def write_records(path: str | os.PathLike, records: list[GameRecord], encoder: str, planes: int, generator: str,
                replace: bool = True) -> int:
    """Write one chunk atomically; returns the number of positions. With
    ``replace=False`` an existing ``path`` raises ``fileio.NameTaken``."""
    arrays = records_to_arrays(records, planes)
    meta = make_meta(encoder, planes, records[0].size, len(records), generator, provenance(records))
    return write_chunk(path, meta, arrays, replace=replace)


def clean_stale_temp(out_dir: str | os.PathLike) -> int:
    """Remove the stale temporaries (``fileio.is_stale_temp``: their writer is
    gone) a killed run left in ``data/`` and ``sgf/``; those of a writer
    still at work stay. Returns how many."""
    return sum(len(clean_stale_temps(Path(out_dir) / sub)) for sub in ("data", "sgf"))


NAME_TRIES = 10_000  # SGF serials tried past taken names before giving up


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
        self.games_written = 0  # see "written"

    def add(self, rec: GameRecord) -> None:
        self._games += 1
        if self.write_sgf and rec.game is not None:
            info = sgf_info(rec, self.generator)
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
            self.games_written += 1
            return
        bucket = self._pending.setdefault(rec.size, [])
        bucket.append(rec)
        if len(bucket) >= self.chunk_games:
            self._write(rec.size)

    def _write(self, size: int) -> None:
        recs = self._pending.pop(size, [])
        if not recs:
            return
        arrays = records_to_arrays(recs, self.planes)
        meta = make_meta(self.encoder, self.planes, size, len(recs), self.generator, provenance(recs))
        _, self._serial = write_new_chunk(self.data_dir, self.generation, self.tag, self._serial + 1, meta, arrays)
        self.positions_written += int(arrays["action"].shape[0])
        self.chunks_written += 1
        self.games_written += len(recs)

    def close(self) -> None:
        """Write what is pending (whole games only)."""
        for size in list(self._pending):
            self._write(size)
