#!/usr/bin/env python3
"""Seconds a move at a playout budget: which budget is "one second a move".

For each of ``--playouts``, the network plays ``--games`` games against
itself through ``sayuri_async.rating.match.run_match`` (one game at a time, the
rating's path: the same search, batcher and random openings as
tools/rate_gnugo.py) and the wall time of its ``genmove``s is divided over
its moves. Run it with ``OMP_NUM_THREADS=1`` (one torch thread is also set
here) so the figure is one core's. The machine's load average is printed
before and after: on a loaded machine the figure is slower than one free
core's.

``--pachi`` times the Pachi that tools/get_pachi.sh built the same way
(Pachi against itself, ``sayuri_async.rating.engines.pachi_command``, one
thread, no pondering) at each of its time settings: ``=N`` is N playouts a
move, a number S is Pachi's own clock (which keeps 2 s of S for network lag).

Vocabulary
----------
seconds_per_move   wall time of the first player's moves over its moves
                   (openings excluded).
playouts_per_s     the budget over seconds_per_move.
one_second         the budget of one second a move, interpolated linearly
                   in playouts_per_s between the measured budgets around it
                   (``pachi_one_second``: Pachi's, from its ``=N`` settings).

The last line is a JSON object.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sayuri_async.rating.match import make_player, run_match  # noqa: E402
from sayuri_async.rating.engines import pachi_command  # noqa: E402
from sayuri_async.rating.referee import GtpPlayer  # noqa: E402


def one_second_budget(points: list[tuple[int, float]]) -> int:
    """The playouts that take one second, from (playouts, seconds a move)
    points: interpolated between the two budgets around 1 s, else scaled
    from the nearest one."""
    pts = sorted(points)
    for (p0, s0), (p1, s1) in zip(pts, pts[1:]):
        if s0 <= 1.0 <= s1:
            if s1 == s0:
                return p0
            return round(p0 + (1.0 - s0) * (p1 - p0) / (s1 - s0))
    p, s = min(pts, key=lambda ps: abs(ps[1] - 1.0))
    return round(p / s)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", default="", help="the network to time (none: only --pachi)")
    ap.add_argument("--playouts", default="400,800,1600", help="comma-separated budgets")
    ap.add_argument("--pachi", default="", help="comma-separated Pachi time settings to time ('=N': N playouts)")
    ap.add_argument("--games", type=int, default=1, help="games per budget")
    ap.add_argument("--board", type=int, default=9)
    ap.add_argument("--komi", type=float, default=7.5)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    budgets = [int(x) for x in a.playouts.split(",")] if a.weights else []
    load0 = os.getloadavg()
    rows = []
    for p in budgets:
        args = argparse.Namespace(device="cpu", batch_size=a.batch_size, playouts=p, gumbel=False, resign=0.0,
                                  opening_moves=0, board=a.board)
        x, y = make_player(a.weights, args), make_player(a.weights, args)
        y.name = x.name + "-b"
        t0 = time.monotonic()
        res = asyncio.run(run_match(x, y, a.games, a.board, a.komi, 1, None, random_opening=2, seed=a.seed))
        wall = time.monotonic() - t0
        # A's moves: B is the same network at the same budget, searched the same way
        moves = res.a_moves
        spm = res.a_seconds / moves if moves else float("nan")
        rows.append({"playouts": p, "games": a.games, "moves": moves, "seconds_per_move": round(spm, 4),
                     "playouts_per_s": round(p / spm, 1), "wall_s": round(wall, 1),
                     "load": [round(v, 2) for v in os.getloadavg()]})
        print(f"{p:5d} playouts: {spm:.3f} s/move, {p / spm:.0f} playouts/s ({moves} moves, load "
              f"{os.getloadavg()[0]:.2f})", flush=True)
    pachi_rows = []
    for t in [x for x in a.pachi.split(",") if x]:
        x, y = GtpPlayer(pachi_command(t)), GtpPlayer(pachi_command(t))
        x.name, y.name = f"pachi-{t}", f"pachi-{t}-b"
        t0 = time.monotonic()
        res = asyncio.run(run_match(x, y, a.games, a.board, a.komi, 1, None, random_opening=2, seed=a.seed))
        spm = res.a_seconds / res.a_moves if res.a_moves else float("nan")
        row = {"pachi": t, "games": a.games, "moves": res.a_moves, "seconds_per_move": round(spm, 4),
               "wall_s": round(time.monotonic() - t0, 1), "load": [round(v, 2) for v in os.getloadavg()]}
        if t.startswith("="):
            row.update(playouts=int(t[1:]), playouts_per_s=round(int(t[1:]) / spm, 1))
        pachi_rows.append(row)
        print(f"Pachi -t {t}: {spm:.3f} s/move ({res.a_moves} moves, load {os.getloadavg()[0]:.2f})", flush=True)
    counted = [(r["playouts"], r["seconds_per_move"]) for r in pachi_rows if "playouts" in r]
    out = {"weights": a.weights, "rows": rows, "pachi_rows": pachi_rows, "load_before": [round(v, 2) for v in load0],
           "load_after": [round(v, 2) for v in os.getloadavg()],
           "one_second": one_second_budget([(r["playouts"], r["seconds_per_move"]) for r in rows]) if rows else None,
           "pachi_one_second": one_second_budget(counted) if counted else None,
           "omp_num_threads": os.environ.get("OMP_NUM_THREADS")}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
