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
GamePlan     what is drawn once a game: komi (with its jitter), how many
             opening moves are sampled, when pass becomes a root choice, the
             move cap, and whether a would-be resignation is played out (the
             check of the resignation threshold).
MoveSearch   what is drawn each move: the playout budget (full or reduced:
             a reduced search's policy is not a training target), PUCT or
             Gumbel, temperature, root noise, whether pass may be chosen.
Resignation  consecutive searches of one colour under the resignation
             threshold; ``would_resign`` is the first colour that reached
             ``resign_consecutive`` of them.
Controls     what the caller lets a game ask between moves: ``stopped()``
             (give the game up) and ``gate()`` (wait while paused).
play_game    ``await play_game(...)`` plays one game to two passes, a
             resignation or the move cap, searching every move through the
             batcher: per move, draw a ``MoveSearch``, search, record the
             position, play, then look at resignation.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from ..encoders import get_encoder
from ..go import board as B
from ..go.game import Game
from ..go.scoring import ownership, result_string
from ..search.mcts import Search, SearchResult
from ..search.value import winrate
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
    game: Game | None = None
    networks: list = field(default_factory=list)  # the NetworkIds it was played with, in order (engine.py)

    def __len__(self) -> int:
        return len(self.action)

    def add_position(self, planes: np.ndarray, res: SearchResult, move: "MoveSearch", to_move: int,
                     after_resign: bool) -> None:
        """The position just searched: its packed planes ``[C, ceil(N*N/8)]``
        and the search's targets (a reduced search's policy is all zeros:
        no policy target)."""
        self.planes.append(planes)
        self.policy.append(res.policy if not move.reduced else np.zeros_like(res.policy))
        self.action.append(res.action)
        self.to_move.append(to_move)
        self.full_search.append(not move.reduced)
        self.after_resign.append(after_resign)
        self.root_value.append(winrate(res.value))

    def finish(self, game: Game, resigned: int) -> None:
        """Score the final position; ``resigned``: the colour that resigned
        (0: the game was played to its end)."""
        self.game = game
        score = game.score()
        self.ownership = ownership(game.rec)
        if resigned:
            winner_sign = -1.0 if resigned == B.BLACK else 1.0
            self.result = "W+R" if resigned == B.BLACK else "B+R"
            # a resigned game's score target: the count of the position
            # reached, forced to agree with the resignation's winner
            self.score = winner_sign * max(abs(score), 0.5)
        else:
            self.score = score
            self.result = result_string(score)


@dataclass
class LiveGame:
    """What the TUI shows about a game in progress."""

    size: int
    move: int = 0
    playouts: int = 0
    value: float = 0.0  # winrate of the side to move at the last search


@dataclass(frozen=True)
class GamePlan:
    komi: float
    random_moves: int  # moves sampled by visits (temperature 1) at the start
    pass_after: int  # moves before pass is a root choice
    max_moves: int
    play_out: bool  # play on after a would-be resignation

    @classmethod
    def draw(cls, cfg: SelfplayConfig, rng: np.random.Generator, size: int) -> "GamePlan":
        komi = cfg.komi + (float(rng.normal(0.0, cfg.komi_stddev)) if cfg.komi_stddev > 0 else 0.0)
        area = size * size
        return cls(
            komi=round(komi * 2) / 2,
            random_moves=int(cfg.random_moves_factor * area),
            pass_after=int(cfg.pass_after_factor * area),
            max_moves=int(cfg.search.max_moves_factor * area),
            play_out=cfg.resign_discard_prob > 0 and rng.random() < cfg.resign_discard_prob,
        )


@dataclass(frozen=True)
class MoveSearch:
    playouts: int
    reduced: bool  # a cheap search (playout cap randomisation): no policy target
    use_gumbel: bool
    temperature: float
    noise: bool  # Dirichlet noise at the root
    allow_pass: bool

    @classmethod
    def draw(cls, cfg: SelfplayConfig, plan: GamePlan, rng: np.random.Generator, moves_played: int) -> "MoveSearch":
        reduced = cfg.reduce_playouts > 0 and rng.random() < cfg.reduce_playouts_prob
        playouts = cfg.reduce_playouts if reduced else cfg.playouts
        use_gumbel = cfg.gumbel and playouts < max(cfg.gumbel_playouts_threshold, 1)
        return cls(
            playouts=playouts,
            reduced=reduced,
            use_gumbel=use_gumbel,
            temperature=1.0 if (moves_played < plan.random_moves and not use_gumbel) else 0.0,
            noise=cfg.dirichlet_noise and not reduced and not use_gumbel,
            allow_pass=moves_played >= plan.pass_after,
        )


class Resignation:
    def __init__(self, threshold: float, consecutive: int) -> None:
        self.threshold = threshold  # 0: never resign
        self.consecutive = consecutive
        self.low_streak = {B.BLACK: 0, B.WHITE: 0}
        self.would_resign = 0  # colour (0: none yet)

    def see(self, to_move: int, winrate: float) -> bool:
        """One search's winrate for ``to_move``; True when it makes
        ``to_move`` the colour that would resign."""
        if self.threshold <= 0 or self.would_resign:
            return False
        self.low_streak[to_move] = self.low_streak[to_move] + 1 if winrate < self.threshold else 0
        if self.low_streak[to_move] >= self.consecutive:
            self.would_resign = to_move
            return True
        return False


class Controls(Protocol):
    def stopped(self) -> bool:
        """Give the game up now (the engine stops)."""
        ...

    async def gate(self) -> None:
        """Return when the game may go on (waits while paused)."""
        ...


async def play_game(
    cfg: SelfplayConfig,
    search: Search,
    batcher,
    rng: np.random.Generator,
    size: int,
    encoder: str,
    live: LiveGame | None = None,
    controls: Controls | None = None,
) -> GameRecord | None:
    """Play one game. Returns None when ``controls.stopped()`` became true
    mid-game."""
    plan = GamePlan.draw(cfg, rng, size)
    game = Game(size, plan.komi, undo_stack=False)  # self-play never takes a move back
    search.reset()
    enc = get_encoder(encoder)
    planes = np.zeros((enc.planes, size, size), dtype=np.uint8)  # [C, N, N]
    rec = GameRecord(size, plan.komi)
    resignation = Resignation(cfg.resign_threshold, cfg.resign_consecutive)
    counters = batcher.counters
    while not game.is_over() and len(game.moves) < plan.max_moves:
        if controls is not None:
            await controls.gate()
            if controls.stopped():
                return None
        move = MoveSearch.draw(cfg, plan, rng, len(game.moves))
        res = await search.run(game, batcher, move.playouts, noise=move.noise, use_gumbel=move.use_gumbel,
                               temperature=move.temperature, full_search=not move.reduced,
                               allow_pass=move.allow_pass)
        to_move = game.to_move
        enc.encode_into(game.arr, planes)
        rec.add_position(np.packbits(planes.reshape(enc.planes, -1), axis=-1), res, move, to_move,
                         after_resign=resignation.would_resign != 0)
        game.play(res.action)
        game.comments[-1] = (f"visits {int(res.visits.sum())} winrate {winrate(res.value):.3f}"
                             + (" (fast)" if move.reduced else ""))
        counters.moves += 1
        if live is not None:
            live.move = len(game.moves)
            live.playouts = res.playouts
            live.value = winrate(res.value)
        if resignation.see(to_move, winrate(res.value)) and not plan.play_out:
            break
    rec.finish(game, resignation.would_resign if not plan.play_out else 0)
    counters.games += 1
    counters.positions += len(rec)
    return rec
