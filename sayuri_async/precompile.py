"""Compile the numba code ahead of time, so no command's first start sits silent.

Vocabulary
----------
warm run    one short run of each path that calls compiled code: self-play
            with PUCT on the simple-v1 planes and the NN cache, self-play
            with Gumbel on the sayuri-v3 planes (ladders, Benson), both on
            9x9 with the random network, and one GTP conversation (genmove,
            analysis, scoring), the pruning of a tree under its memory
            budget (which a short GTP session never fills), and the batch
            encoding tools and benchmarks call (``encoders/planes.py``,
            which no command reaches: a module left without cached code
            would have every start announce a compile). numba's ``cache=True``
            writes the machine code to its cache (``numba_cache.location``),
            and every later start loads it.
pending     the compiled functions of the package (module-level ``@njit(cache=True)``)
            with no cached machine code yet: what this run will compile.
progress    ``Progress``: one line per function numba starts compiling,
            ``[k/N] module.function`` with N the pending count (numba's
            compile events; the GTP conversation's child process reports
            its own through its stderr), rewritten in place on a terminal
            and at most every ``LOG_EVERY_S`` seconds elsewhere; then the
            total time. A function the warm runs do not reach is named at
            the end.
notice      ``numba_cache.compile_notice``: a command that would still compile
            (a module with no cached code, after an edit of its sources) says
            so in one line before it does.

``python -m sayuri_async.precompile`` is run by ``tools/setup_venv.sh``; it
takes about 3 minutes of CPU (user 3m08s, 99 of 127 functions compiled),
and its wall time grows with the machine's load: 22 minutes on a 2-core
machine at load 12 (``time env NUMBA_CACHE_DIR=$(mktemp -d) python -m
sayuri_async.precompile`` measures it with an empty cache). It writes
nothing outside a temporary folder and numba's cache.
"""
from __future__ import annotations

import importlib
import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Callable

GTP_SESSION = "boardsize 9\nclear_board\ngenmove b\nplay w e5\nkata-analyze 10\n\ngenmove b\nfinal_score\nquit\n"
MARK = "sayuri-precompile: compiling "  # the GTP child's progress lines on its stderr
LOG_EVERY_S = 5.0
PACKAGE_NAME = "sayuri_async"


def compiled_functions() -> dict[str, object]:
    """Every module-level cached numba function of the package, by its
    qualified name (importing the modules that hold them)."""
    from numba.core.dispatcher import Dispatcher

    from .numba_cache import PACKAGE, _sources

    out: dict[str, object] = {}
    for path in _sources():
        name = ".".join(("sayuri_async", *path.relative_to(PACKAGE).with_suffix("").parts))
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if isinstance(value, Dispatcher) and value.py_func.__module__ == name:
                out[f"{name}.{attr}"] = value
    return out


def pending(functions: dict[str, object]) -> list[str]:
    """The cached functions with no cached machine code yet (their cache
    index file is missing; functions without ``cache=True`` compile at every
    start and are left out)."""
    out = []
    for name, disp in functions.items():
        cache = getattr(disp, "_cache", None)
        if type(cache).__name__ == "NullCache":
            continue
        index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
        if index is None or not os.path.exists(index):
            out.append(name)
    return out


