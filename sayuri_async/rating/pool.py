"""The round robin of a rating pool: its schedule, its games recorded as they finish, resuming.

Vocabulary
----------
pair        two players, named in sorted order (``x`` < ``y``), so the
            order of the pool file does not change a game's identity.
game        game k of a pair: x has black when k is even; it opens with
            opening ``k // 2`` of ``match.match_openings(games / 2,
            random_opening, seed)``, the same openings for every pair
            (colours swapped within each pair of games). Its identity is
            ``(x, y, k)``; ``match.play_game`` plays it.
schedule    every pair's game 0, then every pair's game 1, ...: stopped at
            any point, every pair has played about as many games as the
            others. A pair plays ``games`` games unless ``pair_games`` (the
            pool file's ``[[pair]]`` tables) gives its own number, 0 leaving
            it out: its rounds go on after the others' end.
record      ``GameResult``: x's score (1, 0.5, 0), the result string, how it
            ended, each side's moves and seconds choosing them (openings
            excluded). The pool's JSON holds them all (``Record``).
resume      ``Record.load`` reads an earlier JSON of the pool: games whose
            identity the schedule holds are not played again. The JSON must
            have the same game settings (board, komi, openings, scoring),
            and every player it shares with the pool the same identity
            (network, search, playouts, tree reuse; or the command line):
            anything else is refused in one line (``PoolMismatch``) unless
            ``--fresh``. Games of players no longer in the pool stay in the
            file and are left out of the fit; more games a pair, or a new
            player, only add games.
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .match import GameOutcome, Player, match_openings, play_game
from ..usererror import UserError

__all__ = ["GameResult", "PoolMismatch", "Record", "play_pool", "schedule"]


class PoolMismatch(UserError):
    """An earlier record of other settings or other players (the message names the file)."""


@dataclass
class GameResult:
    x: str
    y: str
    k: int
    score: float  # x's: 1 a win, 0.5 a draw, 0 a loss
    result: str  # ``B+3.5``, ``W+R`` ...
    reason: str
    x_moves: int
    x_seconds: float
    y_moves: int
    y_seconds: float

    @property
    def key(self) -> tuple[str, str, int]:
        return self.x, self.y, self.k

    @classmethod
    def from_outcome(cls, x: str, y: str, k: int, g: GameOutcome) -> "GameResult":
        score = {"W": 1.0, "L": 0.0, "D": 0.5}[g.result]
        return cls(x, y, k, score, g.record, g.reason, g.a_moves, round(g.a_seconds, 4), g.b_moves,
                   round(g.b_seconds, 4))


def schedule(names: list[str], games: int,
             pair_games: dict[tuple[str, str], int] | None = None) -> list[tuple[str, str, int]]:
    """Every pair's game 0, then every pair's game 1, ... (module docstring)."""
    ordered = sorted(names)
    own = pair_games or {}
    counts = {(x, y): own.get((x, y), games) for i, x in enumerate(ordered) for y in ordered[i + 1:]}
    rounds = max(counts.values(), default=0)
    return [(x, y, k) for k in range(rounds) for (x, y), n in counts.items() if k < n]


@dataclass
class Record:
    settings: dict  # the game settings (``PoolConfig.game_settings``)
    players: dict[str, dict]  # name -> identity (and its description), every player that has games here
    games: dict[tuple[str, str, int], GameResult] = field(default_factory=dict)

    def add(self, g: GameResult) -> None:
        self.games[g.key] = g

    def to_json(self) -> dict:
        return {"settings": self.settings, "players": self.players,
                "games": [asdict(g) for _, g in sorted(self.games.items())]}

    @classmethod
    def load(cls, path: Path, settings: dict, players: dict[str, dict]) -> "Record":
        """The record at ``path`` merged with this pool's ``players``
        (name -> identity), or a fresh one when there is no file;
        PoolMismatch naming the file otherwise (module docstring)."""
        if not path.is_file():
            return cls(settings, dict(players))
        try:
            old = json.loads(path.read_text())
            old_settings = old["settings"]
            old_players = {str(k): dict(v) for k, v in old["players"].items()}
            games = [GameResult(**g) for g in old["games"]]
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise PoolMismatch(f"--out {path}: not a rating pool's JSON ({type(e).__name__}: {e}); "
                               f"move it away or give --fresh") from None
        differ = [k for k in settings if old_settings.get(k) != settings[k]]
        if differ:
            raise PoolMismatch(f"--out {path}: holds games of other settings ({', '.join(differ)} differ); "
                               f"give another --out or --fresh to start over")
        for name, ident in players.items():
            was = old_players.get(name)
            if was is not None and {k: v for k, v in was.items() if k != "describe"} != \
                    {k: v for k, v in ident.items() if k != "describe"}:
                raise PoolMismatch(f"--out {path}: player {name!r} played its games there as {was.get('describe')}, "
                                   f"not {ident.get('describe')}; rename it, give another --out or --fresh")
        rec = cls(settings, {**old_players, **players})
        for g in games:
            rec.add(g)
        return rec


async def play_pool(players: dict[str, Player], record: Record, games: int, concurrency: int,
                    on_game: Callable[[GameResult], None] | None = None,
                    play: Callable[..., Awaitable[GameOutcome]] | None = None,
                    pair_games: dict[tuple[str, str], int] | None = None, sgf_dir: Path | None = None) -> int:
    """Play every game of the schedule of ``players`` (``games`` a pair, or
    ``pair_games``' own) that ``record`` lacks, ``concurrency`` at once,
    adding each to ``record`` and calling ``on_game`` as it finishes; the
    number of games played. ``play``: the game player (default
    ``match.play_game``, or one of its signature). With ``sgf_dir`` each
    game is saved there as ``<X>-vs-<Y>-<k>.sgf`` (``match.play_game``)."""
    play = play or play_game
    s = record.settings
    planned = schedule(list(players), games, pair_games)
    todo = [key for key in planned if key not in record.games]
    rounds = max((k + 1 for _, _, k in planned), default=0)
    openings = match_openings((rounds + 1) // 2, s["board"], s["random_opening"], s["seed"])
    sem = asyncio.Semaphore(concurrency)

    async def one(x: str, y: str, k: int) -> None:
        async with sem:
            g = await play(players[x], players[y], k, openings[k // 2], s["board"], s["komi"], s["scoring"], sgf_dir)
            result = GameResult.from_outcome(x, y, k, g)
            record.add(result)
            if on_game is not None:
                on_game(result)

    tasks = [asyncio.ensure_future(one(*key)) for key in todo]
    try:
        await asyncio.gather(*tasks)
    finally:  # an error (or a stop) in one game ends the others, which stay unrecorded
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return len(todo)
