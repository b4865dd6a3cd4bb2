"""Our GTP engine (``python -m gtp``) as a subprocess for tests.

Vocabulary
----------
start_gtp      ``start_gtp(folder, *args)``: the engine with ``args``, run in
               ``folder`` (its ``dir``), its stderr in ``folder /
               "stderr.txt"``. The ``eng`` fixture (conftest.py) shares one
               among a module's tests.
NOT_ON_STDERR  how the lines begin that belong on stdout only: answers and
               analysis lines.
"""
from __future__ import annotations

import sys
from pathlib import Path

from gtp.match import GtpProcess

NOT_ON_STDERR = ("=", "?", "info", "play")


def start_gtp(folder: Path, *args: str) -> GtpProcess:
    """The engine with ``args`` running in ``folder`` (see the vocabulary)."""
    with open(folder / "stderr.txt", "wb") as err:  # the child holds its own copy
        engine = GtpProcess([sys.executable, "-m", "gtp", *args], name="sayuri-async", stderr=err,
                            cwd=str(folder))
    engine.dir = folder  # type: ignore[attr-defined]
    return engine


def stderr_lines(engine: GtpProcess) -> list[str]:
    """What the engine has written to stderr so far, by line."""
    return (engine.dir / "stderr.txt").read_text().splitlines()  # type: ignore[attr-defined]


def answers_on_stderr(engine: GtpProcess) -> list[str]:
    """The engine's stderr lines that belong on stdout (``NOT_ON_STDERR``)."""
    return [ln for ln in stderr_lines(engine) if ln.lstrip().startswith(NOT_ON_STDERR)]
