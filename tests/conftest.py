"""Shared test helpers: a ``Game`` from a text diagram, our GTP engine in a
subprocess, and the rule that tests which start processes are marked slow.

Vocabulary
----------
diagram     ``diagram(text, to_move=BLACK, komi=7.5, rules=None) -> Game``.
            A diagram lists the rows from the top (row N) down to row 1, one
            row per line; ``X`` is black, ``O`` white, ``.`` empty; spaces are
            ignored. The stones become the set-up start position
            (``sgf.set_up_position``), so the superko history starts from
            that position.
eng         our GTP engine (``python -m gtp`` with the module's
            ``GTP_ARGS``), one process shared by a module's tests, in a
            folder of its own (``eng.dir``) with its stderr in
            ``eng.dir / "stderr.txt"``. After the module's last test it is
            closed, and its stderr must hold no GTP answer or analysis line.
            ``helpers_gtp.start_gtp`` starts one for a single test.
slow        the marker of tests that take more than a few seconds, and of
            every test that starts a process (a subprocess, a
            multiprocessing worker, torchrun, GNU Go, our GTP engine):
            ``make test-fast`` runs the others. A test that starts a
            process without the marker fails, saying so.
Ctrl-C      a shell that starts the suite in the background (``make test &``
            in a script, ``nohup``) hands it SIGINT ignored, and every
            process a test starts would inherit that: the tests of what
            SIGINT does would fail. The suite restores Python's handler
            first, so its children start with SIGINT at its default.
"""
from __future__ import annotations

import multiprocessing.process
import signal
import subprocess
from collections.abc import Callable, Iterator

import pytest

from gtp.match import GtpProcess
from sayuri_async.go import board as B
from sayuri_async.go.game import Game, Rules
from sayuri_async.go.sgf import set_up_position

from helpers_gtp import answers_on_stderr, start_gtp

if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:  # see "Ctrl-C" above
    signal.signal(signal.SIGINT, signal.default_int_handler)


def parse_diagram(text: str) -> tuple[int, list[int], list[int]]:
    """(size, black actions, white actions) of a diagram."""
    rows = [r.replace(" ", "") for r in text.strip().splitlines()]
    n = len(rows)
    assert all(len(r) == n for r in rows), "diagram must be square"
    black, white = [], []
    for i, row in enumerate(rows):
        y = n - 1 - i
        for x, ch in enumerate(row):
            assert ch in ".XO", f"bad diagram character {ch!r}"
            if ch == "X":
                black.append(y * n + x)
            elif ch == "O":
                white.append(y * n + x)
    return n, black, white


def build_game(
    text: str, to_move: int = B.BLACK, komi: float = 7.5, rules: Rules | None = None
) -> Game:
    n, black, white = parse_diagram(text)
    game = Game(size=n, komi=komi, rules=rules or Rules())
    set_up_position(game, black, white, to_move)
    return game


@pytest.fixture
def diagram() -> Callable[..., Game]:
    """``diagram(text, to_move=BLACK, komi=7.5, rules=None) -> Game``."""
    return build_game


@pytest.fixture(scope="module")
def eng(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GtpProcess]:
    """The module's GTP engine (see the vocabulary)."""
    folder = tmp_path_factory.mktemp("gtp")
    engine = start_gtp(folder, *getattr(request.module, "GTP_ARGS", ()))
    try:
        yield engine
    finally:
        engine.close()
    assert not answers_on_stderr(engine)


# ---- slow: a test that starts a process must say so --------------------------
_running: list[pytest.Item] = []  # the test whose set-up, call or teardown runs now
_unmarked: dict[str, str] = {}  # nodeid -> the first process an unmarked test started


def _note_process(what: Callable[[], str]) -> None:
    if _running and _running[0].get_closest_marker("slow") is None:
        _unmarked.setdefault(_running[0].nodeid, what())


def _watch(cls: type, method: str, describe: Callable[..., str]) -> None:
    original = getattr(cls, method)

    def watched(self, *args, **kwargs):
        _note_process(lambda: describe(self, *args, **kwargs))
        return original(self, *args, **kwargs)

    setattr(cls, method, watched)


def pytest_configure(config: pytest.Config) -> None:
    _watch(subprocess.Popen, "__init__", lambda self, args, *rest, **kw: f"the subprocess {args!r}"[:200])
    _watch(multiprocessing.process.BaseProcess, "start", lambda self: f"the process {self.name}")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    _running[:] = [item]
    try:
        return (yield)
    finally:
        _running.clear()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None):
    """Fail an unmarked test that started a process, once its teardown ran."""
    result = yield
    started = _unmarked.pop(item.nodeid, None)
    if started is not None:
        pytest.fail(f"{item.nodeid} started {started} but is not marked slow (@pytest.mark.slow), "
                    f"so `make test-fast` would run it", pytrace=False)
    return result
