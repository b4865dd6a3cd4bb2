"""Rich consoles that keep tables whole when the output is a file or a pipe.

Vocabulary: ``console(stderr=False)`` is a ``rich.console.Console`` on
stdout (or stderr); on a terminal it takes the terminal's width, and written
to a file or a pipe (a log) it is ``PIPE_WIDTH`` columns wide unless
``COLUMNS`` says otherwise, instead of rich's 80, which squeezes table
columns into ``generat…``.
"""
from __future__ import annotations

import os
import sys

PIPE_WIDTH = 160


def console(stderr: bool = False):
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty() or os.environ.get("COLUMNS", "").isdigit():
        return Console(stderr=stderr)
    return Console(stderr=stderr, width=PIPE_WIDTH)
