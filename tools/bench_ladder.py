"""Benchmark of the ladder reader (``sayuri_async/sayuri/ladder.py``), single core.

Vocabulary
----------
position    a 19x19 board after a random number of uniformly random legal
            moves (simple ko, no suicide) from the empty board; random play
            leaves many strings short of liberties, so many ladder read-outs.
            Only positions where ``ladder_map`` marks at least one point are
            kept (``--all`` keeps every position).
ladder_map  one call of ``ladder.ladder_map`` on a position, timed inside
            compiled code (a Python call with a record argument would add
            about 5 us of its own).
encode      one call of the whole ``sayuri-v3`` encoder, ladders included,
            on the same positions.

Prints a table and, as its last line, a JSON object with the figures
(``ladder_map_us``, ``encode_us``, ``positions``, ``marked_points``).
Usage: ``python tools/bench_ladder.py [--positions K] [--seed S] [--reps R]``.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
from numba import njit

from sayuri_async.go import board as B
from sayuri_async.sayuri.encoder import PLANES, encode_sayuri_v3
from sayuri_async.sayuri.ladder import ladder_map


def random_positions(n: int, count: int, seed: int, keep_all: bool = False) -> np.ndarray:
    """``count`` board records (an array of ``BOARD_DTYPE``) from random
    games, each cut after between ``n*n/4`` and ``n*n`` moves."""
    rng = np.random.default_rng(seed)
    out = np.zeros(count, dtype=B.BOARD_DTYPE)
    lad = np.empty(n * n, np.int8)
    k = 0
    while k < count:
        arr = B.random_board(n, int(rng.integers(n * n // 4, n * n)), rng)
        rec = arr[0]
        ladder_map(rec, lad)
        if keep_all or lad.any():
            out[k] = arr[0]
            k += 1
    return out


@njit  # not cached: numba would not notice an edit of ladder.py (see numba_cache)
def ladder_loop(recs, reps: int) -> int:
    """``ladder_map`` on every record, ``reps`` times; returns a checksum."""
    n = recs[0].n
    out = np.empty(n * n, np.int8)
    s = 0
    for _ in range(reps):
        for i in range(recs.shape[0]):
            ladder_map(recs[i], out)
            s += out[i % (n * n)]
    return s


@njit
def encode_loop(recs, out, reps: int) -> int:
    s = 0
    for _ in range(reps):
        for i in range(recs.shape[0]):
            encode_sayuri_v3(recs[i], out)
            s += out[0, 0, 0]
    return s


def best_us(fn, calls: int, tries: int = 5) -> float:
    best = float("inf")
    for _ in range(tries):
        t0 = time.perf_counter()
        fn()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--positions", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reps", type=int, default=5, help="passes over the positions per timing")
    ap.add_argument("--all", action="store_true", help="keep positions without ladders too")
    args = ap.parse_args()
    n = 19
    recs = random_positions(n, args.positions, args.seed, args.all)
    lad = np.empty(n * n, np.int8)
    marked = 0
    for i in range(len(recs)):
        ladder_map(recs[i], lad)
        marked += int(np.count_nonzero(lad))
    out = np.empty((PLANES, n, n), np.uint8)
    ladder_loop(recs, 1)
    encode_loop(recs, out, 1)
    calls = len(recs) * args.reps
    result = {
        "positions": len(recs),
        "marked_points": marked,
        "ladder_map_us": round(best_us(lambda: ladder_loop(recs, args.reps), calls), 2),
        "encode_us": round(best_us(lambda: encode_loop(recs, out, args.reps), calls), 2),
    }
    print(f"{len(recs)} 19x19 random positions with ladders ({marked} marked points)")
    print(f"ladder_map        {result['ladder_map_us']:8.2f} us/position")
    print(f"sayuri-v3 encode  {result['encode_us']:8.2f} us/position")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
