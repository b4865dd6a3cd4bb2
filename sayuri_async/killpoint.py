"""Named kill points, for tests of what survives a crash.

Vocabulary
----------
kill point  ``kill_point(name)`` sends SIGKILL to this very process when the
            environment variable ``SAYURI_ASYNC_KILL_AT`` asks for ``name``;
            unset, as it always is outside such tests, it does nothing.
            Points are placed where a crash is hardest to survive, such as
            between writing a result and recording that it was written.
request     ``SAYURI_ASYNC_KILL_AT`` is a comma-separated list of
            ``PATTERN`` or ``PATTERN@N``: ``PATTERN`` is a shell-style
            pattern over point names (``fnmatch``: ``rename:ckpt-*``), and
            the process dies the ``N``-th time (default the first) it reaches
            a point that matches, counted per request and per process.
points      ``rename:<file name>`` (``fileio.atomic_path``: a file's
            temporary is written and synced, not yet renamed: chunks, SGF,
            checkpoints, exports, the loop's state...); ``selfplay-game`` (an
            engine handed a finished game to its writer); ``selfplay-status``
            (the parent of engine processes took a status report);
            ``train-checkpointed`` (a checkpoint is written, the export not
            yet); ``loop-trained`` and ``loop-evaluated`` (the loop finished
            a phase, its state does not say so yet).
"""
from __future__ import annotations

import fnmatch
import os
import signal

ENV = "SAYURI_ASYNC_KILL_AT"
_hits: dict[str, int] = {}


def kill_point(name: str) -> None:
    wanted = os.environ.get(ENV)
    if not wanted:
        return
    for request in (w.strip() for w in wanted.split(",")):
        pattern, _, nth = request.partition("@")
        if pattern and fnmatch.fnmatchcase(name, pattern):
            _hits[request] = _hits.get(request, 0) + 1
            if _hits[request] >= int(nth or 1):
                os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))
