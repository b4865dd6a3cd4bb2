"""The players of a rating pool and the TOML file that names them.

Vocabulary
----------
player      a name and either a network with its search settings
            (``weights``: a weights file or ``random``; ``search``: ``puct``
            or ``gumbel``; ``playouts`` new playouts a move; ``reuse_tree``:
            whether the search keeps the subtree of the moves played) or a
            GTP engine command line (``gtp``, with the engine's own time
            settings on it). ``PlayerSpec``; its ``identity`` is what makes
            its games its games (a pool refuses to continue games under a
            name whose identity changed).
pool file   TOML: ``[pool]`` (``PoolConfig``: board, komi, games a pair,
            openings, scoring, the fit's anchor and virtual draws, games at
            once), ``[defaults]`` (player keys every ``[[player]]`` starts
            from), one ``[[player]]`` table per player, two at least, and
            optional ``[[pair]]`` tables (``PairSpec``: two players' names
            and the games that pair plays in place of ``[pool] games``; 0
            leaves the pair out). configs/rate-9x9-search.toml is the
            manual's example, configs/rate-9x9-equal-time.toml one with
            pairs.
build       ``build_players`` makes the match players: one backend per
            weights file (players of the same network share it), a
            ``NetPlayer`` per network player, a ``GtpPlayer`` per engine
            (started once to check that it speaks GTP).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Literal

from ..configfile import SEED_RANGE, ConfigError, between, fill, read_toml, require, within
from ..go.board import MAX_N, MIN_N

__all__ = ["PairSpec", "PlayerSpec", "PoolConfig", "PoolFile", "build_players", "load_pool", "spec_record"]

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")  # safe in a table and a file name
MAX_PLAYERS = 64


@dataclass
class PlayerSpec:
    name: str = ""
    weights: str = ""  # a weights file, or "random"
    gtp: str = ""  # a GTP engine command line (instead of weights)
    search: Literal["puct", "gumbel"] = "puct"
    playouts: int = 100
    reuse_tree: bool = True

    def __post_init__(self) -> None:
        require(bool(NAME.match(self.name)), "name",
                f"must be 1-64 letters, digits, '_', '.', '+' or '-' (starting with a letter or digit), "
                f"not {self.name!r}")
        require(bool(self.weights) != bool(self.gtp), "weights",
                "give either weights (a network) or gtp (an engine's command line), not both or neither")
        between(self, 1, 1_000_000, "playouts")

    @property
    def is_network(self) -> bool:
        return bool(self.weights)

    def identity(self) -> dict:
        """What makes this player's games its games."""
        if self.is_network:
            return {"weights": self.weights, "search": self.search, "playouts": self.playouts,
                    "reuse_tree": self.reuse_tree}
        return {"gtp": self.gtp}

    def describe(self) -> str:
        """One line for a table: ``PUCT, 64 playouts, tree reuse on, net.safetensors``."""
        if not self.is_network:
            return f"GTP `{self.gtp}`"
        search = "Gumbel" if self.search == "gumbel" else "PUCT"
        return (f"{search}, {self.playouts} playouts, tree reuse {'on' if self.reuse_tree else 'off'}, "
                f"`{Path(self.weights).name}`")


@dataclass
class PoolConfig:
    board: int = 9
    komi: float = 7.0
    games: int = 20  # games a pair
    random_opening: int = 2  # random moves opening each pair of games
    seed: int = 0  # the openings' seed
    scoring: Literal["agreed", "tromp-taylor"] = "agreed"
    anchor: str = ""  # the player rated 0, or "mean"; "": the first player
    virtual_draws: float = 0.0  # draws added to every pair that met (0: the plain maximum likelihood)
    concurrency: int = 2  # games at once
    batch_size: int = 8
    device: str = "cpu"
    torch_threads: int = 1  # torch threads of the process (1: right on a shared CPU)

    def __post_init__(self) -> None:
        between(self, MIN_N, MAX_N, "board")
        area = self.board * self.board
        require(abs(self.komi) <= area, "komi", f"must be within the board's area ({-area}..{area}), not {self.komi:g}")
        between(self, 1, 100_000, "games")
        side = self.board - 4 if self.board >= 7 else self.board
        between(self, 0, side * side, "random_opening")
        within(self, SEED_RANGE, "seed")
        within(self, "[0, 1000]", "virtual_draws")
        between(self, 1, 256, "concurrency")
        between(self, 1, 16_384, "batch_size")
        between(self, 1, 256, "torch_threads")

    def game_settings(self) -> dict:
        """The settings that make game k of a pair the same game."""
        return {k: getattr(self, k) for k in ("board", "komi", "random_opening", "seed", "scoring")}


@dataclass
class PairSpec:
    players: list[str] = field(default_factory=list)  # two players' names
    games: int = 0  # the games this pair plays (0: none), whatever [pool] games and --games say

    def __post_init__(self) -> None:
        require(isinstance(self.players, list) and len(self.players) == 2
                and all(isinstance(n, str) for n in self.players) and self.players[0] != self.players[1],
                "players", f"must name two different players, not {self.players!r}")
        between(self, 0, 100_000, "games")

    @property
    def key(self) -> tuple[str, str]:
        """The pair as the schedule names it (sorted)."""
        x, y = sorted(self.players)
        return x, y


