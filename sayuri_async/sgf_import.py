"""``sayuri-async import-sgf``: game records (SGF) -> training chunks.

Vocabulary
----------
record      one SGF file, read by ``go.sgf.load_sgf`` (main line only; set-up
            and handicap stones, ``HA``, ``KM`` and the rules name are read
            there). Files are taken one at a time, so memory stays bounded by
            one chunk's games (``--chunk-games``) whatever the input's size.
result      ``RE``: ``B+3.5`` / ``W+12`` (a winner and margin), ``B+R``,
            ``B+T``, ``B+F``, ``B+Resign``... or a bare ``B+`` (a winner, no
            margin), ``0``, ``Draw``, ``Jigo`` (a draw). Anything else
            (absent, ``Void``, ``?``) is no result and the game is skipped.
position    every move of the main line gives one row: the planes of the
            position before it (the encoder of the training config), the
            played move as the policy target (one-hot, ``full_search`` true),
            the opponent's reply as ``next_action``, and the game's outcome
            for the side to move as the value (``wdl``) and score targets.
score       the margin of ``RE`` (black's view) when it has one; otherwise
            the self-play convention for a resigned game: the Tromp-Taylor
            count of the last position, with the winner's sign, at least 0.5.
ownership   the Tromp-Taylor owners of the last position, kept only where
            that board "allows it": its count equals the ``RE`` margin (so no
            dead stone is left on it and the players scored it as we count
            it). Otherwise the game's rows get ``ownership_mask`` false and
            training leaves their ownership out (docs/data-format.md).
skip        a game that is not imported, counted by reason: ``unreadable``
            (bad SGF), ``illegal move``, ``board size`` (not the wanted
            size), ``no result``, ``no moves``, ``out of turn`` (a side
            moving twice: its planes would show the wrong side to move).
output      ``<out>/data/chunk-000000-sgf-<run stamp>-<serial>.npz`` through
            ``selfplay.writer.ChunkWriter`` (atomic, never over a file), so
            ``train --data <out>`` and the loop read them as self-play data.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .encoders import DEFAULT_ENCODER, get_encoder
from .fileio import run_stamp
from .go import board as B
from .go.game import Game
from .go.scoring import ownership
from .go.sgf import SgfError, load_sgf, set_up_position
from .selfplay.game import GameRecord
from .selfplay.writer import ChunkWriter
from .configfile import between, from_options
from .usererror import ArgumentParser, RunFailure, UserError, answered, input_file, output_folder

__all__ = ["ImportReport", "SgfResult", "import_sgf", "main", "parse_result", "record_from_game", "sgf_files"]

_RESULT = re.compile(r"^([BW])\+(.*)$")
_DRAWS = {"0", "draw", "jigo", "d"}


@dataclass(frozen=True)
class SgfResult:
    winner: int  # B.BLACK, B.WHITE, or 0 for a draw
    margin: float | None  # points, when RE gives them (0 for a draw)


def parse_result(text: str) -> SgfResult | None:
    """The ``RE`` value as winner and margin; None when it is no result."""
    t = text.strip()
    if t.lower() in _DRAWS:
        return SgfResult(0, 0.0)
    m = _RESULT.match(t.upper())
    if m is None:
        return None
    winner = B.BLACK if m.group(1) == "B" else B.WHITE
    rest = m.group(2).strip()
    try:
        margin = float(rest)
    except ValueError:
        return SgfResult(winner, None)  # R, Resign, T, Time, F, Forfeit, or nothing
    if not np.isfinite(margin) or margin <= 0:
        return None
    return SgfResult(winner, margin)


def record_from_game(game: Game, result: SgfResult, encoder: str) -> GameRecord:
    """The training rows of a loaded game (see the vocabulary); ValueError
    ``out of turn`` when a side moves twice in a row."""
    n = game.size
    enc = get_encoder(encoder)
    start = game.start_record()
    w = n + 2
    colour = start["color"][: w * w].reshape(w, w)[1:-1, 1:-1].reshape(-1)
    replay = Game(n, game.komi, rules=game.rules, undo_stack=False)
    black = [int(a) for a in np.flatnonzero(colour == B.BLACK)]
    white = [int(a) for a in np.flatnonzero(colour == B.WHITE)]
    if black or white:
        set_up_position(replay, black, white, int(start["to_move"]))
    elif int(start["to_move"]) != B.BLACK:
        set_up_position(replay, [], [], int(start["to_move"]))
    if game.handicap:  # the encoders' history and the handicap compensation see it
        replay.mark_handicap(list(game.handicap))
    rec = GameRecord(n, float(game.komi))
    planes = enc.alloc(n)
    a_count = n * n + 1
    for who, action in game.moves:
        if who != replay.to_move:
            raise ValueError("out of turn")
        enc.encode_into(replay.arr, planes)
        rec.planes.append(np.packbits(planes.reshape(enc.planes, -1), axis=-1))
        target = np.zeros(a_count, dtype=np.float32)
        target[action] = 1.0
        rec.policy.append(target)
        rec.action.append(int(action))
        rec.to_move.append(int(who))
        rec.full_search.append(True)
        rec.after_resign.append(False)
        rec.root_value.append(0.5)  # no search: no estimate
        replay.play(action)
    counted = replay.score()  # Tromp-Taylor area of the last position, black's view
    sign = {B.BLACK: 1.0, B.WHITE: -1.0, 0: 0.0}[result.winner]
    if result.margin is not None:
        rec.score = sign * result.margin
        rec.ownership_known = abs(counted - rec.score) < 1e-6
    else:
        rec.score = sign * max(abs(counted), 0.5)
        rec.ownership_known = False
    rec.ownership = ownership(replay.rec)
    rec.result = f"{'BW'[result.winner - 1]}+" if result.winner else "0"
    rec.game = replay
    return rec


def sgf_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """The SGF files named, and those under the folders named (recursively,
    sorted); FileNotFoundError for a path that does not exist."""
    for p in map(Path, paths):
        if p.is_dir():
            yield from sorted(f for f in p.rglob("*") if f.suffix.lower() == ".sgf" and f.is_file())
        elif p.is_file():
            yield p
        else:
            raise FileNotFoundError(f"{p}: no such file or folder")


@dataclass
class ImportReport:
    files: int = 0
    games: int = 0
    positions: int = 0
    chunks: int = 0
    ownership_games: int = 0  # games whose ownership target is kept
    skipped: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    def summary(self) -> dict:
        return {"files": self.files, "games": self.games, "positions": self.positions, "chunks": self.chunks,
                "ownership_games": self.ownership_games, "skipped": dict(sorted(self.skipped.items())),
                "seconds": round(self.seconds, 2),
                "games_per_s": round(self.games / self.seconds, 1) if self.seconds > 0 else 0.0}


def import_sgf(paths: Iterable[str | Path], out: str | Path, board_size: int, encoder: str = DEFAULT_ENCODER,
               chunk_games: int = 256, default_komi: float = 7.5, on_file=None) -> ImportReport:
    """Import every game of ``paths`` of size ``board_size`` into chunks
    under ``<out>/data``; ``on_file(path, skip_reason_or_None)`` after each."""
    enc = get_encoder(encoder)
    writer = ChunkWriter(out, enc.name, enc.planes, chunk_games, tag=f"sgf-{run_stamp()}", generator="sgf-import",
                         write_sgf=False)
    report = ImportReport()
    t0 = time.monotonic()
    try:
        for path in sgf_files(paths):
            report.files += 1
            why = _import_one(path, writer, board_size, enc.name, default_komi, report)
            if why is not None:
                report.skipped[why] += 1
            if on_file is not None:
                on_file(path, why)
    finally:
        writer.close()
        report.seconds = time.monotonic() - t0
    report.chunks = writer.chunks_written
    return report


def _import_one(path: Path, writer: ChunkWriter, board_size: int, encoder: str, default_komi: float,
                report: ImportReport) -> str | None:
    """Add one file's game to the writer; the skip reason, or None."""
    try:
        data = path.read_bytes()
    except OSError:
        return "unreadable"
    try:
        game, info = load_sgf(data, source=str(path), default_komi=default_komi)
    except SgfError as e:
        text = str(e)
        if "illegal move" in text:
            return "illegal move"
        if "board size" in text and f"{board_size}x{board_size}" not in text:
            return "board size"
        return "unreadable"
    if game.size != board_size:
        return "board size"
    result = parse_result(info.result)
    if result is None:
        return "no result"
    if not game.moves:
        return "no moves"
    try:
        rec = record_from_game(game, result, encoder)
    except ValueError:
        return "out of turn"
    writer.add(rec)
    report.games += 1
    report.positions += len(rec)
    report.ownership_games += rec.ownership_known
    return None


