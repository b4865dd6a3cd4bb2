"""The GTP frontend's settings: dataclasses filled from ``configs/gtp.toml``.

Vocabulary
----------
GtpConfig   every setting, grouped in sections that match the TOML tables:
            ``[net]``, ``[game]``, ``[search]``, ``[time]``, ``[analysis]``,
            ``[protocol]``. The dataclass defaults are the documented defaults
            (``configs/gtp.toml`` repeats them with explanations).
ConfigError a config file that cannot be used: unreadable, bad TOML, an
            unknown table or key, or a value of the wrong type or range. Its
            message names the file and the key.

Each section checks its ranges in ``__post_init__`` (the one style of
``sayuri_async.configfile``); the command line assigns fields in place and
then calls ``configfile.recheck``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from sayuri_async.configfile import (SEED_RANGE, ConfigError, at_least, between, fill_sections, read_toml, require,
                                     within)
from sayuri_async.go.board import MAX_N as MAX_BOARD, MIN_N as MIN_BOARD
from sayuri_async.search.config import SearchConfig

__all__ = ["ConfigError", "GtpConfig", "config_from_dict", "load_config"]


@dataclass
class NetSection:
    weights: str = ""  # empty: the random network
    device: str = "cpu"
    dtype: str = ""  # empty: the backend's default (bf16 on CUDA, fp32 on CPU)
    threads: int = 0  # torch CPU threads; 0: half the usable cores, at least 1 (gtp/main.py)

    def __post_init__(self) -> None:
        between(self, 0, 1024, "threads")


@dataclass
class GameSection:
    board_size: int = 19
    komi: float = 7.5
    scoring: str = "area"
    superko: bool = True

    def __post_init__(self) -> None:
        require(MIN_BOARD <= self.board_size <= MAX_BOARD, "board_size",
                f"must be {MIN_BOARD}..{MAX_BOARD}, not {self.board_size}")
        require(self.scoring in ("area", "territory"), "scoring", "must be \"area\" or \"territory\"")
        between(self, -361, 361, "komi")


_SELFPLAY_ONLY = "a self-play setting: GTP adds no root noise and runs no Gumbel search"
_FIXED_POOLS = "GTP sizes its tree by tree_memory_mb (the pools grow up to it)"


@dataclass
class SearchSection(SearchConfig):
    """The search's own settings (``search.config.SearchConfig``, the keys of
    self-play's ``[search]`` that apply to a GTP search, with GTP's
    defaults) and GTP's: the playouts per move, the NN cache, the batching
    timeout, resignation and the random seed."""
    tree_memory_mb: float = 1024.0
    edges_per_expansion: int = 8
    playouts: int = 400
    cache_size: int = 20_000
    timeout_ms: float = 5.0
    resign_threshold: float = 0.0
    resign_min_visits: int = 100
    seed: int = -1

    # keys of older configs: refused by name, never read with another meaning
    RENAMED_KEYS: ClassVar[dict[str, str]] = {
        "node_capacity": "tree_memory_mb (the tree's memory budget in MB; it was an edge count)"}
    # SearchConfig keys that do not apply to GTP: refused by name
    REFUSED_KEYS: ClassVar[dict[str, str]] = {
        **dict.fromkeys(("dirichlet_epsilon", "dirichlet_alpha_scale", "gumbel_considered_moves",
                         "gumbel_c_visit", "gumbel_c_scale"), _SELFPLAY_ONLY),
        **dict.fromkeys(("edge_capacity", "search_edges", "node_records"), _FIXED_POOLS),
    }

    def __post_init__(self) -> None:
        super().__post_init__()
        at_least(self, 1, "tree_memory_mb")
        between(self, 1, 100_000_000, "playouts")
        between(self, 0, 10_000_000, "cache_size")
        between(self, 0, 1_000_000_000, "resign_min_visits")
        between(self, 0, 60_000, "timeout_ms")
        within(self, "[0, 0.5)", "resign_threshold")
        require(self.seed == -1 or 0 <= self.seed <= 2 ** 63 - 1, "seed",
                f"must be -1 (a fresh seed) or in {SEED_RANGE}, not {self.seed}")


@dataclass
class TimeSection:
    lag_margin_s: float = 0.1
    reserve_fraction: float = 0.05
    expected_length_factor: float = 0.7
    min_moves_left: int = 10
    max_move_fraction: float = 0.25

    def __post_init__(self) -> None:
        within(self, "[0, 3600]", "lag_margin_s")
        within(self, "[0, 1)", "reserve_fraction")
        within(self, "(0, 100]", "expected_length_factor")
        between(self, 1, 10_000, "min_moves_left")
        within(self, "(0, 1]", "max_move_fraction")


@dataclass
class AnalysisSection:
    interval_cs: int = 10
    pv_length: int = 20
    max_moves: int = 20
    lcb_z: float = 1.96

    def __post_init__(self) -> None:
        between(self, 1, 360_000, "interval_cs")
        between(self, 1, 1000, "pv_length")
        between(self, 1, MAX_BOARD * MAX_BOARD + 1, "max_moves")
        between(self, 0, 10, "lcb_z")


@dataclass
class ProtocolSection:
    name: str = "sayuri-async"
    lizzie_version: bool = False
    verbose: bool = False


@dataclass
class GtpConfig:
    net: NetSection = field(default_factory=NetSection)
    game: GameSection = field(default_factory=GameSection)
    search: SearchSection = field(default_factory=SearchSection)
    time: TimeSection = field(default_factory=TimeSection)
    analysis: AnalysisSection = field(default_factory=AnalysisSection)
    protocol: ProtocolSection = field(default_factory=ProtocolSection)


def config_from_dict(data: dict[str, Any], where: str = "config") -> GtpConfig:
    """Build a GtpConfig from a parsed file; unknown tables or keys, wrong
    types and out-of-range values raise ConfigError naming ``where``."""
    return fill_sections(GtpConfig, data, where)


def load_config(path: str | Path | None) -> GtpConfig:
    """The defaults when ``path`` is None, else the file's settings."""
    if path is None:
        return GtpConfig()
    return config_from_dict(read_toml(path), str(path))
