#!/usr/bin/env python3
"""The ``sayuri-v3`` encoder on leaves captured from self-play, replayed.

Self-play's loop CPU per request (``tools/bench_selfplay.py``) moves by a
fifth between runs of the same code on a shared machine, and perf cannot
tell one compiled function from the search's others there. This benchmark
takes the encoder out of the loop, with the inputs self-play gives it:

capture     ``--capture FILE``: self-play with the random network (64 games,
            100 playouts, one leaf a round) for ``--seconds`` after
            ``--warmup``; every leaf the searches encode is kept, in order,
            with its game and, where the search read its root's ladders at
            that leaf (``ladder.ladder_map_keep``, its first leaf after
            ``set_root``), the root. A leaf is saved as its root and the
            moves from there (the last ones of its history ring), checked
            to rebuild the very record the search encoded; roots are board
            records of ``go/board.BOARD_DTYPE``. Saved with ``numpy.savez``.
replay      ``FILE``: every leaf rebuilt as the search's walk builds it (the
            root copied to one scratch board, the moves played) and encoded
            as the search does (``encoders/leaf.encode_leaf``: one leaf
            workspace per game, the root's read-outs where the capture made
            them, then ``encode_sayuri_v3_reuse``), in a compiled loop;
            ``--reps`` passes, each from empty workspaces, timed by CPU
            time. (Keeping the leaves' records instead, 12.5 KB each, made
            each pass stream 1.5 GB from memory, which a search never does:
            its leaf is the board it just played on, and the figures moved
            with the machine's memory traffic.) Also prints the ladder
            statistics of the last pass (strings taken from the parent
            position, the root, the memo, and read out).

Prints a line of figures and, as its last line, a JSON object with
``leaves``, ``encode_us`` (min over the passes, CPU time per leaf),
``encode_us_median``, ``inherited``, ``reused``, ``remembered``, ``read``,
``read_nodes`` and ``planes_checksum`` (of every leaf's planes and idle
points, from a first pass that is not timed: two versions of the encoder
that agree on it made the same planes).
Usage: ``python tools/bench_leaves.py /tmp/leaves.npz --capture --board 19``,
then ``python tools/bench_leaves.py /tmp/leaves.npz --reps 5``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from numba import njit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sayuri_async.go import board as B  # noqa: E402
from sayuri_async.borrowed import borrowed  # noqa: E402
from sayuri_async.encoders.sayuri_v3 import PLANES, encode_sayuri_v3_reuse, new_scratch  # noqa: E402
from sayuri_async.encoders.ladder import ladder_map_keep  # noqa: E402


def capture(a) -> None:
    """Run self-play in this process and save the leaves its searches encode."""
    import asyncio

    from sayuri_async.search import mcts
    from sayuri_async.search.config import SearchConfig
    from sayuri_async.selfplay.config import SelfplayConfig
    from sayuri_async.selfplay.engine import Engine
    from sayuri_async.selfplay.runner import install_uvloop, make_engine_backend

    leaves: list[np.ndarray] = []
    games: list[int] = []
    keep_root: list[int] = []
    roots: list[np.ndarray] = []
    ids: dict[int, int] = {}
    recording = [False]
    descend = mcts.descend_round

    def recorded(handle, planes, slot, want, forced, cache):
        w = handle[0][0]
        kept = handle[4][0]  # the encoder's scratch (encoders/leaf.py): its read-outs of the root
        ready = int(kept["ladders"]["ready"]) and int(kept["root_serial"]) == int(w["root_serial"])
        out = descend(handle, planes, slot, want, forced, cache)
        if recording[0] and out[0] == 1:
            games.append(ids.setdefault(id(handle[0]), len(ids)))
            leaves.append(handle[3][0].copy())  # the leaf's board (search/tree.py, "leaf boards")
            if ready == 0:
                keep_root.append(len(roots))
                roots.append(w["root"].copy())
            else:
                keep_root.append(-1)
        return out

    mcts.descend_round = recorded
    out_dir = tempfile.mkdtemp(prefix="bench_leaves_")
    cfg = SelfplayConfig(
        board_sizes=[a.board], num_games=0, parallel_games=64, batch_size=32, timeout_ms=5.0, playouts=100,
        reduce_playouts=0, reduce_playouts_prob=0.0, random_moves_factor=0.0, chunk_games=10_000, write_sgf=False,
        out=out_dir, procs=1, device="cpu", weights="", seed=a.seed, inline_cheap_backend=True,
        encoder="sayuri-v3", search=SearchConfig(leaves_per_await=1),
    )
    install_uvloop()
    backend = make_engine_backend(cfg, cfg.device)

    async def main() -> None:
        engine = Engine(cfg, backend)
        run = asyncio.ensure_future(engine.run())
        await asyncio.sleep(a.warmup)
        recording[0] = True
        await asyncio.sleep(a.seconds)
        recording[0] = False
        engine.stop()
        await run
        engine.close()

    try:
        asyncio.run(main())
    finally:
        backend.close()
        shutil.rmtree(out_dir, ignore_errors=True)
    games_a = np.array(games, np.int32)
    keep_a = np.array(keep_root, np.int32)
    recs = np.array(leaves, dtype=B.BOARD_DTYPE)
    roots_a = np.array(roots, dtype=B.BOARD_DTYPE)
    root_of = np.full(len(recs), -1, np.int32)
    current: dict[int, int] = {}
    for i, (g, k) in enumerate(zip(games_a, keep_a)):
        if k >= 0:
            current[int(g)] = int(k)
        root_of[i] = current.get(int(g), -1)
    depth = np.zeros(len(recs), np.int32)
    moves = np.zeros((len(recs), B.HISTORY - 1), np.int32)
    ok = as_moves(recs, roots_a, root_of, depth, moves, np.zeros(1, B.BOARD_DTYPE))
    tmp = f"{a.file}.tmp.npz"
    np.savez(tmp, roots=roots_a, games=games_a[ok], keep=(keep_a[ok] >= 0), root_of=root_of[ok], depth=depth[ok],
             moves=moves[ok])
    os.replace(tmp, a.file)
    print(f"captured {len(recs)} leaves of {len(ids)} games ({int(ok.sum())} rebuilt from their root and moves, "
          f"kept), {len(roots_a)} root read-outs -> {a.file}")


@njit
def _same_board(x, y) -> bool:
    """Whether two records hold the same position, history and fields on
    ``x``'s board (points past ``W * W`` are never read)."""
    m = x.w * x.w
    for p in range(m):
        if (x.color[p] != y.color[p] or x.libs[p] != y.libs[p] or x.size[p] != y.size[p]
                or (x.color[p] != B.EMPTY and (x.parent[p] != y.parent[p] or x.nxt[p] != y.nxt[p]))):
            return False
    for k in range(B.HISTORY):
        if x.hist_hash[k] != y.hist_hash[k] or x.hist_move[k] != y.hist_move[k]:
            return False
        for p in range(m):
            if x.hist[k, p] != y.hist[k, p]:
                return False
    return (x.hash == y.hash and x.ko == y.ko and x.to_move == y.to_move and x.move_num == y.move_num
            and x.hist_pos == y.hist_pos and x.passes == y.passes and x.last_move == y.last_move
            and x.captures[1] == y.captures[1] and x.captures[2] == y.captures[2] and x.n == y.n
            and x.komi == y.komi and x.scoring == y.scoring and x.handicap == y.handicap)


