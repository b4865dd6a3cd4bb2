"""The one game loop: two players, our rules, a game played to its end and scored.

Vocabulary
----------
Player      anything that can take part in a game: ``start`` (new board),
            ``play`` (the opponent's move), ``genmove`` (our move: an action,
            or -1 to resign), the clock hooks ``time_settings`` and
            ``time_left`` (ignored unless the player keeps time),
            ``dead_stones`` (its view of the dead stones at the end; None:
            no opinion, the default), ``close``.
GtpPlayer   a GTP engine as a Player: its own process started from a command
            line, or ``GtpPlayer.attach(proc)`` for a ``GtpProcess`` the
            caller owns. Each command waits in a thread, so other games go on.
referee     our own ``Game`` (area scoring, positional superko): every move is
            checked on it before the opponent hears it.
clock       optional sudden death, ``main_time`` seconds per colour (colours
            absent from it are untimed): the wall time of each ``genmove``,
            with ``time_left`` sent before it. Running out loses on time.
forfeit     what an illegal move (or an answer naming no vertex) does: with
            ``forfeit=True``, or a set of colours holding the mover's, the
            mover loses (``B+F`` / ``W+F``); otherwise it is a bug in a
            player and raises. ``match`` forfeits the GTP engines' (an
            engine may not know positional superko: GNU Go repeats a
            position now and then), never our own engine's.
opening     actions played before the players are asked for a move (each
            player hears them through ``play``): the varied openings of a
            match.
scoring     how two passes are counted (docs/rating.md):
            ``tromp-taylor`` counts the board as it stands (every stone
            alive); ``agreed`` first asks each player for its dead stones
            (``dead_stones``: GTP ``final_status_list dead``; a player
            without an opinion answers None). No stone named dead: the board
            is counted. Every player named the same stones: they are removed
            and the rest is counted (``agreed dead stones``). Otherwise play
            goes on ("play-on", once): the passes are forgotten and the game
            continues under Tromp-Taylor until two more passes, so a stone
            called dead must be captured to stop counting; then the board
            is counted as it stands (``play-on``) unless the players now
            agree. GNU Go removes its opponent's dead stones in play-on when
            started with ``--capture-all-dead``.
GameRecord  the game, its moves as (colour, action), the result string
            (``B+3.5``, ``W+R``, ``B+T``, ``W+F``, ``0`` for jigo), the reason
            it ended (``two passes``, ``agreed dead stones``, ``play-on``,
            ``resignation``, ``time``, ``illegal move ...``, ``move
            limit``), black's score (area less komi when the board was
            counted, +1/-1 for any other win), the dead stones removed
            before counting, the time each side spent and its longest move,
            and the SGF.
"""
from __future__ import annotations

import asyncio
import shlex
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..go import board as B
from ..go.coords import VertexError, action_to_vertex, vertex_to_action
from ..go.game import Game
from ..go.scoring import area_score, result_string
from ..go.sgf import SgfInfo, dump_sgf, set_up_position
from .gtpclient import GtpFailure, GtpProcess

__all__ = ["SCORINGS", "GameRecord", "GtpPlayer", "Player", "area_score_without", "referee_game"]

SCORINGS = ("agreed", "tromp-taylor")

COLOR_NAMES = {B.BLACK: "b", B.WHITE: "w"}


class Player(ABC):
    name: str = "player"

    async def start(self, size: int, komi: float) -> None:
        """A new game: clear the board."""

    async def time_settings(self, main_time: float) -> None:
        """This game is sudden death with ``main_time`` seconds for us."""

    async def time_left(self, color: int, seconds: float) -> None:
        """Our clock before our next move."""

    async def play(self, color: int, action: int, size: int) -> None:
        """The opponent played ``action``."""

    @abstractmethod
    async def genmove(self, game: Game) -> int:
        """Our move in ``game`` (which holds the whole history): an action, or
        -1 to resign; VertexError when the answer names no point."""

    async def dead_stones(self, game: Game) -> list[int] | None:
        """The stones this player holds dead at the end of ``game`` (actions),
        or None for no opinion."""
        return None

    async def close(self) -> None:
        pass


