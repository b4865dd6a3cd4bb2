"""Matches between networks and GTP engines, with win rates, Elo and ratings.

Vocabulary
----------
player      a network (a weights file, or ``random`` for the random network)
            searched by our engine, or a GTP engine command line (anything
            containing a space or starting with ``gtp:``, e.g.
            ``"/usr/games/gnugo --mode gtp --level 1 --chinese-rules"``).
            A ``NetPlayer`` searches ``playouts`` new playouts a move, PUCT
            or Gumbel (``gumbel``), keeping the subtree of the moves played
            between its moves unless ``reuse_tree`` is off.
game        alternating colours: game k gives black to A when k is even
            (``play_game``: one game, as ``run_match`` and the rating pool
            play them). Played by the one game loop, ``referee.referee_game`` (where
            ``Player`` and ``GtpPlayer`` live): it ends on two passes or a
            resignation; a move cap of 2 * N*N scores the board as it
            stands; an illegal move raises. Two passes are counted by the
            ``scoring`` rule (``agreed`` by default: dead stones that both
            sides name are removed, a disagreement is played on; see
            docs/rating.md).
opening     games 2j and 2j+1 start from opening j (the same moves, colours
            swapped), ``match_openings``: ``random_opening`` random moves
            (from the third line in, legal, seeded), every opening distinct,
            so no two games of a match repeat even between deterministic
            players.
MatchResult wins, losses and draws of A against B; ``win_rate`` counts a
            draw as half; ``wilson`` its 95% interval; ``elo`` the Elo
            difference ``-400 log10(1/p - 1)`` with the error of the delta
            method; ``elo_interval`` the Elo of the Wilson bounds (finite
            unless a bound is 0 or 1); A's moves and seconds searching.
ratings     Elo of several players from all pair results (Bradley-Terry,
            fitted by minorization-maximization), the first player at 0.
resume      ``--json`` is rewritten (atomically) after every game with every
            game's figures (``per_game``): the same command run again counts
            the games it holds and plays the rest (the openings are seeded,
            so game k is the same game). A file of other settings
            (``MATCH_SETTINGS``) is refused in one line unless ``--fresh``.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..go.board import BLACK, MAX_N, MIN_N, WHITE
from ..go.game import Game
from ..go.sgf import SgfInfo, save_sgf_file
from .gtpclient import probe_engine
from .referee import SCORINGS, GtpPlayer, Player, referee_game
from ..search.value import winrate
from ..console import console as wide_console
from ..configfile import SEED_RANGE, between, from_options, require, within
from ..usererror import ArgumentParser, UserError, answered, check_device, output_file, output_folder

__all__ = ["GameOutcome", "GtpPlayer", "MatchResult", "NetPlayer", "Player", "elo_from_rate", "elo_of_rate",
           "make_player", "main", "match_openings", "play_game", "print_result", "ratings", "run_match"]

Z95 = 1.959964


# ---------------------------------------------------------------------------
# statistics


@dataclass
class MatchResult:
    a: str
    b: str
    wins: int = 0
    losses: int = 0
    draws: int = 0
    results: list[str] = field(default_factory=list)  # per game, A's view: "W", "L", "D"
    a_moves: int = 0  # moves A chose (openings excluded)
    a_seconds: float = 0.0  # wall time A spent choosing them
    reasons: dict[str, int] = field(default_factory=dict)  # how games ended: count per reason
    per_game: dict[int, dict] = field(default_factory=dict)  # game index -> its figures (``add_game``'s arguments)

    def add_game(self, k: int, result: str, a_moves: int, a_seconds: float, reason: str) -> None:
        """Count game ``k``: ``result`` in A's view ("W", "L", "D"), A's moves
        and seconds choosing them, how it ended."""
        if len(self.results) <= k:
            self.results.extend([""] * (k + 1 - len(self.results)))
        self.results[k] = result
        self.a_moves += a_moves
        self.a_seconds += a_seconds
        self.reasons[reason] = self.reasons.get(reason, 0) + 1
        if result == "W":
            self.wins += 1
        elif result == "L":
            self.losses += 1
        else:
            self.draws += 1
        self.per_game[k] = {"result": result, "a_moves": a_moves, "a_seconds": round(a_seconds, 4),
                            "reason": reason}

    @property
    def games(self) -> int:
        return self.wins + self.losses + self.draws

    @property
    def win_rate(self) -> float:
        return (self.wins + 0.5 * self.draws) / self.games if self.games else 0.0

    def wilson(self, z: float = Z95) -> tuple[float, float]:
        n = self.games
        if n == 0:
            return 0.0, 1.0
        p = self.win_rate
        d = 1 + z * z / n
        c = (p + z * z / (2 * n)) / d
        h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
        return max(0.0, c - h), min(1.0, c + h)

    def elo(self) -> tuple[float, float]:
        """(Elo difference of A over B, its 95% error); infinite at 0% or 100%."""
        return elo_from_rate(self.win_rate, self.games)

    def elo_interval(self, z: float = Z95) -> tuple[float, float]:
        """The Elo differences of the Wilson interval's bounds."""
        lo, hi = self.wilson(z)
        return elo_of_rate(lo), elo_of_rate(hi)

    @classmethod
    def from_row(cls, row: dict) -> "MatchResult":
        """The result a ``summary(per_game=True)`` row holds, game by game."""
        res = cls(row["a"], row["b"])
        for k, g in sorted(row.get("per_game", {}).items(), key=lambda kg: int(kg[0])):
            res.add_game(int(k), g["result"], g["a_moves"], g["a_seconds"], g["reason"])
        return res

    def summary(self, per_game: bool = False) -> dict:
        """The figures as a JSON-ready dict (infinities as None); with
        ``per_game``, every game's figures too (what a resume reads)."""
        def num(x: float) -> float | None:
            return round(x, 1) if math.isfinite(x) else None

        lo, hi = self.wilson()
        elo_lo, elo_hi = self.elo_interval()
        return {"a": self.a, "b": self.b, "games": self.games, "wins": self.wins, "losses": self.losses,
                "draws": self.draws, "win_rate": round(self.win_rate, 4), "wilson95": [round(lo, 4), round(hi, 4)],
                "elo": num(self.elo()[0]), "elo95": [num(elo_lo), num(elo_hi)],
                "seconds_per_move": round(self.a_seconds / self.a_moves, 4) if self.a_moves else None,
                "reasons": dict(sorted(self.reasons.items())),
                **({"per_game": {str(k): g for k, g in sorted(self.per_game.items())}} if per_game else {})}


