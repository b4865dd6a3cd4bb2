"""Clocks and the per-move thinking budget.

Vocabulary
----------
kind        ``none`` (no limit), ``absolute`` (sudden death: main time only),
            ``canadian`` (main time, then ``byo_time`` seconds for every
            ``byo_stones`` moves), ``byoyomi`` (Japanese: main time, then
            ``byo_periods`` periods of ``byo_time`` seconds; a period is lost
            only when a move takes longer than it).
Clock       one colour's remaining time: ``main_left``, and once in byo-yomi
            ``byo_left`` with ``stones_left`` (Canadian) or ``periods_left``
            (Japanese).
budget      seconds to think about the next move: main time divided over the
            moves we still expect to play, or the byo-yomi time per stone,
            less a lag margin; None when there is no limit.
charge      our own bookkeeping of time spent, so the clock stays right when
            the controller sends no ``time_left``; ``time_left`` overrides it.

GTP's ``time_settings main byo stones``: ``byo == 0`` is absolute time;
``byo > 0`` with ``stones == 0`` means no time limit; otherwise Canadian.
``time_left color t stones``: ``stones == 0`` means ``t`` is main time left;
``stones > 0`` means byo-yomi with ``t`` seconds for ``stones`` moves (for
Japanese byo-yomi, ``stones`` counts the periods left, as KGS sends it).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .config import TimeSection

KINDS = ("none", "absolute", "canadian", "byoyomi")


@dataclass
class Clock:
    main_left: float = 0.0
    in_byo: bool = False
    byo_left: float = 0.0
    stones_left: int = 0
    periods_left: int = 0


@dataclass
class TimeControl:
    settings: TimeSection = field(default_factory=TimeSection)
    kind: str = "none"
    main_time: float = 0.0
    byo_time: float = 0.0
    byo_stones: int = 0
    byo_periods: int = 0
    clocks: dict[int, Clock] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.reset()

    # ---- settings --------------------------------------------------------
    def set_kind(self, kind: str, main: float = 0.0, byo_time: float = 0.0, stones: int = 0, periods: int = 0) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown time system {kind!r}")
        if min(main, byo_time) < 0 or min(stones, periods) < 0:
            raise ValueError("time settings must not be negative")
        if kind == "canadian" and (byo_time <= 0 or stones <= 0):
            raise ValueError("canadian byo-yomi needs a positive time and stone count")
        if kind == "byoyomi" and (byo_time <= 0 or periods <= 0):
            raise ValueError("byo-yomi needs a positive period time and period count")
        self.kind, self.main_time, self.byo_time = kind, float(main), float(byo_time)
        self.byo_stones, self.byo_periods = int(stones), int(periods)
        self.reset()

    def set_gtp(self, main: float, byo_time: float, stones: int) -> None:
        """GTP ``time_settings``."""
        if byo_time > 0 and stones == 0:
            self.set_kind("none")
        elif byo_time == 0:
            self.set_kind("absolute", main)
        else:
            self.set_kind("canadian", main, byo_time, stones)

    def reset(self) -> None:
        """Full clocks for both colours (new game or new settings)."""
        self.clocks = {c: self._fresh() for c in (1, 2)}

    def _fresh(self) -> Clock:
        c = Clock(main_left=self.main_time)
        if self.kind in ("canadian", "byoyomi") and self.main_time <= 0:
            self._enter_byo(c)
        return c

    def _enter_byo(self, c: Clock) -> None:
        c.in_byo = True
        c.main_left = 0.0
        c.byo_left = self.byo_time
        c.stones_left = self.byo_stones
        c.periods_left = self.byo_periods

    def describe(self) -> str:
        if self.kind == "none":
            return "no time limit"
        if self.kind == "absolute":
            return f"absolute {self.main_time:g} s"
        if self.kind == "canadian":
            return f"canadian {self.main_time:g} s + {self.byo_time:g} s / {self.byo_stones} stones"
        return f"byo-yomi {self.main_time:g} s + {self.byo_periods} x {self.byo_time:g} s"

    # ---- controller reports ----------------------------------------------
    def time_left(self, color: int, seconds: float, stones: int) -> None:
        """GTP ``time_left``: the controller's view replaces ours."""
        if seconds < 0 or stones < 0:
            raise ValueError("time left must not be negative")
        c = self.clocks[color]
        if stones == 0 or self.kind in ("none", "absolute"):
            c.in_byo = False
            c.main_left = float(seconds)
            if self.kind in ("canadian", "byoyomi") and seconds <= 0:
                self._enter_byo(c)
            return
        c.in_byo = True
        c.main_left = 0.0
        if self.kind == "byoyomi":
            c.byo_left = float(seconds)
            c.periods_left = stones
        else:
            c.byo_left = float(seconds)
            c.stones_left = stones

    # ---- our own bookkeeping -----------------------------------------------
    def charge(self, color: int, seconds: float) -> None:
        """Take ``seconds`` spent on one move off ``color``'s clock."""
        if self.kind == "none":
            return
        c = self.clocks[color]
        s = max(0.0, seconds)
        if not c.in_byo:
            c.main_left -= s
            if c.main_left >= 0 or self.kind == "absolute":
                return
            s = -c.main_left  # the overflow is spent in byo-yomi
            self._enter_byo(c)
        if self.kind == "canadian":
            c.byo_left -= s
            c.stones_left -= 1
            if c.stones_left <= 0:
                c.byo_left, c.stones_left = self.byo_time, self.byo_stones
        else:  # byoyomi: a period is used up only by overrunning it
            lost = int(min(s / self.byo_time, 1e9)) if self.byo_time > 0 else 0
            c.periods_left = max(0, c.periods_left - lost)
            c.byo_left = self.byo_time

    # ---- the budget ----------------------------------------------------------
    def moves_left(self, move_number: int, board_size: int) -> float:
        """Moves we still expect to play (ours only)."""
        t = self.settings
        expected = t.expected_length_factor * board_size * board_size
        return max(float(t.min_moves_left), (expected - move_number) / 2.0)

    def budget(self, color: int, move_number: int, board_size: int) -> float | None:
        """Seconds to spend on this move; None for no limit."""
        if self.kind == "none":
            return None
        t = self.settings
        c = self.clocks[color]
        keep = 1.0 - t.reserve_fraction
        lag = t.lag_margin_s
        if not c.in_byo:
            r = max(0.0, c.main_left)
            share = r * keep / self.moves_left(move_number, board_size)
            share = min(share, r * t.max_move_fraction)
            if self.kind == "absolute":
                return max(0.0, share - lag)
            per = self.byo_time / self.byo_stones if self.kind == "canadian" else self.byo_time
            return max(0.0, max(share, per * keep) - lag)
        if self.kind == "canadian":
            stones = max(1, c.stones_left)
            return max(0.0, c.byo_left * keep / stones - lag)
        return max(0.0, self.byo_time * keep - lag)