class Progress:
    """Counts and shows the functions numba compiles (see the vocabulary)."""

    def __init__(self, total: int, stream: IO[str] | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.total = total
        self.stream = stream or sys.stdout
        self.clock = clock
        self.seen: list[str] = []
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last = -1e9
        self._dirty = False

    def compiling(self, name: str) -> None:
        if name in self.seen:
            return
        self.seen.append(name)
        line = f"  [{len(self.seen)}/{max(self.total, len(self.seen))}] {name}"
        now = self.clock()
        if self.tty:
            self.stream.write(f"\r\x1b[K{line}")
            self._dirty = True
        elif now - self._last >= LOG_EVERY_S:
            self.stream.write(line + "\n")
            self._last = now
        self.stream.flush()

    def end_line(self) -> None:
        """Finish the line a terminal rewrites in place."""
        if self._dirty:
            self.stream.write("\n")
            self.stream.flush()
            self._dirty = False


def _listener(on_compile: Callable[[str], None]):
    """A numba event listener that calls ``on_compile(qualified name)`` as
    each function starts compiling."""
    from numba.core import event

    class Listener(event.Listener):
        def on_start(self, ev) -> None:
            disp = (ev.data or {}).get("dispatcher")
            func = getattr(disp, "py_func", None)
            if func is not None and str(func.__module__).startswith(PACKAGE_NAME):  # not numba's own helpers
                on_compile(f"{func.__module__}.{func.__name__}")

        def on_end(self, ev) -> None:
            pass

    listener = Listener()
    event.register("numba:compile", listener)
    return listener


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
    from .search.config import SearchConfig
    from .search.mcts import Search
    from .search.pools import make_room

    s = Search(SearchConfig(tree_memory_mb=1), "simple-v1")
    s.sync(Game(9, 7.0))
    make_room(s.ws, s.nodes, s.edges, 4 * s.edges.shape[0], 1, s.budget_bytes)


def warm_encoders() -> None:
    """The batch encoding of the default encoder (``encoders.planes.encode_many``)."""
    import numpy as np

    from .encoders import get_encoder
    from .encoders.planes import encode_many
    from .go.board import new_board

    enc = get_encoder()
    encode_many(enc.encode, new_board(9), np.zeros(1, dtype=np.int64), enc.alloc(9, batch=1))


def gtp_child() -> int:
    """The GTP conversation's process: the GTP engine on this process's stdin,
    each function it compiles reported on stderr (``MARK``)."""
    from .cli import main as cli_main

    _listener(lambda name: print(f"{MARK}{name}", file=sys.stderr, flush=True))
    return cli_main(["gtp"])


GTP_CHILD = "import sys; from sayuri_async.precompile import gtp_child; sys.exit(gtp_child())"


def warm_gtp(on_compile: Callable[[str], None] = lambda name: None, code: str = GTP_CHILD) -> None:
    """One GTP conversation in a child process running ``code`` (the GTP
    engine's own paths); the functions it reports compiling (``MARK`` lines
    on its stderr) go to ``on_compile``, the rest of its stderr is dropped."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with tempfile.TemporaryFile() as stdin:
        stdin.write(GTP_SESSION.encode())
        stdin.seek(0)
        proc = subprocess.Popen([sys.executable, "-c", code], stdin=stdin, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, env=env, text=True)
        try:
            for line in proc.stderr:
                if line.startswith(MARK):
                    on_compile(line[len(MARK):].strip())
            proc.wait(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def main(argv: list[str] | None = None) -> int:
    t0 = time.monotonic()
    from .numba_cache import uncompiled_modules, where_text

    todo = pending(compiled_functions())
    if not todo:
        print("numba's cache is complete: nothing to compile", flush=True)
        return 0
    print(f"compiling {len(todo)} functions of the board, search and feature code with numba, kept {where_text()} "
          f"(once, several minutes; later starts load them)", flush=True)
    progress = Progress(len(todo))
    listener = _listener(progress.compiling)
    try:
        with tempfile.TemporaryDirectory(prefix="sayuri-precompile-") as tmp:
            warm_selfplay(Path(tmp))
        warm_pools()
        warm_encoders()
        warm_gtp(progress.compiling)
    finally:
        from numba.core import event

        event.unregister("numba:compile", listener)
        progress.end_line()
    left = uncompiled_modules()
    note = f"; not reached: {', '.join(left)}" if left else ""
    print(f"compiled {len(progress.seen)} of the {len(todo)} functions in {time.monotonic() - t0:.0f} s (the rest "
          f"compile on first use, if ever){note}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
