#!/usr/bin/env python3
"""A fixed piece of self-play work, for instruction counting.

``bench_selfplay.py`` times the engine against the clock, which a busy or
drifting machine blurs. This script instead plays a fixed number of 9x9 or
19x19 games with the random backend and a fixed seed, and prints the number
of search requests it made. Run it under ``valgrind --tool=callgrind`` twice
with different ``--games`` and divide the difference in instructions by the
difference in requests: instructions per request, independent of load:

    valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.%p \\
        .venv/bin/python tools/count_selfplay.py --games 4
"""
from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sayuri_async.search.mcts import SearchConfig  # noqa: E402
from sayuri_async.selfplay.config import SelfplayConfig  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--board", type=int, default=9)
    ap.add_argument("--games", type=int, default=4)
    ap.add_argument("--parallel-games", type=int, default=4)
    ap.add_argument("--playouts", type=int, default=100)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--inline", action="store_true", help="run the random backend on the event loop")
    a = ap.parse_args()

    from sayuri_async.selfplay.engine import Engine
    from sayuri_async.selfplay.runner import make_engine_backend

    with tempfile.TemporaryDirectory() as out:
        cfg = SelfplayConfig(
            board_sizes=[a.board], num_games=a.games, parallel_games=a.parallel_games, batch_size=a.batch_size,
            playouts=a.playouts, reduce_playouts=0, reduce_playouts_prob=0.0, random_moves_factor=0.0,
            resign_threshold=0.0, chunk_games=10_000, write_sgf=False, out=out, seed=1, device="cpu",
            inline_cheap_backend=a.inline, search=SearchConfig(node_capacity=0),
        )
        backend = make_engine_backend(cfg, "cpu")

        async def run() -> dict:
            engine = Engine(cfg, backend)
            await engine.run()
            engine.close()
            return engine.status()["counters"]

        c = asyncio.run(run())
        backend.close()
    print(f"games {c['games']} moves {c['moves']} requests {c['requests']} evals {c['evals']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
