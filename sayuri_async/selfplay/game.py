"""One self-play game as a coroutine, and the record it leaves.

Vocabulary
----------
GameRecord   what a finished game hands to the writer: per position the
             bit-packed input planes, policy target, action played, side to
             move, whether it was a full search, whether it came after a
             would-be resignation, and the root value; per game the final
             score (black's view, komi included), the ownership map (black's
             view) and whether it is known (``ownership_known``: false for a
             game whose final board does not show who owns what, e.g. an
             imported record that ended by resignation), the result string,
             and the Game itself for SGF.
play_game    ``await play_game(...)`` plays one game to two passes, a
             resignation or the move cap, searching every move through the
             batcher.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..features import get_encoder
from ..go import board as B
from ..go.game import Game, IllegalMove
from ..go.scoring import ownership, result_string
from ..search.mcts import Search
from .config import SelfplayConfig


@dataclass
class GameRecord:
    size: int
    komi: float
    planes: list[np.ndarray] = field(default_factory=list)  # each [C, ceil(N*N/8)] uint8
    policy: list[np.ndarray] = field(default_factory=list)  # each [A] float32
    action: list[int] = field(default_factory=list)
    to_move: list[int] = field(default_factory=list)
    full_search: list[bool] = field(default_factory=list)
    after_resign: list[bool] = field(default_factory=list)
    root_value: list[float] = field(default_factory=list)
    score: float = 0.0  # black's view, komi included
    ownership: np.ndarray | None = None  # [N*N] black's view
    ownership_known: bool = True  # False: the ownership target is masked (ownership_mask)
    result: str = ""
    resigned_by: int = 0  # colour that resigned (0: none)
    game: Game | None = None

    def __len__(self) -> int:
        return len(self.action)


@dataclass
class LiveGame:
    """What the TUI shows about a game in progress."""

    size: int
    move: int = 0
    playouts: int = 0
    value: float = 0.0  # winrate of the side to move at the last search


async def play_game(
    cfg: SelfplayConfig,
    search: Search,
    batcher,
    rng: np.random.Generator,
    size: int,
    encoder: str,
    live: LiveGame | None = None,
    stop=None,
    gate=None,
) -> GameRecord | None:
    """Play one game. Returns None when ``stop()`` became true mid-game."""
    komi = cfg.komi + (float(rng.normal(0.0, cfg.komi_stddev)) if cfg.komi_stddev > 0 else 0.0)
    komi = round(komi * 2) / 2
    game = Game(size, komi, undo_stack=False)  # self-play never takes a move back
    search.reset()
    enc = get_encoder(encoder)
    planes = np.zeros((enc.planes, size, size), dtype=np.uint8)
    rec = GameRecord(size, komi)
    random_moves = int(cfg.random_moves_factor * size * size)
    pass_after = int(cfg.pass_after_factor * size * size)
    max_moves = int(cfg.search.max_moves_factor * size * size)
    play_out = cfg.resign_discard_prob > 0 and rng.random() < cfg.resign_discard_prob
    low_streak = {B.BLACK: 0, B.WHITE: 0}
    would_resign = 0
    counters = batcher.counters
    while not game.is_over() and len(game.moves) < max_moves:
        if gate is not None:
            await gate()
        if stop is not None and stop():
            return None
        reduced = cfg.reduce_playouts > 0 and rng.random() < cfg.reduce_playouts_prob
        playouts = cfg.reduce_playouts if reduced else cfg.playouts
        use_gumbel = cfg.gumbel and playouts < max(cfg.gumbel_playouts_threshold, 1)
        temperature = 1.0 if (len(game.moves) < random_moves and not use_gumbel) else 0.0
        res = await search.run(
            game,
            batcher,
            playouts,
            noise=cfg.dirichlet_noise and not reduced and not use_gumbel,
            use_gumbel=use_gumbel,
            temperature=temperature,
            full_search=not reduced,
            allow_pass=len(game.moves) >= pass_after,
        )
        action = res.action
        to_move = game.to_move
        enc.encode_into(game.arr, planes)
        rec.planes.append(np.packbits(planes.reshape(enc.planes, -1), axis=-1))
        rec.policy.append(res.policy if not reduced else np.zeros_like(res.policy))
        rec.action.append(action)
        rec.to_move.append(to_move)
        rec.full_search.append(not reduced)
        rec.after_resign.append(would_resign != 0)
        rec.root_value.append((res.value + 1.0) / 2.0)
        winrate = (res.value + 1.0) / 2.0
        try:
            game.play(action)
        except IllegalMove:  # an unvisited superko move picked by Gumbel: the best legal one
            mask = game.legal_actions().astype(bool)
            action = int(np.argmax(np.where(mask, res.visits + res.prior, -1.0)))
            rec.action[-1] = action
            game.play(action)
        game.comments[-1] = f"visits {int(res.visits.sum())} winrate {winrate:.3f}" + ("" if not reduced else " (fast)")
        counters.moves += 1
        if live is not None:
            live.move = len(game.moves)
            live.playouts = res.playouts
            live.value = winrate
        if cfg.resign_threshold > 0 and would_resign == 0:
            low_streak[to_move] = low_streak[to_move] + 1 if winrate < cfg.resign_threshold else 0
            if low_streak[to_move] >= cfg.resign_consecutive:
                would_resign = to_move
                if not play_out:
                    break
    rec.game = game
    score = game.score()
    rec.ownership = ownership(game.rec)
    if would_resign and not play_out:
        rec.resigned_by = would_resign
        winner_sign = -1.0 if would_resign == B.BLACK else 1.0
        rec.result = ("W+R" if would_resign == B.BLACK else "B+R")
        # a resigned game's score target: the count of the position reached,
        # forced to agree with the resignation's winner
        rec.score = winner_sign * max(abs(score), 0.5)
    else:
        rec.score = score
        rec.result = result_string(score)
    counters.games += 1
    counters.positions += len(rec)
    return rec
