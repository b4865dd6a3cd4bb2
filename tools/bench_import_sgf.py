"""Benchmark of ``sayuri-async import-sgf``: games and positions per second.

Imports the SGF files given (default: a synthetic set of ``--games`` 9x9
games, random legal moves to about 60 moves, counted results, written to a
temporary folder first) into a temporary output folder and prints the
importer's report; the last line is JSON with ``games_per_s``.

Usage: ``python tools/bench_import_sgf.py [SGF DIR|FILES ...] [--games 300]``
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from sayuri_async.go.game import Game
from sayuri_async.go.sgf import SgfInfo, save_sgf_file
from sayuri_async.sgf_import import import_sgf


def synthetic_games(folder: Path, games: int, size: int = 9, moves: int = 60, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    for k in range(games):
        g = Game(size, 7.5)
        while len(g.moves) < moves and not g.is_over():
            legal = np.flatnonzero(g.legal_actions()[:-1])
            g.play(int(rng.choice(legal)) if len(legal) else g.pass_action)
        save_sgf_file(folder / f"g{k:05d}.sgf", g, SgfInfo(result=g.result()), result=g.result())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="*", help="SGF files or folders (default: synthetic games)")
    p.add_argument("--games", type=int, default=300, help="synthetic games when no path is given")
    p.add_argument("--board", type=int, default=9)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        paths = args.paths
        if not paths:
            folder = Path(tmp) / "sgf"
            folder.mkdir()
            synthetic_games(folder, args.games, args.board)
            paths = [str(folder)]
        warm = Path(tmp) / "warm"  # one small game first: the compiled encoder loads outside the timing
        warm.mkdir()
        synthetic_games(warm, 1, args.board, moves=4)
        import_sgf([warm], Path(tmp) / "warm-out", args.board)
        report = import_sgf(paths, Path(tmp) / "out", args.board)
    s = report.summary()
    s["positions_per_s"] = round(report.positions / report.seconds, 1) if report.seconds > 0 else 0.0
    print(f"import-sgf: {s['games']} games ({s['positions']} positions) in {s['seconds']} s: "
          f"{s['games_per_s']} games/s, {s['positions_per_s']} positions/s; skipped {s['skipped'] or 'none'}")
    print(json.dumps(s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