class GtpPlayer(Player):
    """An engine speaking GTP on its stdin/stdout, through the project's GTP
    client; ``timeout`` bounds each answer (``genmove`` included)."""

    def __init__(self, command: str, timeout: float = 600.0) -> None:
        self.command = command[4:] if command.startswith("gtp:") else command
        self.name = Path(shlex.split(self.command)[0]).name
        self.timeout = timeout
        self.proc: GtpProcess | None = None

    @classmethod
    def attach(cls, proc: GtpProcess, timeout: float = 600.0) -> "GtpPlayer":
        """A player over a running process (``close`` would end it)."""
        p = cls(shlex.join(proc.argv), timeout)
        p.name, p.proc = proc.name, proc
        return p

    def fork(self) -> "GtpPlayer":
        """A player for one more concurrent game: its own process, the same name."""
        p = GtpPlayer(self.command, self.timeout)
        p.name = self.name
        return p

    async def send(self, cmd: str) -> str:
        assert self.proc is not None
        try:
            return await asyncio.to_thread(self.proc.send, cmd, self.timeout)
        except GtpFailure as e:
            raise GtpFailure(f"GTP engine {self.name!r} refused {cmd!r}: {e}") from None
        except EOFError as e:
            raise GtpFailure(f"GTP engine {self.name!r} ended after {cmd!r}: {e}") from None
        except TimeoutError as e:
            raise GtpFailure(f"GTP engine {self.name!r} did not answer {cmd!r}: {e}") from None

    async def start(self, size: int, komi: float) -> None:
        if self.proc is None:
            self.proc = GtpProcess(shlex.split(self.command), name=self.name)
        await self.send(f"boardsize {size}")
        await self.send("clear_board")
        await self.send(f"komi {komi:g}")

    async def time_settings(self, main_time: float) -> None:
        await self.send(f"time_settings {main_time:g} 0 0")

    async def time_left(self, color: int, seconds: float) -> None:
        await self.send(f"time_left {COLOR_NAMES[color]} {seconds:.3f} 0")

    async def play(self, color: int, action: int, size: int) -> None:
        await self.send(f"play {COLOR_NAMES[color]} {action_to_vertex(action, size)}")

    async def genmove(self, game: Game) -> int:
        reply = (await self.send(f"genmove {COLOR_NAMES[game.to_move]}")).lower()
        if reply == "resign":
            return -1
        return vertex_to_action(reply, game.size)

    async def dead_stones(self, game: Game) -> list[int] | None:
        """``final_status_list dead``; None when the engine does not know it
        or names no vertex of the board."""
        assert self.proc is not None
        try:
            reply = await asyncio.to_thread(self.proc.send, "final_status_list dead", self.timeout)
        except GtpFailure:
            return None
        try:
            return sorted({vertex_to_action(v, game.size) for v in reply.split()} - {game.pass_action})
        except VertexError:
            return None

    async def close(self) -> None:
        if self.proc is not None:
            proc, self.proc = self.proc, None
            await asyncio.to_thread(proc.close, 5.0)


@dataclass
class GameRecord:
    game: Game
    black: str = ""
    white: str = ""
    moves: list[tuple[int, int]] = field(default_factory=list)
    result: str = ""
    reason: str = ""
    score: float = 0.0
    time_used: dict[int, float] = field(default_factory=lambda: {B.BLACK: 0.0, B.WHITE: 0.0})
    max_move_time: dict[int, float] = field(default_factory=lambda: {B.BLACK: 0.0, B.WHITE: 0.0})
    dead: list[int] = field(default_factory=list)  # stones removed before counting (agreed)

    @property
    def sgf(self) -> str:
        return dump_sgf(self.game, SgfInfo(black=self.black, white=self.white), result=self.result)

    def win(self, color: int, how: str, reason: str) -> "GameRecord":
        """``color`` wins by ``how`` (``R``, ``T`` or ``F``)."""
        self.result, self.reason = f"{'BW'[color - 1]}+{how}", reason
        self.score = 1.0 if color == B.BLACK else -1.0
        return self

    def counted(self, reason: str) -> "GameRecord":
        """The board as it stands decides."""
        self.result, self.reason, self.score = self.game.result(), reason, self.game.score()
        return self

    def counted_without(self, dead: list[int], reason: str) -> "GameRecord":
        """The board less the ``dead`` stones decides."""
        self.dead = list(dead)
        self.score = area_score_without(self.game, dead)
        self.result, self.reason = result_string(self.score), reason
        return self


