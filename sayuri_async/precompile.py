"""Compile the numba code ahead of time, so no command's first start sits silent.

Vocabulary
----------
warm run    one short run of each path that calls compiled code: self-play
            with PUCT on the simple-v1 planes and the NN cache, self-play
            with Gumbel on the sayuri-v3 planes (ladders, Benson), both on
            9x9 with the random network, and one GTP conversation (genmove,
            analysis, scoring), and the pruning of a tree under its memory
            budget (which a short GTP session never fills). numba's ``cache=True`` writes the machine
            code beside the sources, and every later start loads it.
notice      ``numba_cache.compile_notice``: a command that would still compile
            (a module with no cached code, after an edit of its sources) says
            so in one line before it does.

``python -m sayuri_async.precompile`` is run by ``tools/setup_venv.sh``; it
prints one line saying what it compiled and how long it took. It writes
nothing outside a temporary folder and numba's cache.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GTP_SESSION = "boardsize 9\nclear_board\ngenmove b\nplay w e5\nkata-analyze 10\n\ngenmove b\nfinal_score\nquit\n"


def warm_selfplay(out: Path) -> None:
    """Two tiny random-network self-play runs in this process."""
    from .selfplay.config import SelfplayConfig
    from .selfplay.report import PlainReporter
    from .selfplay.runner import run_inprocess

    runs = (dict(gumbel=False, encoder="", cache_size=4096),
            dict(gumbel=True, encoder="sayuri-v3", cache_size=0))
    for k, extra in enumerate(runs):
        cfg = SelfplayConfig(board_sizes=[9], num_games=2, parallel_games=2, batch_size=2, playouts=16,
                             reduce_playouts=4, chunk_games=2, writer_process=False, seed=1 + k,
                             out=str(out / f"run{k}"), **extra)
        run_inprocess(cfg, PlainReporter(every=3600.0, stream=io.StringIO()))


def warm_pools() -> None:
    """The tree pools' pruning path (``search/pools.py``): a search whose
    budget is full asks for more room than it has."""
    from .go.game import Game
    from .search.mcts import Search, SearchConfig
    from .search.pools import make_room

    s = Search(SearchConfig(tree_memory_mb=1), "simple-v1")
    s.sync(Game(9, 7.0))
    make_room(s.ws, s.nodes, s.edges, 4 * s.edges.shape[0], 1, s.budget_bytes)


def warm_gtp() -> None:
    """One GTP conversation in a child process (the GTP engine's own paths)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    subprocess.run([sys.executable, "-m", "sayuri_async.cli", "gtp"], input=GTP_SESSION.encode(), stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=600, check=False, env=env)


def main(argv: list[str] | None = None) -> int:
    t0 = time.monotonic()
    print("compiling the board, search and feature code (numba; once, later starts load it from the cache)...",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="sayuri-precompile-") as tmp:
        warm_selfplay(Path(tmp))
    warm_pools()
    warm_gtp()
    from .numba_cache import uncompiled_modules

    left = uncompiled_modules()
    note = f"; not reached: {', '.join(left)}" if left else ""
    print(f"compiled in {time.monotonic() - t0:.0f} s{note}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
