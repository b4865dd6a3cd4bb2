"""Interactive tuning keys: turning key presses into engine control dicts, and
reading them from a terminal without blocking the reporter.

Vocabulary
----------
control     a dict the runner hands to every engine's ``control()``:
            ``{"batch_size": 64}``, ``{"parallel_games": 128}``,
            ``{"timeout_ms": 2.0}``, ``{"pause": True}``, ``{"stop": True}``.
settings    the engines' live values (``EngineSettings``, ``status.py``); the handler
            works on a copy so that several presses compound before the
            engines report back.
a           sets parallel_games to the rule of thumb (``report.games_needed``:
            2 x batch_size / leaves_per_await).
field       a tunable setting: ``batch_size`` and ``parallel_games`` double or
            halve, ``timeout_ms`` steps along ``TIMEOUT_LADDER``.
selected    the field ``+``/``-`` (and the up/down arrows) change; Tab or the
            left/right arrows move it.
KeyHandler  pure logic, no terminal: ``feed(chars, settings) -> controls``.
KeyReader   a daemon thread that puts stdin into cbreak mode (no echo, no
            line buffering; Ctrl-C still interrupts), reads characters as they
            come and hands them over through ``drain()``. ``stop()`` (also run
            at exit) puts the terminal back as it was.
"""
from __future__ import annotations

import atexit
import os
import queue
import select
import sys
import threading
from dataclasses import dataclass

from .report import games_needed
from .status import EngineSettings

FIELDS = ("batch_size", "parallel_games", "timeout_ms")
TIMEOUT_LADDER = (0.0, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0)
MAX_GAMES = 8192

HELP = [
    ("b/B", "batch_size -/+"),
    ("g/G", "parallel_games -/+"),
    ("t/T", "timeout_ms -/+"),
    ("a", "games = rule of thumb"),
    ("tab +/-", "selected -/+"),
    ("p", "pause/resume"),
    ("q", "quit"),
]

_ARROWS = {"A": "up", "B": "down", "C": "right", "D": "left"}


def step_timeout(ms: float, up: bool) -> float:
    """The next rung of ``TIMEOUT_LADDER`` above (or below) ``ms``."""
    if up:
        return next((x for x in TIMEOUT_LADDER if x > ms + 1e-9), TIMEOUT_LADDER[-1])
    return next((x for x in reversed(TIMEOUT_LADDER) if x < ms - 1e-9), TIMEOUT_LADDER[0])


@dataclass
class KeyHandler:
    """Key characters -> control dicts. ``max_batch`` caps batch_size (the
    engine's ``max_batch_size``: its backend and buffers are built for it);
    ``batch_cap_note`` says why when a press hits the cap."""

    max_batch: int = 1024
    max_games: int = MAX_GAMES
    batch_cap_note: str = ""
    selected: str = "batch_size"
    message: str = ""
    quit: bool = False
    _esc: str = ""

    def feed(self, chars: str, settings: EngineSettings) -> list[dict]:
        """Apply each character to ``settings`` (changed in place) and return
        the controls to send, in order."""
        out: list[dict] = []
        for ch in chars:
            key = self._decode(ch)
            if key is not None:
                out.extend(self._key(key, settings))
        return out

    def _decode(self, ch: str) -> str | None:
        """Single characters pass through; ESC [ A..D become arrow names."""
        if self._esc:
            self._esc += ch
            if self._esc == "\x1b[" or self._esc == "\x1bO":
                return None
            seq, self._esc = self._esc, ""
            return _ARROWS.get(seq[-1]) if len(seq) == 3 else None
        if ch == "\x1b":
            self._esc = ch
            return None
        return ch

    def _key(self, key: str, s: EngineSettings) -> list[dict]:
        if key in ("b", "B"):
            return self._change("batch_size", key == "B", s)
        if key in ("g", "G"):
            return self._change("parallel_games", key == "G", s)
        if key in ("t", "T"):
            return self._change("timeout_ms", key == "T", s)
        if key in ("+", "=", "up"):
            return self._change(self.selected, True, s)
        if key in ("-", "_", "down"):
            return self._change(self.selected, False, s)
        if key in ("\t", "right", "left"):
            i = FIELDS.index(self.selected) + (-1 if key == "left" else 1)
            self.selected = FIELDS[i % len(FIELDS)]
            self.message = f"selected {self.selected}"
            return []
        if key == "a":
            want = min(self.max_games, games_needed(s.batch_size, s.leaves_per_await))
            s.parallel_games = want
            self.message = f"parallel_games -> {want} (rule of thumb)"
            return [{"parallel_games": want}]
        if key in ("p", " "):
            paused = not s.paused
            s.paused = paused
            self.message = "paused: games stop after the search of their current move" if paused else "resumed"
            return [{"pause": paused}]
        if key in ("q", "Q"):
            self.quit = True
            self.message = "stopping: games in progress are dropped, finished ones are written"
            return [{"stop": True}]
        return []

    def _change(self, name: str, up: bool, s: EngineSettings) -> list[dict]:
        self.selected = name
        old = getattr(s, name)
        if name == "timeout_ms":
            new: float | int = step_timeout(float(old), up)
        else:
            new = int(old) * 2 if up else int(old) // 2
            hi = self.max_batch if name == "batch_size" else self.max_games
            new = max(1, min(new, hi))
            if up and new == int(old) and name == "batch_size" and self.batch_cap_note:
                self.message = f"batch_size stays {old}: {self.batch_cap_note}"
                return []
        if new == old:
            self.message = f"{name} stays {old} (limit)"
            return []
        setattr(s, name, new)
        self.message = f"{name} {old:g} -> {new:g}"
        return [{name: new}]


class KeyReader:
    """Reads stdin in cbreak mode on a daemon thread. ``start()`` does
    nothing (and ``active`` stays False) when stdin is no terminal."""

    def __init__(self, stream=None) -> None:
        self.stream = stream or sys.stdin
        self.active = False
        self._q: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._fd = -1
        self._saved = None
        self._lock = threading.Lock()

    def start(self) -> bool:
        try:
            import termios
            import tty

            fd = self.stream.fileno()
            if not os.isatty(fd):
                return False
            self._saved = termios.tcgetattr(fd)
            tty.setcbreak(fd)
        except (ImportError, OSError, ValueError, AttributeError):
            return False
        self._fd = fd
        self.active = True
        atexit.register(self.stop)
        self._thread = threading.Thread(target=self._read, name="tui-keys", daemon=True)
        self._thread.start()
        return True

    def _read(self) -> None:
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([self._fd], [], [], 0.1)
                if not ready:
                    continue
                data = os.read(self._fd, 64)
            except (OSError, ValueError):
                return
            if not data:
                return
            self._q.put(data.decode("utf-8", errors="replace"))

    def drain(self) -> str:
        out = []
        while True:
            try:
                out.append(self._q.get_nowait())
            except queue.Empty:
                return "".join(out)

    def stop(self) -> None:
        """Stop reading and restore the terminal (safe to call twice)."""
        with self._lock:
            self._stop.set()
            if self._thread is not None and self._thread is not threading.current_thread():
                self._thread.join(timeout=0.5)
            self._thread = None
            if self._saved is not None:
                try:
                    import termios

                    termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)
                except (ImportError, OSError, ValueError):
                    pass
                self._saved = None
            self.active = False
