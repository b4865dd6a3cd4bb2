"""GNU Go self-play games as SGF: the supervised bootstrap's raw material.

Vocabulary
----------
game        one GNU Go process plays both colours through GTP (``genmove b``,
            ``genmove w``, ...) on a board cleared for each game, from an
            opening of ``--random-moves`` random points (drawn from the
            third line inwards, checked legal on our own ``Game``), until two
            passes or a resignation. GNU Go runs with ``--chinese-rules
            --capture-all-dead``, so it removes dead stones before passing
            and the final board counts under Tromp-Taylor as GNU Go scores it.
level       each game draws its GNU Go level uniformly from ``--levels``
            (set with GTP ``level``); the SGF names it in ``PB``/``PW``.
result      GNU Go's own ``final_score`` (its dead-stone judgement) after two
            passes, ``B+R``/``W+R`` after a resignation.
resumable   game k of seed s is ``<out>/gnugo-s<seed>-<k>.sgf``; a restart
            skips the files already there (each written atomically).

Usage: ``python tools/gnugo_games.py --out runs/gnugo9/sgf --games 2000``.
Prints one progress line per game; the last line is JSON (games, moves,
seconds, games per hour).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from sayuri_async.go import board as B
from sayuri_async.go.coords import action_to_vertex, vertex_to_action
from sayuri_async.go.game import Game
from sayuri_async.go.sgf import SgfInfo, save_sgf_file
from sayuri_async.rating.gtpclient import GtpProcess

GNUGO = "/usr/games/gnugo"


def opening_actions(rng: np.random.Generator, size: int, moves: int) -> list[int]:
    """``moves`` distinct random points at least two lines in from the edge."""
    lo, hi = (2, size - 3) if size >= 7 else (0, size - 1)
    points = [y * size + x for y in range(lo, hi + 1) for x in range(lo, hi + 1)]
    return [int(a) for a in rng.choice(points, size=min(moves, len(points)), replace=False)]


def play_one(proc: GtpProcess, rng: np.random.Generator, size: int, komi: float, level: int,
             random_moves: int) -> tuple[Game, str]:
    proc.send(f"boardsize {size}")
    proc.send("clear_board")
    proc.send(f"komi {komi:g}")
    proc.send(f"level {level}")
    game = Game(size, komi)
    for a in opening_actions(rng, size, random_moves):
        color = "b" if game.to_move == B.BLACK else "w"
        proc.send(f"play {color} {action_to_vertex(a, size)}")
        game.play(a)
    while not game.is_over() and len(game.moves) < 3 * size * size:
        color = game.to_move
        reply = proc.send(f"genmove {'b' if color == B.BLACK else 'w'}", timeout=600.0).lower()
        if reply == "resign":
            return game, f"{'W' if color == B.BLACK else 'B'}+R"
        game.play(vertex_to_action(reply, size))
    return game, proc.send("final_score")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="folder for the SGF files")
    p.add_argument("--games", type=int, default=100, help="games wanted in the folder for this seed")
    p.add_argument("--size", type=int, default=9)
    p.add_argument("--komi", type=float, default=7.5)
    p.add_argument("--levels", default="5,6,7,8", help="comma-separated GNU Go levels, one drawn per game")
    p.add_argument("--random-moves", default="2,4", help="range lo,hi of random opening moves per game")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--gnugo", default=GNUGO)
    args = p.parse_args(argv)
    if shutil.which(args.gnugo) is None:
        print(f"gnugo_games: {args.gnugo!r} is not an executable (apt-get install gnugo)", file=sys.stderr)
        return 2
    levels = [int(x) for x in args.levels.split(",")]
    lo, hi = (int(x) for x in args.random_moves.split(","))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    proc = GtpProcess([args.gnugo, "--mode", "gtp", "--chinese-rules", "--capture-all-dead",
                       "--seed", str(args.seed)], name="gnugo")
    t0, played, moves = time.monotonic(), 0, 0
    try:
        for k in range(args.games):
            rng = np.random.default_rng([args.seed, k])  # game k's draws do not depend on a restart
            path = out / f"gnugo-s{args.seed}-{k:06d}.sgf"
            if path.exists():
                continue
            level = int(rng.choice(levels))
            game, result = play_one(proc, rng, args.size, args.komi, level, int(rng.integers(lo, hi + 1)))
            name = f"GNU Go level {level}"
            save_sgf_file(path, game, SgfInfo(black=name, white=name, result=result), result=result)
            played += 1
            moves += len(game.moves)
            dt = time.monotonic() - t0
            print(f"game {k} level {level} moves {len(game.moves)} {result}  "
                  f"({played} in {dt:.0f} s, {3600 * played / dt:.0f}/h)", flush=True)
    finally:
        proc.close()
    dt = time.monotonic() - t0
    print(json.dumps({"games": played, "moves": moves, "seconds": round(dt, 1),
                      "games_per_hour": round(3600 * played / dt, 1) if dt > 0 else 0.0}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