@njit
def as_moves(recs, roots, root_of, depth, moves, scratch):
    """Each leaf as its root's moves: ``depth[i]`` moves into ``moves[i]``
    from the leaf's history ring; True where replaying them on the root
    rebuilds the leaf exactly."""
    ok = np.zeros(recs.shape[0], np.bool_)
    for i in range(recs.shape[0]):
        r = root_of[i]
        if r < 0:
            continue
        leaf = recs[i]
        d = leaf.move_num - roots[r].move_num
        if d < 0 or d > moves.shape[1]:
            continue
        for k in range(d):
            moves[i, d - 1 - k] = leaf.hist_move[(leaf.hist_pos - k) % B.HISTORY]
        depth[i] = d
        B.copy_board(scratch[0], roots[r])
        for k in range(d):
            B.play(scratch[0], moves[i, k])
        ok[i] = _same_board(leaf, scratch[0])
    return ok


@njit
def replay(roots, games, keep, root_of, depth, moves, ws, scratch, out, idle, lad, check: bool) -> int:
    """Rebuild every leaf on the scratch board as the search's walk does
    and encode it with its game's workspace, as ``encode_leaf`` does.
    Returns a checksum of every leaf's planes and idle points with
    ``check``, else of one cell a leaf."""
    s = 0
    out = borrowed(out)  # as the search's planes (search/puct.descend_round)
    flat = out.reshape(out.size)
    rec = scratch[0]
    for i in range(games.shape[0]):
        root = roots[root_of[i]]
        B.copy_board(rec, root)
        for k in range(depth[i]):
            B.play(rec, moves[i, k])
        leaf = ws[games[i]]
        if keep[i]:
            n = root.n
            ladder_map_keep(root, lad[:n * n], leaf.ladders)
        s += encode_sayuri_v3_reuse(rec, out, leaf, idle)
        if check:
            for j in range(flat.size):
                s = (s * 1000003 + flat[j]) & 0xFFFFFFFFFFFF
            for j in range(idle.size):
                s = (s * 1000003 + idle[j]) & 0xFFFFFFFFFFFF
        else:
            s += out[0, 0, 0]
    return s


