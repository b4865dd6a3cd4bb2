"""Named kill points, for tests of what survives a crash.

Vocabulary: ``kill_point(name)`` sends SIGKILL to this very process when the
environment variable ``SAYURI_ASYNC_KILL_AT`` names ``name`` (a comma-separated
list may name several); unset, as it always is outside such tests, it does
nothing. Points are placed where a crash is hardest to survive, such as
between writing a result and recording that it was written.
"""
from __future__ import annotations

import os
import signal

ENV = "SAYURI_ASYNC_KILL_AT"


def kill_point(name: str) -> None:
    wanted = os.environ.get(ENV)
    if wanted and name in (w.strip() for w in wanted.split(",")):
        os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))