def area_score_without(game: Game, dead: list[int]) -> float:
    """Black's area score less komi of ``game``'s board with the stones on
    ``dead`` taken off (Tromp-Taylor on what remains)."""
    stones = game.stones().reshape(-1)
    gone = set(dead)
    black = [int(a) for a in np.flatnonzero(stones == B.BLACK) if int(a) not in gone]
    white = [int(a) for a in np.flatnonzero(stones == B.WHITE) if int(a) not in gone]
    board = Game(game.size, game.komi)
    set_up_position(board, black, white)
    return area_score(board.rec, game.komi)


async def _agreed_dead(players: dict[int, Player], game: Game) -> tuple[bool, list[int]]:
    """(agreed, dead): every player named the same dead stones, or nobody
    named any (then ``dead`` is empty and agreed is True)."""
    opinions = [await p.dead_stones(game) for p in players.values()]
    named = [o for o in opinions if o]
    if not named:
        return True, []
    if all(o is not None and sorted(o) == sorted(named[0]) for o in opinions):
        return True, sorted(named[0])
    return False, []


def _forfeits(forfeit: bool | set[int], color: int) -> bool:
    """Whether an illegal move of ``color`` loses the game (module docstring)."""
    return forfeit is True or (isinstance(forfeit, set) and color in forfeit)


async def referee_game(
    black: Player,
    white: Player,
    size: int,
    komi: float,
    *,
    max_moves: int | None = None,
    main_time: dict[int, float] | None = None,
    forfeit: bool | set[int] = False,
    opening: list[int] | None = None,
    scoring: str = "tromp-taylor",
) -> GameRecord:
    """Play one game to two passes, a resignation, a loss on time, a forfeit
    or ``max_moves`` moves (default ``2 * size * size``; the board is counted
    then). ``main_time``: sudden-death seconds per colour; ``opening``:
    actions played first; ``scoring``: one of ``SCORINGS`` (module doc)."""
    if scoring not in SCORINGS:
        raise ValueError(f"scoring {scoring!r} is not one of {', '.join(SCORINGS)}")
    players = {B.BLACK: black, B.WHITE: white}
    main_time = main_time or {}
    for c, p in players.items():
        await p.start(size, komi)
        if c in main_time:
            await p.time_settings(main_time[c])
    rec = GameRecord(Game(size, komi), black.name, white.name)
    game = rec.game
    limit = 2 * size * size if max_moves is None else max_moves
    for action in opening or ():
        color = game.to_move
        game.play(action)  # IllegalMove for a bad opening: the caller's bug
        rec.moves.append((color, action))
        for p in players.values():
            await p.play(color, action, size)
    resumed = False  # play-on has begun
    while True:
        color = game.to_move
        other = B.WHITE if color == B.BLACK else B.BLACK
        me = players[color]
        if color in main_time:
            await me.time_left(color, max(0.0, main_time[color] - rec.time_used[color]))
        t0 = time.monotonic()
        try:
            action: int | None = await me.genmove(game)
        except VertexError as e:
            if not _forfeits(forfeit, color):
                raise
            action, garbled = None, f"illegal move: {e}"
        spent = time.monotonic() - t0
        rec.time_used[color] += spent
        rec.max_move_time[color] = max(rec.max_move_time[color], spent)
        if color in main_time and rec.time_used[color] > main_time[color]:
            return rec.win(other, "T", "time")
        if action is None:
            return rec.win(other, "F", garbled)
        if action < 0:
            return rec.win(other, "R", "resignation")
        illegal = game.why_illegal(action)
        if illegal is not None:
            where = action_to_vertex(action, size) if 0 <= action <= size * size else f"action {action}"
            if not _forfeits(forfeit, color):
                raise RuntimeError(f"{me.name} played an illegal move {where} ({illegal})")
            return rec.win(other, "F", f"illegal move {where}: {illegal}")
        game.play(action)
        rec.moves.append((color, action))
        await players[other].play(color, action, size)
        if game.is_over():
            if scoring == "tromp-taylor":
                return rec.counted("two passes")
            agreed, dead = await _agreed_dead(players, game)
            if agreed:
                return rec.counted_without(dead, "agreed dead stones") if dead else rec.counted(
                    "play-on" if resumed else "two passes")
            if resumed:
                return rec.counted("play-on")
            resumed = True
            game.resume()
            limit = max(limit, len(game.moves) + size * size)
        if len(rec.moves) >= limit:
            return rec.counted("move limit")