def elo_of_rate(p: float) -> float:
    """``-400 log10(1/p - 1)``: -inf at 0, +inf at 1."""
    if p <= 0.0:
        return -math.inf
    if p >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / p - 1.0)


def elo_from_rate(p: float, n: int) -> tuple[float, float]:
    if n == 0:
        return 0.0, math.inf
    if p <= 0.0:
        return -math.inf, math.inf
    if p >= 1.0:
        return math.inf, math.inf
    elo = -400.0 * math.log10(1.0 / p - 1.0)
    se_p = math.sqrt(p * (1 - p) / n)
    d_elo = 400.0 / (math.log(10) * p * (1 - p))
    return elo, Z95 * d_elo * se_p


def ratings(names: list[str], results: list[MatchResult], iters: int = 2000) -> dict[str, float]:
    """Bradley-Terry Elo from pairwise results (draws count half to each);
    the first name is anchored at 0. A player with no wins (or no losses) gets
    a finite rating thanks to a tiny prior of one draw against the anchor."""
    k = len(names)
    idx = {n: i for i, n in enumerate(names)}
    w = np.zeros((k, k))  # w[i, j]: score of i against j
    for r in results:
        i, j = idx[r.a], idx[r.b]
        w[i, j] += r.wins + 0.5 * r.draws
        w[j, i] += r.losses + 0.5 * r.draws
    for i in range(1, k):  # prior: half a win each way against the anchor
        w[i, 0] += 0.5
        w[0, i] += 0.5
    n = w + w.T
    gamma = np.ones(k)
    for _ in range(iters):
        new = gamma.copy()
        for i in range(k):
            denom = sum(n[i, j] / (gamma[i] + gamma[j]) for j in range(k) if j != i and n[i, j] > 0)
            new[i] = w[i].sum() / denom if denom > 0 else gamma[i]
        new /= new[0]
        if np.allclose(new, gamma, rtol=1e-10, atol=1e-12):
            gamma = new
            break
        gamma = new
    return {name: 400.0 * math.log10(gamma[idx[name]]) for name in names}