@dataclass
class ImportOptions:
    """The numbers of the command line, range-checked as every setting is
    (``configfile``): an error names the option."""
    board: int = 9
    chunk_games: int = 256
    komi: float = 7.5

    def __post_init__(self) -> None:
        between(self, B.MIN_N, B.MAX_N, "board")
        between(self, 1, 1_000_000, "chunk_games")
        between(self, -B.MAX_N * B.MAX_N, B.MAX_N * B.MAX_N, "komi")


class SgfImportFailure(RunFailure):
    """Writing the chunks failed during the run (exit status 1)."""


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="sayuri-async import-sgf",
                       description="Turn SGF game records into training chunks (supervised bootstrap).")
    p.add_argument("paths", nargs="+", help="SGF files, or folders searched recursively for *.sgf")
    p.add_argument("-o", "--out", required=True, help="output folder: chunks go to OUT/data/")
    p.add_argument("--config", help="training TOML: its [data] board_size and [model] encoder are used")
    p.add_argument("--board", type=int, help="board size to import (default: the config's, else 9)")
    p.add_argument("--encoder", help=f"input encoder (default: the config's, else {DEFAULT_ENCODER})")
    p.add_argument("--chunk-games", type=int, default=256, help="games per chunk (default 256)")
    p.add_argument("--komi", type=float, default=7.5, help="komi of records without KM (default 7.5)")
    p.add_argument("--verbose", action="store_true", help="one line per skipped file")
    return p