@dataclass
class PoolFile:
    path: Path
    pool: PoolConfig
    players: list[PlayerSpec]
    pairs: list[PairSpec] = field(default_factory=list)

    @property
    def anchor(self) -> str:
        return self.pool.anchor or self.players[0].name

    @property
    def pair_games(self) -> dict[tuple[str, str], int]:
        """The games of the pairs ``[[pair]]`` tables set (sorted names -> games)."""
        return {p.key: p.games for p in self.pairs}


def load_pool(path: str | Path) -> PoolFile:
    """The pool file at ``path``; ConfigError naming the file, the table
    and the key for anything wrong in it."""
    src = str(path)
    data = read_toml(path)
    for table in data:
        if table not in ("pool", "defaults", "player", "pair"):
            raise ConfigError(f"{src}: unknown section [{table}] (known: pool, defaults, player, pair)")
    pool = fill(PoolConfig, data.get("pool", {}), src, "pool")
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise ConfigError(f"{src}: [defaults] must be a table")
    if "name" in defaults:
        raise ConfigError(f"{src}: [defaults] name: every player names itself")
    known = {f.name for f in fields(PlayerSpec)} - {"name"}
    for key in defaults:
        if key not in known:
            raise ConfigError(f"{src}: [defaults] {key}: unknown key (known keys: {', '.join(sorted(known))})")
    tables = data.get("player", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise ConfigError(f"{src}: player must be an array of tables ([[player]])")
    if not 2 <= len(tables) <= MAX_PLAYERS:
        raise ConfigError(f"{src}: a pool needs 2 to {MAX_PLAYERS} [[player]] tables, not {len(tables)}")
    players = []
    for i, table in enumerate(tables):
        section = f"player {i + 1}" + (f" ({table['name']})" if isinstance(table.get("name"), str) else "")
        merged = {**defaults, **table}
        if "gtp" in table and "weights" not in table:  # an engine drops a network the defaults give
            merged.pop("weights", None)
        players.append(fill(PlayerSpec, merged, src, section))
    names = [p.name for p in players]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"{src}: [[player]] name {twice[0]!r} is given twice")
    if pool.anchor not in ("", "mean") and pool.anchor not in names:
        raise ConfigError(f"{src}: [pool] anchor: {pool.anchor!r} is neither 'mean' nor a player's name")
    for p in players:
        if p.is_network and p.weights != "random" and not Path(p.weights).is_file():
            raise ConfigError(f"{src}: [[player]] {p.name}: weights {p.weights}: no such file")
    return PoolFile(Path(path), pool, players, load_pairs(data.get("pair", []), names, src))


def load_pairs(tables, names: list[str], src: str) -> list[PairSpec]:
    """The ``[[pair]]`` tables of a pool file whose players are ``names``."""
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise ConfigError(f"{src}: pair must be an array of tables ([[pair]])")
    pairs: list[PairSpec] = []
    for i, table in enumerate(tables):
        pair = fill(PairSpec, table, src, f"pair {i + 1}")
        unknown = [n for n in pair.players if n not in names]
        if unknown:
            raise ConfigError(f"{src}: [pair {i + 1}] players: {unknown[0]!r} is not a [[player]] of the pool")
        if any(p.key == pair.key for p in pairs):
            raise ConfigError(f"{src}: [pair {i + 1}] players: the pair {' and '.join(pair.key)} is given twice")
        pairs.append(pair)
    return pairs


def build_players(pf: PoolFile) -> dict:
    """The match players of the pool, by name (module docstring: build)."""
    from ..backend_factory import make_backend
    from .gtpclient import probe_engine
    from .match import NetPlayer
    from .referee import GtpPlayer

    backends: dict[str, object] = {}
    out: dict = {}
    for spec in pf.players:
        if not spec.is_network:
            probe_engine(spec.gtp)
            player = GtpPlayer(spec.gtp)
        else:
            if spec.weights not in backends:
                weights = None if spec.weights == "random" else spec.weights
                if weights is not None:
                    from ..net.weights import refuse_board_sizes

                    refuse_board_sizes(weights, [pf.pool.board], "[pool] board")  # before the network is loaded
                backends[spec.weights] = make_backend(weights, device=pf.pool.device, max_batch=pf.pool.batch_size)
            player = NetPlayer(spec.name, backends[spec.weights], spec.playouts, spec.search == "gumbel", 0.0,
                               pf.pool.batch_size, reuse_tree=spec.reuse_tree)
        player.name = spec.name
        out[spec.name] = player
    return out


def spec_record(spec: PlayerSpec) -> dict:
    """The player as the pool's JSON holds it."""
    return {**spec.identity(), "describe": spec.describe()}

