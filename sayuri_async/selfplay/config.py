"""Self-play settings: one dataclass, filled from a TOML file and the command
line. ``configs/selfplay-9x9.toml`` documents every option.

Vocabulary (Sayuri's self-play names)
-------------------------------------
playouts            playouts per full search.
reduce_playouts / reduce_playouts_prob
                    playout cap randomization: with that probability a move
                    gets a cheap search of ``reduce_playouts`` playouts, without
                    noise, and is not recorded as a policy target.
gumbel / gumbel_playouts_threshold
                    Gumbel root search for searches with fewer playouts than
                    the threshold (PUCT with Dirichlet noise otherwise).
random_moves_factor the first ``factor * N*N`` moves are sampled in proportion
                    to visits (PUCT), for opening variety.
pass_after_factor   no pass is chosen before ``factor * N*N`` moves (unless it
                    is the only legal move): weak early networks otherwise
                    learn to end games by passing in the opening.
inline_cheap_backend
                    a ``cheap`` backend (the random network) answers batches
                    on the event loop rather than in the worker thread.
follow_weights      a folder to follow (``follow.py``): the newest network that
                    appears in it is played from the next batch on, checked
                    every ``follow_interval_s`` seconds ("": play one network).
batch_size          requests per network batch, or "auto": at start the
                    engine measures the device's curve and takes the smallest
                    bucket within 5% of its best sustained rate, and sets
                    ``parallel_games`` by the rule of thumb (``auto.py``).
max_batch_size      the largest batch the backend is built for: its buffers,
                    its measured curve and the live view's ``B`` key reach up
                    to it (0: the larger of 4 x batch_size and 256, at most
                    1024, and never below batch_size).
procs               engine processes per device, or "auto": on a CPU with a
                    network, processes and torch threads per process from a
                    short measurement (``auto.py``); 1 elsewhere.
resign_threshold    resign when the root winrate stays below it for
                    ``resign_consecutive`` moves (0 disables);
                    ``resign_discard_prob`` plays such a game out anyway and
                    flags the positions after the would-be resignation.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Literal

from ..configfile import (SEED_RANGE, Bad, CommandLine, at_least, between, check_tables, fill, read_toml, require,
                          within)
from ..encoders import ENCODERS
from ..search.config import SearchConfig
from ..search.pools import selfplay_edges


MAX_PARALLEL_GAMES = 16_384  # per process: each game holds a search tree and a workspace
MAX_BATCH = 16_384
AUTO = "auto"
DEFAULT_MAX_BATCH_FLOOR = 256  # max_batch_size = 0: at least this
DEFAULT_MAX_BATCH_CAP = 1024  # ... and at most this (unless batch_size is larger)
MAX_PROCS = 256  # engine processes per device
MAX_PLAYOUTS = 1_000_000
MAX_GAMES = 1_000_000_000
MAX_CACHE = 10_000_000  # NN cache entries (a policy and values each)
MAX_GENERATION = 999_999  # six digits in chunk names (chunkfile.chunk_name)


@dataclass
class SelfplayConfig:
    board_sizes: list[int] = field(default_factory=lambda: [9])
    board_size_weights: list[float] = field(default_factory=list)
    komi: float = 7.5
    komi_stddev: float = 0.0
    num_games: int = 0  # 0: until stopped
    parallel_games: int = 64
    batch_size: int | Literal["auto"] = 32
    max_batch_size: int = 0  # 0: max(4 x batch_size, 256), at most 1024 (see the vocabulary)
    timeout_ms: float = 5.0
    batches_in_flight: int = 2  # batches handed to the device at a time: one running, one ready behind it
    cache_size: int = 0
    playouts: int = 100
    reduce_playouts: int = 0
    reduce_playouts_prob: float = 0.0
    gumbel: bool = False
    gumbel_playouts_threshold: int = 0
    dirichlet_noise: bool = True
    random_moves_factor: float = 0.0
    pass_after_factor: float = 0.0  # no pass at the root before factor * N*N moves
    resign_threshold: float = 0.0
    resign_consecutive: int = 3
    resign_discard_prob: float = 0.0
    chunk_games: int = 50
    write_sgf: bool = True
    writer_process: bool = True  # SGF and chunks written by a process of their own, off the event loop
    seed: int = 0  # 0: a fresh seed each run
    weights: str = ""
    follow_weights: str = ""  # a folder whose newest network is played (follow.py); "": none
    follow_interval_s: float = 5.0  # seconds between two looks into follow_weights
    device: str = "cpu"  # cpu, cuda:K, model or model:K (the device model), or a list of them
    device_model: str = "20b256c"  # the device model's net (NET or NET/MODE) in device_table
    device_table: str = ""  # forward times of the device model ("": the shipped H200 table)
    encoder: str = ""  # planes of the random network and the device model ("": simple-v1); a net has its own
    procs: int | Literal["auto"] = 1
    out: str = "runs/selfplay"
    generation: int = 0  # written into chunk names (the RL loop's generation)
    inline_cheap_backend: bool = True  # the random network answers on the event loop, not in the worker thread
    search: SearchConfig = field(default_factory=SearchConfig)

    def search_config(self) -> SearchConfig:
        """The search settings with ``edge_capacity = 0`` resolved from the
        playouts and the largest board (``pools.selfplay_edges``)."""
        if self.search.edge_capacity > 0 or self.search.tree_memory_mb > 0:
            return self.search
        edges, room = selfplay_edges(max(self.playouts, self.reduce_playouts), max(self.board_sizes))
        return replace(self.search, edge_capacity=edges, search_edges=room)

    @property
    def max_batch(self) -> int:
        """``max_batch_size`` resolved (see the vocabulary); with
        ``batch_size = "auto"`` the default is 256."""
        if self.max_batch_size > 0:
            return self.max_batch_size
        b = 1 if self.batch_size == AUTO else int(self.batch_size)
        return max(min(max(4 * b, DEFAULT_MAX_BATCH_FLOOR), DEFAULT_MAX_BATCH_CAP), b)

    def __post_init__(self) -> None:
        """Range checks (see ``configfile``): ``Bad`` naming the key."""
        require(bool(self.board_sizes), "board_sizes", "must not be empty")
        for s in self.board_sizes:
            require(7 <= s <= 19, "board_sizes", f"must all be in 7..19, not {s}")
        require(not self.board_size_weights or len(self.board_size_weights) == len(self.board_sizes),
                "board_size_weights", "needs one weight per board size")
        between(self, 1, MAX_PARALLEL_GAMES, "parallel_games")
        if self.batch_size != AUTO:
            between(self, 1, MAX_BATCH, "batch_size")
        between(self, 0, MAX_BATCH, "max_batch_size")
        require(self.batch_size == AUTO or self.max_batch_size == 0 or self.max_batch_size >= self.batch_size,
                "max_batch_size", f"must be at least batch_size ({self.batch_size}), not {self.max_batch_size}")
        between(self, 1, MAX_PLAYOUTS, "playouts")
        between(self, 0, MAX_PLAYOUTS, "reduce_playouts", "gumbel_playouts_threshold")
        between(self, 1, 1_000_000, "chunk_games")
        if self.procs != AUTO:
            between(self, 1, MAX_PROCS, "procs")
        between(self, 1, 64, "batches_in_flight")
        between(self, 0, 60_000, "timeout_ms")
        between(self, 0, 361, "komi_stddev")
        between(self, -361, 361, "komi")
        between(self, 0, MAX_GAMES, "num_games")
        between(self, 0, MAX_CACHE, "cache_size")
        between(self, 1, 1000, "resign_consecutive")
        between(self, 0, 2, "random_moves_factor")
        within(self, SEED_RANGE, "seed")
        between(self, 0, MAX_GENERATION, "generation")
        between(self, 0.05, 86_400, "follow_interval_s")
        require(self.out.strip() != "", "out", "must name a folder, not an empty string")
        require(all(w >= 0 and w == w for w in self.board_size_weights) and
                (not self.board_size_weights or sum(self.board_size_weights) > 0),
                "board_size_weights", "must be weights of 0 or more, not all 0")
        for d in self.device.split(","):
            require(re.fullmatch(r"\s*(cpu|cuda(:\d+)?|model(:\d+)?)\s*", d) is not None, "device",
                    f"must be cpu, cuda, cuda:K, model or model:K (a list joined by commas), not {d.strip()!r}")
        if any(re.fullmatch(r"\s*model(:\d+)?\s*", d) for d in self.device.split(",")):
            from ..net.device_model import DeviceModelError, load_table

            require(not self.weights, "weights", f"the device model (device {self.device}) answers as the random "
                                                 f"network and takes no weights, not {self.weights!r}")
            require(not self.follow_weights, "follow_weights", f"the device model (device {self.device}) answers "
                                                               f"as the random network and follows no weights")
            try:
                load_table(self.device_model, self.device_table or None)
            except DeviceModelError as e:
                raise Bad("device_model", str(e)) from None
        if self.encoder:
            require(self.encoder in ENCODERS, "encoder", f"must be one of {', '.join(sorted(ENCODERS))}, "
                                                         f"not {self.encoder!r}")
        within(self, "[0, 1]", "reduce_playouts_prob", "pass_after_factor", "resign_discard_prob")
        within(self, "[0, 1)", "resign_threshold")


def load_selfplay_config(path: str | None, overrides: dict | None = None) -> SelfplayConfig:
    """The config file's ``[selfplay]`` table (and ``[search]`` into
    ``search``), then ``overrides`` (command-line values)."""
    data: dict = {}
    where = "command line"
    if path:
        raw = read_toml(path)
        check_tables(raw, ["selfplay", "search"], str(path))
        data = dict(raw.get("selfplay", {}))
        if "search" in raw:
            data["search"] = fill(SearchConfig, raw["search"], str(path), "search")
        where = str(path)
    cfg = fill(SelfplayConfig, data, where, "selfplay" if path else None)
    if overrides:
        cfg = fill(SelfplayConfig, {k: v for k, v in overrides.items() if v is not None},
                   CommandLine({"board_sizes": "--board-size", "follow_interval_s": "--follow-interval"}), base=cfg)
    return cfg


def add_device_model_options(p) -> None:
    """The command-line options of the device model and the random
    network's planes (``selfplay``, ``tune``)."""
    p.add_argument("--device-model", help="device model: the net (NET or NET/MODE) in --device-table "
                                          "(with --device model; default 20b256c)")
    p.add_argument("--device-table", help="device model: a table of forward times (default: the shipped H200 table)")
    p.add_argument("--encoder", help="input planes of the random network and the device model (simple-v1, sayuri-v3)")


def device_model_overrides(args) -> dict:
    return {"device_model": args.device_model, "device_table": args.device_table, "encoder": args.encoder}
