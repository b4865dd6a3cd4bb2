"""A small GTP match runner: drive engine subprocesses and referee a game.

Vocabulary
----------
GtpProcess   one engine subprocess (``sayuri_async/gtpclient.py``).
referee      our own ``Game`` (area scoring, positional superko): every move an
             engine generates is checked on it before the opponent hears it.
GameRecord   the moves, how the game ended (``two passes``, ``resignation``,
             ``time``, ``illegal move``, ``move limit``), the result string
             (``B+3.5``, ``W+R``, ``B+T``, ``W+F`` for a forfeit by an illegal
             move, ``0`` for jigo), both engines' own ``final_score`` answers,
             the time each side spent, and the SGF.
clock        optional sudden death: ``main_time`` seconds per side, measured
             here as the wall time of each ``genmove``; ``time_left`` is sent
             before every ``genmove``. Running out loses on time.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from sayuri_async.go.coords import VertexError, action_to_vertex, vertex_to_action
from sayuri_async.go.game import Game, IllegalMove
from sayuri_async.go.sgf import SgfInfo, dump_sgf
from sayuri_async.gtpclient import GtpFailure, GtpProcess

__all__ = ["GameRecord", "GtpFailure", "GtpProcess", "play_game"]

COLOR_NAMES = {1: "b", 2: "w"}


@dataclass
class GameRecord:
    moves: list[tuple[int, int]] = field(default_factory=list)
    result: str = ""
    reason: str = ""
    final_scores: dict[str, str] = field(default_factory=dict)
    time_used: dict[int, float] = field(default_factory=lambda: {1: 0.0, 2: 0.0})
    max_move_time: dict[int, float] = field(default_factory=lambda: {1: 0.0, 2: 0.0})
    sgf: str = ""


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
    sudden-death seconds per colour (colours absent from it are untimed)."""
    players = {1: black, 2: white}
    main_time = main_time or {}
    for c, p in players.items():
        p.send(f"boardsize {size}")
        p.send("clear_board")
        p.send(f"komi {komi:g}")
        if c in main_time:
            p.send(f"time_settings {main_time[c]:g} 0 0")
    game = Game(size, komi)
    rec = GameRecord()
    limit = max_moves if max_moves is not None else 4 * size * size
    while True:
        color = game.to_move
        other = 3 - color
        mover = players[color]
        if color in main_time:
            left = max(0.0, main_time[color] - rec.time_used[color])
            mover.send(f"time_left {COLOR_NAMES[color]} {left:.3f} 0")
        t0 = time.monotonic()
        answer = mover.send(f"genmove {COLOR_NAMES[color]}", timeout=move_timeout)
        spent = time.monotonic() - t0
        rec.time_used[color] += spent
        rec.max_move_time[color] = max(rec.max_move_time[color], spent)
        winner = "BW"[other - 1]
        if color in main_time and rec.time_used[color] > main_time[color]:
            rec.result, rec.reason = f"{winner}+T", "time"
            break
        if answer.strip().lower() == "resign":
            rec.result, rec.reason = f"{winner}+R", "resignation"
            break
        try:
            action = vertex_to_action(answer, size)
            game.play(action, color)
        except (VertexError, IllegalMove) as e:
            rec.result, rec.reason = f"{winner}+F", f"illegal move {answer!r}: {e}"
            break
        rec.moves.append((color, action))
        players[other].send(f"play {COLOR_NAMES[color]} {action_to_vertex(action, size)}")
        if game.is_over():
            rec.result, rec.reason = game.result(), "two passes"
            break
        if len(rec.moves) >= limit:
            rec.result, rec.reason = game.result(), "move limit"
            break
    for c, p in players.items():
        try:
            rec.final_scores[p.name] = p.send("final_score", timeout=move_timeout)
        except (GtpFailure, TimeoutError, EOFError) as e:
            rec.final_scores[p.name] = f"? {e}"
    rec.sgf = dump_sgf(game, SgfInfo(black=black.name, white=white.name), result=rec.result)
    return rec
