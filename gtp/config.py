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
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sayuri_async.configfile import Bad, ConfigError, fill_sections, read_toml

MIN_BOARD, MAX_BOARD = 2, 25
MAX_LEAVES = 16  # search/tree.py's MAX_LEAVES

__all__ = ["ConfigError", "GtpConfig", "config_from_dict", "load_config"]


@dataclass
class NetSection:
    weights: str = ""  # empty: the random network
    device: str = "cpu"
    dtype: str = ""  # empty: the backend's default (bf16 on CUDA, fp32 on CPU)
    threads: int = 0  # torch CPU threads; 0: torch's default


@dataclass
class GameSection:
    board_size: int = 19
    komi: float = 7.5
    scoring: str = "area"
    superko: bool = True


@dataclass
class SearchSection:
    playouts: int = 400
    c_init: float = 1.25
    c_base: float = 19652.0
    fpu_reduction: float = 0.25
    fpu_root: float = 0.0
    node_capacity: int = 16_000_000
    cache_size: int = 20_000
    leaves_per_await: int = 4
    timeout_ms: float = 5.0
    reuse_tree: bool = True
    resign_threshold: float = 0.0
    resign_min_visits: int = 100
    seed: int = -1


@dataclass
class TimeSection:
    lag_margin_s: float = 0.1
    reserve_fraction: float = 0.05
    expected_length_factor: float = 0.7
    min_moves_left: int = 10
    max_move_fraction: float = 0.25


@dataclass
class AnalysisSection:
    interval_cs: int = 10
    pv_length: int = 20
    max_moves: int = 20
    lcb_z: float = 1.96


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

    def check(self) -> None:
        """Range checks; raises ``Bad`` naming the table and key."""

        def bad(key: str, why: str) -> Bad:
            table, _, name = key.partition(".")
            return Bad(f"[{table}] {name}", why)

        g, s, t, a = self.game, self.search, self.time, self.analysis
        if not MIN_BOARD <= g.board_size <= MAX_BOARD:
            raise bad("game.board_size", f"must be {MIN_BOARD}..{MAX_BOARD}")
        if g.scoring not in ("area", "territory"):
            raise bad("game.scoring", "must be \"area\" or \"territory\"")
        for key, value, lo in (
            ("search.playouts", s.playouts, 1),
            ("search.node_capacity", s.node_capacity, 10_000),
            ("search.cache_size", s.cache_size, 0),
            ("search.leaves_per_await", s.leaves_per_await, 1),
            ("search.resign_min_visits", s.resign_min_visits, 0),
            ("time.min_moves_left", t.min_moves_left, 1),
            ("analysis.interval_cs", a.interval_cs, 1),
            ("analysis.pv_length", a.pv_length, 1),
            ("analysis.max_moves", a.max_moves, 1),
            ("net.threads", self.net.threads, 0),
        ):
            if value < lo:
                raise bad(key, f"must be at least {lo}, not {value}")
        if s.leaves_per_await > MAX_LEAVES:
            raise bad("search.leaves_per_await", f"must be at most {MAX_LEAVES}, not {s.leaves_per_await}")
        if not 0.0 <= s.resign_threshold < 0.5:
            raise bad("search.resign_threshold", "must be in [0, 0.5)")
        if not 0.0 < t.max_move_fraction <= 1.0:
            raise bad("time.max_move_fraction", "must be in (0, 1]")
        if not 0.0 <= t.reserve_fraction < 1.0:
            raise bad("time.reserve_fraction", "must be in [0, 1)")
        if t.lag_margin_s < 0:
            raise bad("time.lag_margin_s", "must not be negative")
        if t.expected_length_factor <= 0:
            raise bad("time.expected_length_factor", "must be positive")
        if s.timeout_ms < 0:
            raise bad("search.timeout_ms", "must not be negative")


def config_from_dict(data: dict[str, Any], where: str = "config") -> GtpConfig:
    """Build a GtpConfig from a parsed file; unknown tables or keys, wrong
    types and out-of-range values raise ConfigError naming ``where``."""
    return fill_sections(GtpConfig, data, where)


def load_config(path: str | Path | None) -> GtpConfig:
    """The defaults when ``path`` is None, else the file's settings."""
    if path is None:
        return GtpConfig()
    return config_from_dict(read_toml(path), str(path))
