"""A game: one board record plus its history, undo, superko and scoring.

Vocabulary
----------
Game        the Python-side owner of a board record (``go/board.py``); it
            checks legality (including positional superko against every
            earlier position), keeps the move list and an undo stack (a copy
            of the board per move; ``undo=False`` keeps none, for self-play),
            places handicap stones and scores the end position.
move        ``(color, action)``; ``action == N*N`` is a pass.
rules       ``Rules(scoring="area"|"territory", superko=True)``; area is
            Tromp-Taylor, the default, with komi 7.5.
IllegalMove raised for an occupied point, suicide, ko or superko, with the
            reason in its message.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import board as B
from .coords import action_to_vertex, vertex_to_action
from .scoring import area_score, handicap_compensation, result_string, territory_score


class IllegalMove(ValueError):
    """A move the rules forbid; the message says why."""


@dataclass(frozen=True)
class Rules:
    scoring: str = "area"  # "area" (Tromp-Taylor) or "territory"
    superko: bool = True  # positional superko; False means simple ko only

    def __post_init__(self) -> None:
        if self.scoring not in ("area", "territory"):
            raise ValueError(f"unknown scoring {self.scoring!r} (area or territory)")


def handicap_actions(n: int, stones: int) -> list[int]:
    """Fixed handicap placement (GTP's star points) as actions, in Sayuri's
    order: the upper-right and lower-left corners, the other two corners,
    the centre for an odd count of 5 or more, then the right and left middle
    of the edges (6+) and the top and bottom middle (8+). The order matters
    for the last stone only, which Sayuri's history planes count as a move."""
    if n < 7:
        limit = 0
    elif n == 7 or n % 2 == 0:
        limit = 4
    else:
        limit = 9
    if not 2 <= stones <= limit:
        raise ValueError(f"fixed handicap of {stones} stones is not allowed on {n}x{n} (2..{limit})")
    lo = 2 if n < 13 else 3
    hi = n - 1 - lo
    mid = n // 2
    pts = [(hi, hi), (lo, lo), (lo, hi), (hi, lo)][:stones]  # (column, row from the bottom)
    if stones >= 5 and stones % 2 == 1:
        pts.append((mid, mid))
    if stones >= 6:
        pts += [(hi, mid), (lo, mid)]
    if stones >= 8:
        pts += [(mid, hi), (mid, lo)]
    return [y * n + x for x, y in pts]


def _hand_turn(rec, color: int) -> None:
    """Put ``color`` on turn in the board record ``rec``: a move out of turn
    forgets the ko (the ko point bans the other colour's retake only)."""
    rec["to_move"] = color
    rec["ko"] = B.NO_KO


def _copy_record(arr: np.ndarray) -> np.ndarray:
    """Byte-exact copy of a board record array. numpy copies structured
    arrays field by field: about 4x slower, and the dtype's padding bytes of
    the copy are left uninitialised, so the copy is not byte-identical."""
    return arr.view(np.uint8).copy().view(B.BOARD_DTYPE)


_REASONS = {B.LEGAL: None, B.OCCUPIED: "occupied", B.KO: "ko", B.SUICIDE: "suicide", B.SUPERKO: "superko"}


@dataclass
class _Undo:
    rec: np.ndarray
    n_hashes: int


@dataclass
class Game:
    size: int = 19
    komi: float = 7.5
    rules: Rules = field(default_factory=Rules)
    undo_stack: bool = True  # False: no board copies are kept and undo() always fails

    def __post_init__(self) -> None:
        self.arr = B.new_board(self.size, self.komi)
        self.arr[0]["scoring"] = 1 if self.rules.scoring == "territory" else 0
        self.moves: list[tuple[int, int]] = []
        self.handicap: list[int] = []
        self._hashes = np.zeros(64, dtype=np.uint64)
        self._n_hashes = 1  # the empty start position
        self._undo: list[_Undo] = []
        self._start: np.ndarray | None = None  # the start position, kept when there is no undo stack
        self.comments: list[str] = []

    # ---- state -------------------------------------------------------
    @property
    def rec(self):
        return self.arr[0]

    @property
    def to_move(self) -> int:
        return int(self.rec["to_move"])

    @property
    def num_actions(self) -> int:
        return self.size * self.size + 1

    @property
    def pass_action(self) -> int:
        return self.size * self.size

    @property
    def hash(self) -> int:
        return int(self.rec["hash"])

    @property
    def passes(self) -> int:
        return int(self.rec["passes"])

    def set_rules(self, rules: Rules) -> None:
        """Play on under ``rules`` (now and after any undo)."""
        self.rules = rules
        code = 1 if rules.scoring == "territory" else 0
        self.rec["scoring"] = code
        for u in self._undo:
            u.rec[0]["scoring"] = code
        if self._start is not None:
            self._start[0]["scoring"] = code

    def set_komi(self, komi: float) -> None:
        """Change komi for scoring now and after any undo."""
        self.komi = float(komi)
        self.rec["komi"] = komi
        for u in self._undo:
            u.rec[0]["komi"] = komi

    def is_over(self) -> bool:
        """Two passes in a row end the game."""
        return self.passes >= 2

    def resume(self) -> None:
        """Forget the passes so far: play goes on after two passes (a
        referee's play-on); two more passes end the game."""
        self.rec["passes"] = 0

    def history_hashes(self) -> np.ndarray:
        """Hashes of every position so far, the start included (``[M]`` uint64)."""
        return self._hashes[: self._n_hashes]

    def stones(self) -> np.ndarray:
        """``[N, N]`` int8 of 0/1/2, row 0 = GTP row 1."""
        w = self.size + 2
        return self.rec["color"][: w * w].reshape(w, w)[1:-1, 1:-1].copy()

    def copy(self) -> "Game":
        g = Game.__new__(Game)
        g.size, g.komi, g.rules, g.undo_stack = self.size, self.komi, self.rules, self.undo_stack
        g.arr = _copy_record(self.arr)
        g.moves = list(self.moves)
        g.handicap = list(self.handicap)
        g._hashes = self._hashes.copy()
        g._n_hashes = self._n_hashes
        g._undo = [_Undo(_copy_record(u.rec), u.n_hashes) for u in self._undo]
        g._start = None if self._start is None else _copy_record(self._start)
        g.comments = list(self.comments)
        return g

    def with_to_move(self, color: int) -> "Game":
        """This game, or a copy with ``color`` on turn (its ko point cleared,
        as for an out-of-turn move): GTP may ask the colour not on turn to
        move (``genmove w`` with black to move)."""
        if color == self.to_move:
            return self
        g = self.copy()
        _hand_turn(g.rec, color)
        return g

    # ---- rules -------------------------------------------------------
    def why_illegal(self, action: int, color: int | None = None) -> str | None:
        """None when legal, otherwise the reason."""
        n = self.size
        if not 0 <= action <= n * n:
            return f"action {action} is off the board"
        if action == n * n:
            return None
        arr = self.arr
        if color is not None and color != self.to_move:
            arr = _copy_record(self.arr)  # probe the other side's move
            _hand_turn(arr[0], color)
        code = B.illegal_reason(arr, B.action_to_point(n, action), self._hashes, self._n_hashes,
                                self.rules.superko)
        return _REASONS[code]

    def is_legal(self, action: int, color: int | None = None) -> bool:
        return self.why_illegal(action, color) is None

    def legal_actions(self) -> np.ndarray:
        """``[N*N+1]`` uint8 mask of legal actions for the side to move
        (superko included)."""
        mask = np.zeros(self.num_actions, dtype=np.uint8)
        B.legal_actions(self.rec, mask)
        if self.rules.superko:
            hist = self.history_hashes()
            for a in np.flatnonzero(mask[:-1]):
                if np.any(hist == B.hash_after(self.rec, B.action_to_point(self.size, int(a)))):
                    mask[a] = 0
        return mask

    def play(self, action: int, color: int | None = None) -> int:
        """Play ``action`` for ``color`` (default: the side to move).

        Returns stones captured. Raises IllegalMove with the reason."""
        why = self.why_illegal(action, color)
        if why is not None:
            who = "black" if (color or self.to_move) == B.BLACK else "white"
            n = self.size
            where = action_to_vertex(action, n) if 0 <= action <= n * n else f"action {action}"
            raise IllegalMove(f"illegal move {who} {where}: {why}")
        if self.undo_stack:
            self._undo.append(_Undo(_copy_record(self.arr), self._n_hashes))
        elif not self.moves:
            self._start = _copy_record(self.arr)
        mover = self.to_move
        if color is not None and color != mover:
            _hand_turn(self.rec, color)
            mover = color
        captured = B.play_arr(self.arr, B.action_to_point(self.size, action))
        self._push_hash(int(self.arr[0]["hash"]))
        self.moves.append((mover, action))
        self.comments.append("")
        return int(captured)

    def start_record(self):
        """The record of the start position (set-up and handicap stones, no
        move yet)."""
        if not self.moves:
            return self.rec
        return self._undo[0].rec[0] if self.undo_stack else self._start[0]

    def play_vertex(self, vertex: str, color: int | None = None) -> int:
        return self.play(vertex_to_action(vertex, self.size), color)

    def undo(self) -> bool:
        """Take back the last move; False when there is none."""
        if not self._undo:
            return False
        u = self._undo.pop()
        self.arr = u.rec
        self._n_hashes = u.n_hashes
        self.moves.pop()
        self.comments.pop()
        return True

    def _push_hash(self, h: int) -> None:
        if self._n_hashes == len(self._hashes):
            self._hashes = np.concatenate([self._hashes, np.zeros_like(self._hashes)])
        self._hashes[self._n_hashes] = np.uint64(h)
        self._n_hashes += 1

    # ---- set-up ------------------------------------------------------
    def mark_start(self) -> None:
        """Make the position on the board (set-up stones placed on the
        record, no move played) the game's start position: the superko
        history begins with it."""
        self._require_empty_start("a start position")
        self._hashes[0] = self.rec["hash"]
        self._n_hashes = 1

    def _require_empty_start(self, what: str) -> None:
        if self.moves or self.handicap:
            raise IllegalMove(f"{what} needs an empty board")

    def place_handicap(self, actions: list[int]) -> None:
        """Put black stones on ``actions`` before the first move; white moves
        next. Used for fixed and free handicap."""
        self._require_empty_start("handicap")
        if len(set(actions)) != len(actions):
            raise IllegalMove("handicap stones repeat a vertex")
        n = self.size
        for a in actions:
            if not 0 <= a < n * n:
                raise IllegalMove(f"handicap stone {a} is not a board point")
        for a in actions:
            B.place_stone(self.rec, B.action_to_point(n, a), B.BLACK)
        self.mark_start()
        self.mark_handicap(actions)
        self.rec["to_move"] = B.WHITE

    def mark_handicap(self, actions: list[int]) -> None:
        """Record that the start position's black stones ``actions`` (in
        the order they were placed) are a handicap."""
        self.handicap = list(actions)
        self.rec["handicap"] = len(actions)
        self.rec["handicap_last"] = B.action_to_point(self.size, actions[-1]) if actions else 0

    def set_fixed_handicap(self, stones: int) -> list[int]:
        acts = handicap_actions(self.size, stones)
        self.place_handicap(acts)
        return acts

    # ---- scoring -----------------------------------------------------
    def score(self) -> float:
        """Black minus white minus komi under the game's rules; under area
        scoring white also gets a point per handicap stone
        (``scoring.handicap_compensation``)."""
        if self.rules.scoring == "area":
            return area_score(self.rec, self.komi + handicap_compensation(self.rec))
        caps = self.rec["captures"]
        return territory_score(self.rec, self.komi, int(caps[B.BLACK]), int(caps[B.WHITE]))

    def result(self) -> str:
        return result_string(self.score())

    def __str__(self) -> str:
        from .coords import COLUMNS

        n = self.size
        st = self.stones()
        cols = "   " + " ".join(COLUMNS[:n])
        lines = [cols]
        for y in range(n - 1, -1, -1):
            row = " ".join(".XO"[int(c)] for c in st[y])
            lines.append(f"{y + 1:2d} {row} {y + 1:2d}")
        lines.append(cols)
        return "\n".join(lines)