@answered("import-sgf")
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    prog = "sayuri-async import-sgf"
    board, encoder = 9, DEFAULT_ENCODER
    if args.config:
        from .train.config import load_config

        input_file(args.config, "--config", "config file")
        cfg = load_config(args.config)  # a ConfigError is the policy's one line
        board, encoder = cfg.data.board_size, str(cfg.model.get("encoder", DEFAULT_ENCODER))
    board = args.board if args.board is not None else board
    encoder = args.encoder or encoder
    if not B.MIN_N <= board <= B.MAX_N:
        raise UserError(f"--board {board}: outside {B.MIN_N}..{B.MAX_N}")
    from_options(ImportOptions, {"board": board, "chunk_games": args.chunk_games, "komi": args.komi})
    try:
        get_encoder(encoder)
    except ValueError as e:
        raise UserError(f"--encoder: {e}") from None
    for p in map(Path, args.paths):
        if not p.exists():
            raise UserError(f"{p}: no such file or folder")
    out = Path(args.out)
    output_folder(out, "-o", inputs=[*args.paths, args.config])
    output_folder(out / "data", "-o", inputs=args.paths)  # the chunks' folder must not be an input either

    def on_file(path: Path, why: str | None) -> None:
        if why is not None and args.verbose:
            print(f"skipped {path}: {why}", file=sys.stderr)

    try:
        report = import_sgf(args.paths, out, board, encoder, args.chunk_games, args.komi, on_file)
    except OSError as e:
        raise SgfImportFailure(str(e)) from None
    s = report.summary()
    skipped = ", ".join(f"{k} {v}" for k, v in s["skipped"].items()) or "none"
    print(f"{prog}: {s['games']} games, {s['positions']} positions in {s['chunks']} chunks under {out / 'data'} "
          f"from {s['files']} files ({s['ownership_games']} with ownership); skipped: {skipped}; "
          f"{s['seconds']} s, {s['games_per_s']} games/s")
    print(json.dumps(s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
