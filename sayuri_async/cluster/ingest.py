"""Finished chunk files into the workspace, from every node: one named, detached actor.

Vocabulary
----------
Ingest      runs on the trainer's machine (the head). ``put(kind, name,
            data)`` writes ``data`` to ``<workspace>/<kind>/<name>`` through
            a temporary name and a rename that never replaces a file
            (``fileio.write_bytes_atomic(replace=False)``): a name that
            exists is left as it is. So a put retried after a lost answer,
            or a spool uploaded again after a restart, writes nothing twice,
            and no reader sees half a file.
kind        ``data`` (chunks, what the trainer reads) or ``sgf`` (game
            records).
answer      ``WRITTEN`` or ``EXISTS``; either one acknowledges the file, and
            the engine deletes its spool copy only then.
counts      ``stats()``: an ``IngestStats`` of files written, duplicates
            refused, bytes written, and the chunks written with their games
            (each chunk's ``games``, read from its header once it is on
            disk): the games this run put into the workspace.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..chunkfile import ChunkError, peek_chunk
from ..fileio import NameTaken, clean_stale_temps, write_bytes_atomic

INGEST_NAME = "ingest"
KINDS = ("data", "sgf")
WRITTEN, EXISTS = "written", "exists"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")


@dataclass(frozen=True)
class IngestStats:
    written: int = 0
    duplicates: int = 0
    bytes: int = 0
    chunks: int = 0
    games: int = 0  # in the chunks written


class Ingest:
    """A plain class: the fleet makes it a Ray actor (``ray.remote``)."""

    def __init__(self, workspace: str) -> None:
        self.workspace = Path(workspace)
        for kind in KINDS:
            (self.workspace / kind).mkdir(parents=True, exist_ok=True)
            clean_stale_temps(self.workspace / kind)
        self.written = 0
        self.duplicates = 0
        self.bytes_written = 0
        self.chunks = 0
        self.games = 0

    def put(self, kind: str, name: str, data: bytes) -> str:
        if kind not in KINDS or not _NAME.match(name) or name.endswith(".tmp"):
            raise ValueError(f"refused {kind}/{name}: not a chunk or game file name")
        target = self.workspace / kind / name
        if target.exists():
            self.duplicates += 1
            return EXISTS
        try:
            write_bytes_atomic(target, data, replace=False)
        except NameTaken:
            self.duplicates += 1
            return EXISTS
        self.written += 1
        self.bytes_written += len(data)
        if kind == "data":
            self._count_games(target)
        return WRITTEN

    def _count_games(self, path: Path) -> None:
        try:
            games = int(peek_chunk(path)[1].get("games", 0))
        except (ChunkError, TypeError, ValueError):  # not a chunk: the trainer skips it with a warning
            return
        self.chunks += 1
        self.games += games

    def stats(self) -> IngestStats:
        return IngestStats(self.written, self.duplicates, self.bytes_written, self.chunks, self.games)