def bench(a) -> None:
    d = np.load(a.file)
    roots = d["roots"]
    args = (roots, d["games"], d["keep"], d["root_of"], d["depth"], d["moves"])
    games = d["games"]
    n = int(roots[0]["n"])
    scratch = np.zeros(1, B.BOARD_DTYPE)
    out = np.zeros((PLANES, n, n), np.uint8)
    idle = np.zeros(n * n, np.uint8)
    lad = np.zeros(n * n, np.int8)
    def workspaces() -> np.ndarray:
        return np.concatenate([new_scratch() for _ in range(int(games.max()) + 1)])

    checksum = replay(*args, workspaces(), scratch, out, idle, lad, True)  # compiles too
    times = []
    ws = None
    for _ in range(a.reps):
        ws = workspaces()
        t0 = time.process_time()
        replay(*args, ws, scratch, out, idle, lad, False)
        times.append(1e6 * (time.process_time() - t0) / len(games))
    lads = ws["ladders"]
    stats = {k: int(lads[k].sum()) for k in ("inherited", "reused", "remembered", "read", "read_nodes")}
    res = {"leaves": len(games), "encode_us": min(times), "encode_us_median": statistics.median(times),
           "passes": [round(t, 2) for t in times], "planes_checksum": int(checksum)} | stats
    print(f"{len(games)} leaves: encode {res['encode_us']:.2f} us min, {res['encode_us_median']:.2f} median; "
          f"strings inherited {stats['inherited']}, from the root {stats['reused']}, remembered "
          f"{stats['remembered']}, read {stats['read']} ({stats['read_nodes'] / max(stats['read'], 1):.0f} nodes each); "
          f"planes checksum {checksum}")
    print(json.dumps(res))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("file", help="the captured leaves (.npz)")
    ap.add_argument("--capture", action="store_true", help="capture leaves into FILE instead of replaying it")
    ap.add_argument("--board", type=int, default=19)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--warmup", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    if a.capture:
        capture(a)
        return 0
    try:
        bench(a)
    except (OSError, KeyError, ValueError) as e:
        print(f"bench_leaves: cannot replay {a.file}: {e} (make it with --capture)", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
