"""A small GTP match runner: referee a game between two engine subprocesses.

Vocabulary
----------
GtpProcess   one engine subprocess (``sayuri_async/rating/gtpclient.py``), owned by
             the caller: ``play_game`` neither starts nor ends it.
play_game    the synchronous face of the project's one game loop
             (``sayuri_async/rating/referee.py``, where the rules, the clock and
             forfeits live): illegal moves forfeit, the move limit defaults
             to ``4 * size * size``, and afterwards both engines are asked
             for their own ``final_score``.
GameRecord   the referee's record (moves, ``result`` such as ``B+3.5``,
             ``W+R``, ``B+T``, ``W+F`` or ``0``, ``reason``, ``time_used``,
             ``max_move_time``, ``sgf``) plus ``final_scores``: each
             engine's answer by name (``? why`` when it gave none).
clock        optional sudden death: ``main_time`` seconds per side, measured
             by the referee as the wall time of each ``genmove``;
             ``time_left`` is sent before every ``genmove``. Running out
             loses on time.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from sayuri_async.rating import referee
from sayuri_async.rating.gtpclient import GtpFailure, GtpProcess

__all__ = ["GameRecord", "GtpFailure", "GtpProcess", "play_game"]


@dataclass
class GameRecord(referee.GameRecord):
    final_scores: dict[str, str] = field(default_factory=dict)


def play_game(
    black: GtpProcess,
    white: GtpProcess,
    *,
    size: int = 9,
    komi: float = 7.5,
    max_moves: int | None = None,
    main_time: dict[int, float] | None = None,
    move_timeout: float = 120.0,
) -> GameRecord:
    """Play one game to its end and return the record. ``main_time`` gives
    sudden-death seconds per colour (colours absent from it are untimed);
    ``move_timeout`` bounds every answer. Not for use inside a running event
    loop (await ``referee.referee_game`` there)."""
    limit = max_moves if max_moves is not None else 4 * size * size
    players = [referee.GtpPlayer.attach(p, move_timeout) for p in (black, white)]
    played = asyncio.run(referee.referee_game(*players, size, komi, max_moves=limit,
                                              main_time=main_time, forfeit=True))
    rec = GameRecord(**vars(played))
    for p in (black, white):
        try:
            rec.final_scores[p.name] = p.send("final_score", timeout=move_timeout)
        except (GtpFailure, TimeoutError, EOFError) as e:
            rec.final_scores[p.name] = f"? {e}"
    return rec
