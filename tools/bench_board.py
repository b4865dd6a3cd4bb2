"""Benchmark of the board core (``sayuri_async/go/board.py``), single core.

Vocabulary
----------
playout     a game from the empty board to its end played with uniformly
            random legal moves (simple ko and no suicide; superko is not
            checked), never filling one's own eye (so games end); a side
            without such a move passes, two passes end the game. The whole
            loop is one numba function calling ``board.play`` and
            ``board.is_simple_legal``.
copy        duplicating one board record (what ``Game`` does per move for
            undo): a byte copy from Python (``Game``'s way), numpy's
            field-by-field ``arr.copy()`` for comparison, and a word copy
            inside compiled code.
play+undo   play one random legal move and restore the record from a copy
            (the search's make/unmake), inside compiled code and from Python.

Prints a table and, as its last line, a JSON object with the figures
(``moves_per_s_9x9``, ``moves_per_s_19x19``, ``copy_us``, ``play_undo_us``,
...). Usage: ``python tools/bench_board.py [--seconds S]``.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
from numba import njit

from sayuri_async.go import board as B


@njit(cache=True)
def _own_eye(rec, p: int, c: int) -> bool:
    w = np.int64(rec.w)
    for d in range(4):
        q = p + (-1, 1, -w, w)[d]
        cq = rec.color[q]
        if cq != c and cq != B.BORDER:
            return False
    bad = 0
    edge = 0
    for d in range(4):
        q = p + (-w - 1, -w + 1, w - 1, w + 1)[d]
        cq = rec.color[q]
        if cq == B.BORDER:
            edge = 1
        elif cq == 3 - c:
            bad += 1
    return bad < (1 if edge else 2)


@njit(cache=True)
def random_playout(rec, max_moves: int) -> int:
    """Play ``rec`` to the end with random legal non-eye-filling moves;
    returns the moves played (passes included)."""
    n = rec.n
    w = rec.w
    cand = np.empty(n * n, dtype=np.int64)
    moves = 0
    while rec.passes < 2 and moves < max_moves:
        k = 0
        for y in range(n):
            for x in range(n):
                p = (y + 1) * w + x + 1
                if rec.color[p] == B.EMPTY:
                    cand[k] = p
                    k += 1
        chosen = B.PASS
        c = rec.to_move
        while k > 0:
            i = np.random.randint(k)
            p = cand[i]
            if B.is_simple_legal(rec, p) and not _own_eye(rec, p, c):
                chosen = p
                break
            k -= 1
            cand[i] = cand[k]
        B.play(rec, chosen)
        moves += 1
    return moves


@njit(cache=True)
def run_playouts(arr, games: int, seed: int) -> int:
    np.random.seed(seed)
    rec = arr[0]
    n = rec.n
    komi = rec.komi
    total = 0
    for _ in range(games):
        B.rec_init(rec, n, komi)
        total += random_playout(rec, 3 * n * n)
    return total


@njit(cache=True)
def copy_words(src, dst) -> None:
    """Copy a record viewed as uint64 words (an explicit loop: numba's
    slice assignment is several times slower here)."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


@njit(cache=True)
def copy_loop(src, dst, reps: int) -> int:
    """Copy the record words ``reps`` times; returns a checksum word."""
    s = np.uint64(0)
    for _ in range(reps):
        copy_words(src, dst)
        s += dst[reps % dst.shape[0]]
    return s


@njit(cache=True)
def play_undo_loop(arr, raw, backup, points, reps: int) -> int:
    """``reps`` times: save the record, play a legal point, restore."""
    rec = arr[0]
    done = 0
    k = points.shape[0]
    for i in range(reps):
        p = points[i % k]
        if not B.is_simple_legal(rec, p):
            continue
        copy_words(raw, backup)
        B.play(rec, p)
        copy_words(backup, raw)
        done += 1
    return done


def midgame(n: int, moves: int, seed: int) -> np.ndarray:
    """A record after ``moves`` random moves (a typical search position)."""
    np.random.seed(seed)
    return B.random_board(n, moves, np.random.default_rng(seed))


def bench_playouts(n: int, seconds: float) -> tuple[float, float]:
    """(moves per second, mean moves per game)."""
    arr = B.new_board(n)
    run_playouts(arr, 2, 0)  # compile or load the cache
    games, moves, elapsed, seed = 0, 0, 0.0, 1
    batch = 50 if n <= 9 else 10
    while elapsed < seconds:
        t0 = time.perf_counter()
        moves += run_playouts(arr, batch, seed)
        elapsed += time.perf_counter() - t0
        games += batch
        seed += 1
    return moves / elapsed, moves / games


def timed_us(fn, reps: int) -> float:
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        fn()
        best = min(best, (time.perf_counter() - t0) / reps * 1e6)
    return best


def bench_copy_and_undo(n: int) -> dict[str, float]:
    arr = midgame(n, n * n // 3, 7)
    assert B.BOARD_DTYPE.itemsize % 8 == 0
    raw = arr.view(np.uint64)
    dst = np.empty_like(raw)
    reps = 20000
    copy_loop(raw, dst, 10)
    out: dict[str, float] = {}
    out["copy_us"] = timed_us(lambda: [arr.view(np.uint8).copy() for _ in range(reps)], reps)
    out["copy_us_numpy_structured"] = timed_us(lambda: [arr.copy() for _ in range(reps)], reps)
    out["copy_us_njit"] = timed_us(lambda: copy_loop(raw, dst, reps), reps)
    rec = arr[0]
    points = np.array(
        [p for p in (B.action_to_point(n, a) for a in range(n * n)) if B.is_simple_legal(rec, p)],
        dtype=np.int64,
    )
    backup = np.empty_like(raw)
    play_undo_loop(arr, raw, backup, points, 10)
    before = raw.copy()
    done = play_undo_loop(arr, raw, backup, points, reps)
    assert done == reps and np.array_equal(raw, before)
    out["play_undo_us"] = timed_us(lambda: play_undo_loop(arr, raw, backup, points, reps), reps)

    def python_play_undo() -> None:
        for i in range(reps // 10):
            saved = arr.view(np.uint8).copy()
            B.play(arr[0], int(points[i % len(points)]))
            arr.view(np.uint8)[:] = saved

    out["play_undo_us_python"] = timed_us(python_play_undo, reps // 10)
    assert np.array_equal(raw, before)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="time per board size for playouts")
    args = ap.parse_args()
    result: dict[str, float] = {}
    for n in (9, 19):
        mps, length = bench_playouts(n, args.seconds)
        result[f"moves_per_s_{n}x{n}"] = round(mps)
        result[f"moves_per_game_{n}x{n}"] = round(length, 1)
        print(f"{n}x{n} random playouts: {mps:,.0f} moves/s ({mps / length:,.0f} games/s, {length:.1f} moves/game)")
    costs = bench_copy_and_undo(19)
    for key, label in (
        ("copy_us", "record copy from Python (byte view, as Game)"),
        ("copy_us_numpy_structured", "record copy, numpy structured arr.copy()"),
        ("copy_us_njit", "record copy inside numba"),
        ("play_undo_us", "play + undo (restore from copy) inside numba"),
        ("play_undo_us_python", "play + undo from Python"),
    ):
        result[key] = round(costs[key], 3)
        print(f"{label:48s} {costs[key]:8.3f} us   (19x19 record, {B.BOARD_DTYPE.itemsize} bytes)")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