# ---------------------------------------------------------------------------
# players


class NetPlayer(Player):
    """Our search over one network; each game gets its own Search, all share
    the network's batcher (one per board size and event loop: a player can
    play several matches, each under its own ``asyncio.run``)."""

    def __init__(self, name: str, backend, playouts: int, gumbel: bool, resign: float, batch_size: int,
                 opening_moves: int = 0, reuse_tree: bool = True) -> None:
        from ..infer.worker import Worker
        from ..search.config import SearchConfig
        from ..search.mcts import Search
        from ..search.pools import match_edges

        self.name = name
        self.opening_moves = opening_moves  # moves sampled by visits (temperature 1) for variety
        self.backend = backend
        self.playouts = playouts
        self.gumbel = gumbel
        self.resign = resign
        self.batch_size = batch_size
        self.reuse_tree = reuse_tree  # keep the searched subtree of the moves played (SearchConfig.reuse_tree)
        self._search_cls = Search
        self._cfg = SearchConfig(edge_capacity=match_edges(playouts), reuse_tree=reuse_tree)
        self._worker = Worker(name=f"match-{name}")
        self._batchers: dict[int, tuple[asyncio.AbstractEventLoop, object]] = {}  # size: (its loop, batcher)
        self.search = None
        self.batcher = None

    def fork(self) -> "NetPlayer":
        """A player for one more concurrent game, sharing network and batchers."""
        p = NetPlayer.__new__(NetPlayer)
        p.__dict__.update(self.__dict__)
        p.search = None
        p.batcher = None
        return p

    async def start(self, size: int, komi: float) -> None:
        from ..infer.batcher import Batcher

        loop = asyncio.get_running_loop()
        held = self._batchers.get(size)
        if held is not None and held[0] is loop:
            bt = held[1]
        else:  # a batcher answers on the event loop it was made on: a later asyncio.run gets its own
            bt = Batcher(self.backend, size, self.batch_size, timeout_ms=2.0, worker=self._worker)
            self._batchers[size] = (loop, bt)
        if self.batcher is not None:
            self.batcher.detach()
        self.batcher = bt
        bt.attach()
        self.search = self._search_cls(self._cfg, self.backend.encoder)

    async def genmove(self, game: Game) -> int:
        temperature = 1.0 if len(game.moves) < self.opening_moves else 0.0
        res = await self.search.run(game, self.batcher, self.playouts, use_gumbel=self.gumbel,
                                    temperature=temperature)
        if self.resign > 0 and winrate(res.value) < self.resign and len(game.moves) > game.size:
            return -1
        action = res.action
        if not game.is_legal(action):
            mask = game.legal_actions().astype(bool)
            action = int(np.argmax(np.where(mask, res.visits + res.prior, -1.0)))
        return action

    async def close(self) -> None:
        if self.batcher is not None:
            self.batcher.detach()
            self.batcher = None


def make_player(spec: str, args) -> Player:
    if spec.startswith("gtp:") or " " in spec.strip():
        probe_engine(spec[4:] if spec.startswith("gtp:") else spec)
        return GtpPlayer(spec)
    from ..backend_factory import make_backend

    weights = None if spec == "random" else spec
    if weights is not None and not Path(weights).is_file():
        raise UserError(f"player {spec!r}: neither a weights file, 'random', nor a GTP command line "
                        f"(a quoted command with its options, or gtp:COMMAND)")
    if weights is not None:
        from ..net.weights import refuse_board_sizes

        refuse_board_sizes(weights, [args.board], "--board")  # before the network is loaded
    backend = make_backend(weights, device=args.device, max_batch=args.batch_size)
    name = "random" if weights is None else Path(weights).stem
    return NetPlayer(name, backend, args.playouts, args.gumbel, args.resign, args.batch_size,
                     getattr(args, "opening_moves", 0), getattr(args, "reuse_tree", True))


# ---------------------------------------------------------------------------
# games


OPENING_TRIES = 200  # draws per opening before the openings grow a move longer


