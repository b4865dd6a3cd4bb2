"""Benchmark of the ladder reader (``sayuri_async/encoders/ladder.py``), single core.

Vocabulary
----------
position    a 19x19 board after a random number of uniformly random legal
            moves (simple ko, no suicide) from the empty board; random play
            leaves many strings short of liberties, so many ladder read-outs.
            Only positions where ``ladder_map`` marks at least one point are
            kept (``--all`` keeps every position).
ladder_map  one call of ``ladder.ladder_map`` on a position, timed (CPU
            time of the process, best of 5) inside compiled code (a Python call with a record argument would add
            about 5 us of its own).
encode      one call of the whole ``sayuri-v3`` encoder, ladders included,
            on the same positions.
child       a position 1-4 random moves on from one of them, as the leaves of
            a search are: ``encode_child_us`` encodes it from scratch,
            ``reuse_child_us`` as the search does (``encode_sayuri_v3_reuse``:
            ladder read-outs from its position's cache, made once per
            position by ``ladder_map_keep`` before the timing, as a search
            makes it once for its root, and from the memo of the earlier
            children of the same pass).

Prints a table and, as its last line, a JSON object with the figures
(``ladder_map_us``, ``encode_us``, ``encode_child_us``, ``reuse_child_us``,
``positions``, ``marked_points``).
Usage: ``python tools/bench_ladder.py [--positions K] [--seed S] [--reps R]``.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
from numba import njit

from sayuri_async.go import board as B
from sayuri_async.encoders.sayuri_v3 import SCRATCH_DTYPE, PLANES, encode_sayuri_v3, encode_sayuri_v3_reuse
from sayuri_async.encoders.ladder import ladder_map, ladder_map_keep


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


def children(recs: np.ndarray, per: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``per`` positions 1-4 random moves on from each record, and the
    index of the record each comes from."""
    rng = np.random.default_rng(seed)
    out = np.zeros(len(recs) * per, dtype=B.BOARD_DTYPE)
    src = np.repeat(np.arange(len(recs)), per)
    mask = np.zeros(recs[0]["n"] ** 2 + 1, np.uint8)
    for i, j in enumerate(src):
        arr = recs[j:j + 1].copy()
        for _ in range(int(rng.integers(1, 5))):
            B.legal_actions(arr[0], mask)
            B.play(arr[0], B.action_to_point(int(arr[0]["n"]), int(rng.choice(np.flatnonzero(mask)))))
        out[i] = arr[0]
    return out, src


@njit
def reuse_loop(recs, kids, src, out, leaves, reps: int, reuse: bool) -> int:
    """Encode every child, with its position's encoder scratch (its ladder
    cache kept once per position, first pass) or from scratch."""
    n = recs[0].n
    lad = np.empty(n * n, np.int8)
    idle = np.empty(n * n, np.uint8)
    s = 0
    for r in range(reps):
        for j in range(leaves.shape[0]):
            leaves[j].ladders.memo_n = 0  # each pass starts without the memo of the one before
        for i in range(kids.shape[0]):
            j = src[i]
            if reuse:
                if leaves[j].ladders.ready == 0:
                    ladder_map_keep(recs[j], lad, leaves[j].ladders)
                s += encode_sayuri_v3_reuse(kids[i], out, leaves[j], idle)
            else:
                encode_sayuri_v3(kids[i], out)
            s += out[0, 0, 0]
    return s


def best_us(fn, calls: int, tries: int = 5) -> float:
    """The best of ``tries`` timings of ``fn``, in CPU time (the process's:
    a loaded machine inflates wall time far more) per call."""
    best = float("inf")
    for _ in range(tries):
        t0 = time.process_time()
        fn()
        best = min(best, (time.process_time() - t0) / calls * 1e6)
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
    kids, src = children(recs, 4, args.seed + 1)
    leaves = np.zeros(len(recs), SCRATCH_DTYPE)
    reuse_loop(recs, kids[:1], src[:1], out, np.zeros(1, SCRATCH_DTYPE), 1, True)
    reuse_loop(recs, kids[:1], src[:1], out, leaves, 1, False)
    reuse_loop(recs, kids, src, out, leaves, 1, True)  # the leaves and memos, once (as a search's root)
    kid_calls = len(kids) * args.reps
    result = {
        "positions": len(recs),
        "marked_points": marked,
        "ladder_map_us": round(best_us(lambda: ladder_loop(recs, args.reps), calls), 2),
        "encode_us": round(best_us(lambda: encode_loop(recs, out, args.reps), calls), 2),
        "encode_child_us": round(best_us(lambda: reuse_loop(recs, kids, src, out, leaves, args.reps, False),
                                         kid_calls), 2),
        "reuse_child_us": round(best_us(lambda: reuse_loop(recs, kids, src, out, leaves, args.reps, True),
                                        kid_calls), 2),
    }
    print(f"{len(recs)} 19x19 random positions with ladders ({marked} marked points)")
    print(f"ladder_map        {result['ladder_map_us']:8.2f} us/position")
    print(f"sayuri-v3 encode  {result['encode_us']:8.2f} us/position")
    print(f"children (1-4 moves on): encode {result['encode_child_us']:.2f} us, "
          f"with the position's cache {result['reuse_child_us']:.2f} us")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
