"""The GTP engines the ratings play against: where they are, how they start.

Vocabulary
----------
GNU Go   ``$GNUGO``, else ``gnugo`` on the PATH, else ``/usr/games/gnugo``;
         started as ``gnugo --mode gtp --chinese-rules --capture-all-dead
         --level L`` (``--capture-all-dead``: in play-on it removes our dead
         stones, docs/rating.md).
Pachi    ``$PACHI``, else ``.cache/pachi/pachi`` under the repository (what
         ``tools/get_pachi.sh`` builds), else ``pachi`` on the PATH. Started
         as ``pachi -t T -r chinese threads=1,pondering=0,pass_all_alive``:
         Chinese rules, one search thread, no thinking on our time, and it
         passes only once every dead stone is off the board (so two passes
         leave a board both sides count alike, as ``--capture-all-dead``
         does for GNU Go). ``T`` is Pachi's time setting: ``=N`` is N
         playouts a move (Pachi refuses fewer than 500), a number S is
         wall-clock seconds a move, of which Pachi keeps 2 s in reserve
         for network lag: ``-t 1`` thinks about 0.1 s, ``-t 2`` about 1 s
         (measured on its debug output, docs/strength.md).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["PACHI_THREADS", "gnugo_binary", "gnugo_command", "pachi_binary", "pachi_command"]

REPO = Path(__file__).resolve().parents[2]
PACHI_BUILT = REPO / ".cache" / "pachi" / "pachi"
PACHI_THREADS = "threads=1,pondering=0,pass_all_alive"


def gnugo_binary() -> str:
    """GNU Go's path (it may not exist: check with ``os.access``)."""
    return os.environ.get("GNUGO") or shutil.which("gnugo") or "/usr/games/gnugo"


def gnugo_command(level: int, binary: str | None = None) -> str:
    return f"{binary or gnugo_binary()} --mode gtp --chinese-rules --capture-all-dead --level {level}"


def pachi_binary() -> str | None:
    """The Pachi to play: ``$PACHI``, the one ``tools/get_pachi.sh`` built,
    or ``pachi`` on the PATH; None when there is none."""
    env = os.environ.get("PACHI")
    if env:
        return env if os.access(env, os.X_OK) else None
    if os.access(PACHI_BUILT, os.X_OK):
        return str(PACHI_BUILT)
    return shutil.which("pachi")


def pachi_command(time: str = "2", binary: str | None = None) -> str:
    """Pachi's command line with time setting ``time`` (``-t``; see the module docstring)."""
    found = binary or pachi_binary()
    if found is None:
        raise FileNotFoundError("Pachi is not built: run tools/get_pachi.sh (or set PACHI)")
    return f"{found} -t {time} -r chinese {PACHI_THREADS}"