def match_openings(count: int, size: int, moves: int, seed: int) -> list[list[int]]:
    """``count`` distinct openings of ``moves`` random legal moves each, drawn
    from the third line in (the whole board below 7x7), seeded; when the
    distinct openings of that length run short, later ones get a move more."""
    if moves <= 0:
        return [[] for _ in range(count)]
    rng = np.random.default_rng(seed)
    lo, hi = (2, size - 3) if size >= 7 else (0, size - 1)
    points = [y * size + x for y in range(lo, hi + 1) for x in range(lo, hi + 1)]
    seen: set[tuple[int, ...]] = set()
    out: list[list[int]] = []
    length = moves
    while len(out) < count:
        for _ in range(OPENING_TRIES):
            game = Game(size)
            opening = []
            for _ in range(min(length, len(points))):
                legal = [a for a in points if game.is_legal(a)]
                a = int(rng.choice(legal))
                game.play(a)
                opening.append(a)
            if tuple(opening) not in seen:
                seen.add(tuple(opening))
                out.append(opening)
                break
        else:
            length += 1
    return out


@dataclass
class GameOutcome:
    """One game of A against B as a match counts it."""
    result: str  # A's view: "W", "L", "D"
    a_black: bool
    a_moves: int  # moves A chose (the opening excluded)
    a_seconds: float  # wall time A spent choosing them
    reason: str  # how the game ended (``GameRecord.reason``)
    record: str  # the game's result string (``B+3.5``, ``W+R`` ...)
    b_moves: int = 0  # the same for B
    b_seconds: float = 0.0


async def play_game(a: Player, b: Player, k: int, opening: list[int], size: int, komi: float,
                    scoring: str = "agreed", sgf_dir: Path | None = None) -> GameOutcome:
    """Game ``k`` of A against B: A has black when ``k`` is even; it starts
    from ``opening``; each side plays through a ``fork`` of its player (a
    GTP engine's own process, closed after the game), and a GTP engine's
    illegal move forfeits (``referee_game``). With ``sgf_dir`` the game is
    saved as ``<A>-vs-<B>-<k>.sgf`` there."""
    pa, pb = a.fork(), b.fork()
    a_black = k % 2 == 0
    black, white = (pa, pb) if a_black else (pb, pa)
    try:
        gtp = {c for c, p in ((BLACK, black), (WHITE, white)) if isinstance(p, GtpPlayer)}
        rec = await referee_game(black, white, size, komi, opening=opening, scoring=scoring, forfeit=gtp)
    finally:
        await pa.close()
        await pb.close()
    a_color, b_color = (BLACK, WHITE) if a_black else (WHITE, BLACK)
    s = (1.0 if a_black else -1.0) * rec.score
    if sgf_dir is not None:
        info = SgfInfo(black=black.name, white=white.name, result=rec.result)
        save_sgf_file(sgf_dir / f"{a.name}-vs-{b.name}-{k:04d}.sgf", rec.game, info, result=rec.result)
    played = rec.moves[len(opening):]
    return GameOutcome("W" if s > 0 else "L" if s < 0 else "D", a_black,
                       sum(1 for c, _ in played if c == a_color), rec.time_used[a_color], rec.reason, rec.result,
                       sum(1 for c, _ in played if c == b_color), rec.time_used[b_color])


async def run_match(a: Player, b: Player, games: int, size: int, komi: float, concurrency: int,
                    sgf_dir: Path | None, on_game=None, *, scoring: str = "agreed", random_opening: int = 0,
                    seed: int = 0, done: MatchResult | None = None) -> MatchResult:
    """``games`` games of A against B, colours alternating, game pairs from
    ``match_openings(random_opening, seed)``; two passes counted by
    ``scoring`` (``referee.SCORINGS``). ``done``: the games of an earlier
    run of the same match (its ``per_game``), counted and not played again."""
    res = MatchResult(a.name, b.name)
    res.results = [""] * games
    for k, g in sorted((done.per_game if done is not None else {}).items()):
        if k < games:
            res.add_game(k, g["result"], g["a_moves"], g["a_seconds"], g["reason"])
    sem = asyncio.Semaphore(concurrency)
    openings = match_openings((games + 1) // 2, size, random_opening, seed)

    async def one(k: int) -> None:
        async with sem:
            g = await play_game(a, b, k, openings[k // 2], size, komi, scoring, sgf_dir)
            res.add_game(k, g.result, g.a_moves, g.a_seconds, g.reason)
            if on_game is not None:
                on_game(k, res)

    await asyncio.gather(*[one(k) for k in range(games) if k not in res.per_game])
    return res


def print_result(res: MatchResult, console=None) -> None:
    from rich.table import Table

    console = console or wide_console()
    lo, hi = res.wilson()
    elo, _ = res.elo()
    elo_lo, elo_hi = res.elo_interval()
    t = Table(title=f"{res.a} vs {res.b}")
    for col in ("games", f"{res.a} wins", "losses", "draws", "win rate", "95% interval (Wilson)",
                "Elo diff", "Elo 95% interval", f"{res.a} s/move"):
        t.add_column(col, justify="right")
    t.add_row(str(res.games), str(res.wins), str(res.losses), str(res.draws), f"{res.win_rate:.1%}",
              f"{lo:.1%} .. {hi:.1%}", f"{elo:+.0f}", f"{elo_lo:+.0f} .. {elo_hi:+.0f}",
              f"{res.a_seconds / res.a_moves:.3f}" if res.a_moves else "-")
    console.print(t)
    console.print("games ended by: " + ", ".join(f"{k} {v}" for k, v in sorted(res.reasons.items())))


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="sayuri-async match", description="Play networks or GTP engines against each other.")
    p.add_argument("players", nargs="+", help="weights files, 'random', or GTP command lines (quoted); "
                                              "two for a match, more for a round robin with ratings")
    p.add_argument("--games", type=int, default=20, help="games per pair")
    p.add_argument("--board", type=int, default=9)
    p.add_argument("--komi", type=float, default=7.5)
    p.add_argument("--playouts", type=int, default=100)
    p.add_argument("--gumbel", action="store_true", help="Gumbel root search for our networks")
    p.add_argument("--resign", type=float, default=0.0, help="our networks resign below this winrate (0: never)")
    p.add_argument("--opening-moves", type=int, default=0,
                   help="our networks sample their first moves by visits, so deterministic players "
                        "do not repeat the same games (0: always the most visited move)")
    p.add_argument("--concurrency", type=int, default=8, help="games at once (one GTP process per game and side)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--device", default="cpu")
    p.add_argument("--sgf", default="", help="folder for the games' SGF (default: none)")
    p.add_argument("--scoring", choices=SCORINGS, default="agreed",
                   help="how two passes are counted: 'agreed' removes the dead stones both sides name and "
                        "plays a disagreement on; 'tromp-taylor' counts every stone alive (docs/rating.md)")
    p.add_argument("--random-opening", type=int, default=2,
                   help="random moves opening each pair of games (colours swapped), all openings distinct; at "
                        "most the points from the third line in ((N-4)^2: 25 on 9x9)")
    p.add_argument("--seed", type=int, default=0, help="seed of the openings")
    p.add_argument("--json", default="", help="also write the results (and ratings) to this JSON file, after every "
                                              "game; the same command continues the games it holds")
    p.add_argument("--fresh", action="store_true", help="start over even if --json holds games of other settings")
    return p


MATCH_SETTINGS = ("players", "games", "board", "komi", "playouts", "gumbel", "resign", "opening_moves", "scoring",
                  "random_opening", "seed")


def match_settings(args) -> dict:
    """What makes game k of a match the same game: the ``MATCH_SETTINGS``."""
    return {k: getattr(args, k) for k in MATCH_SETTINGS}


def earlier_games(path: Path, settings: dict) -> dict[tuple[str, str], MatchResult]:
    """The games an earlier run of the same match wrote to ``path``, per
    pair of names; none when there is no file. UserError naming the file
    when it holds other settings or is not a match's JSON."""
    if not path.is_file():
        return {}
    try:
        old = json.loads(path.read_text())
        differ = [k for k in MATCH_SETTINGS if old["settings"].get(k) != settings[k]]
        rows = [MatchResult.from_row(r) for r in old["results"]]
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise UserError(f"--json {path}: not a match file of this command ({type(e).__name__}); "
                        f"move it away or give --fresh") from None
    if differ:
        raise UserError(f"--json {path}: holds games of other settings ({', '.join(differ)} differ); "
                        f"give another file or --fresh to start over")
    return {(r.a, r.b): r for r in rows}


def opening_points(size: int) -> int:
    """The points ``match_openings`` draws from: the third line in (the whole board below 7x7)."""
    side = size - 4 if size >= 7 else size
    return side * side


@dataclass
class MatchOptions:
    """The numbers of the command line, range-checked as every setting is
    (``configfile``): an error names the option and its range."""
    games: int = 20
    board: int = 9
    playouts: int = 100
    opening_moves: int = 0
    concurrency: int = 8
    batch_size: int = 8
    random_opening: int = 2
    seed: int = 0
    komi: float = 7.5
    resign: float = 0.0

    def __post_init__(self) -> None:
        between(self, 1, 1_000_000, "games")
        between(self, MIN_N, MAX_N, "board")
        between(self, 1, 1_000_000, "playouts")
        between(self, 0, 2 * self.board * self.board, "opening_moves")
        between(self, 1, 1024, "concurrency")
        between(self, 1, 16_384, "batch_size")
        between(self, 0, opening_points(self.board), "random_opening")
        within(self, SEED_RANGE, "seed")
        area = self.board * self.board
        require(abs(self.komi) <= area, "komi", f"must be within the board's area ({-area}..{area}), not {self.komi:g}")
        within(self, "[0, 1)", "resign")


def check_arguments(args) -> None:
    """UserError naming the first option out of range (see ``usererror``)."""
    if not MIN_N <= args.board <= MAX_N:
        raise UserError(f"--board {args.board}: board sizes are {MIN_N}..{MAX_N}")
    from_options(MatchOptions, {"games": args.games, "board": args.board, "playouts": args.playouts,
                                "opening_moves": args.opening_moves, "concurrency": args.concurrency,
                                "batch_size": args.batch_size, "random_opening": args.random_opening,
                                "seed": args.seed, "komi": args.komi, "resign": args.resign})
    check_device(args.device)


@answered("match")
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if len(args.players) < 2:
        print("sayuri-async match: give at least two players", file=sys.stderr)
        return 2
    check_arguments(args)
    players = [make_player(s, args) for s in args.players]
    names = [p.name for p in players]
    if len(set(names)) != len(names):  # the same name twice: number them
        for i, p in enumerate(players):
            p.name = f"{p.name}#{i + 1}"
        names = [p.name for p in players]
    sgf_dir = output_folder(args.sgf, "--sgf", inputs=args.players) if args.sgf else None
    settings = match_settings(args)
    earlier: dict[tuple[str, str], MatchResult] = {}
    if args.json:  # checked before the games, not after them
        output_file(args.json, "--json", "match.json", inputs=args.players)
        earlier = {} if args.fresh else earlier_games(Path(args.json), settings)
    finished: list[MatchResult] = []

    def write_json(results: list[MatchResult]) -> None:
        if args.json:
            from ..fileio import write_text_atomic

            rt = ratings(names, results) if len(players) > 2 else {}
            write_text_atomic(args.json, json.dumps({"settings": settings, "ratings": rt,
                                                      "results": [r.summary(per_game=True) for r in results]},
                                                     indent=1) + "\n")

    def progress(k: int, res: MatchResult) -> None:
        print(f"  {res.a} vs {res.b}: game {res.games}/{args.games}  {res.wins}-{res.losses}-{res.draws}",
              file=sys.stderr, flush=True)
        write_json(finished + [res])

    async def go() -> None:
        for i in range(len(players)):
            for j in range(i + 1, len(players)):
                finished.append(await run_match(players[i], players[j], args.games, args.board, args.komi,
                                                args.concurrency, sgf_dir, progress, scoring=args.scoring,
                                                random_opening=args.random_opening, seed=args.seed,
                                                done=earlier.get((players[i].name, players[j].name))))

    asyncio.run(go())
    results = finished
    for r in results:
        print_result(r)
    rt = ratings(names, results) if len(players) > 2 else {}
    write_json(results)
    if len(players) > 2:
        from rich.table import Table

        t = Table(title="ratings (Bradley-Terry, first player = 0)")
        t.add_column("player")
        t.add_column("Elo", justify="right")
        for name, elo in sorted(rt.items(), key=lambda kv: -kv[1]):
            t.add_row(name, f"{elo:+.0f}")
        wide_console().print(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
