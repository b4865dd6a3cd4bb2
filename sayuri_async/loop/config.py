"""The loop's settings: the ``[loop]`` table (``LoopConfig``) and the one
TOML file that holds it beside ``[selfplay]``, ``[search]`` and the
trainer's sections (``load_loop_config``).

Vocabulary
----------
LoopConfig     the ``[loop]`` table, range-checked on construction; its
               ``gate_rule`` is the promotion rule (``gating``).
reuse          training samples per new self-play position of a generation
               (``reuse_figures``); the rehearsed share is left out.
TRAIN_SECTIONS the trainer's tables a loop config may hold (``train.config``).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..configfile import ConfigError, at_least, check_tables, fill, read_toml, require, within
from .gating import GateRule
from .stats import ANCHOR_COMMAND

TRAIN_SECTIONS = ("data", "model", "optim", "schedule", "loss", "average", "run")


@dataclass
class LoopConfig:
    generations: int = 10  # 0: until stopped
    games_per_generation: int = 200
    steps_per_generation: int = 500
    eval_games: int = 20
    eval_playouts: int = 64
    gating: bool = False
    gating_rule: str = "win_rate"  # "win_rate" or "sprt" (gating.py)
    gating_win_rate: float = 0.55
    sprt_elo0: float = 0.0
    sprt_elo1: float = 35.0
    sprt_alpha: float = 0.05
    sprt_beta: float = 0.10
    eval_round_games: int = 20  # SPRT: games between two looks at the test
    device: str = "cpu"
    anchor_games: int = 0  # games against the anchor per generation (0: none)
    anchor_command: str = ANCHOR_COMMAND  # the anchor: a GTP engine command line
    anchor_playouts: int = 0  # our playouts a move against it (0: eval_playouts)
    samples_per_position: float = 0.0  # training samples per new position (0: steps_per_generation steps)
    holdout_fraction: float = 0.0  # share of each generation's chunks kept out of training for value quality
    export_norms: str = "as_trained"  # or "recompute": batch-norm statistics from fresh positions (norm_stats.py)
    norm_positions: int = 8192  # positions the recomputed statistics average over
    # Held-out chunks of the data the start network learnt from (never trained
    # on): every generation's value and policy are measured on them too, so
    # that forgetting shows (train/value_quality.py, "reference"). "": none.
    reference_dir: str = ""

    def __post_init__(self) -> None:
        """Range checks (see ``configfile``): ``Bad`` naming the key."""
        at_least(self, 1, "games_per_generation", "steps_per_generation", "eval_playouts")
        at_least(self, 0, "eval_games", "generations", "anchor_games", "anchor_playouts")
        within(self, "[0, 1]", "gating_win_rate")
        within(self, "[0, 1000]", "samples_per_position")
        within(self, "[0, 0.5]", "holdout_fraction")
        require(self.gating_rule in ("win_rate", "sprt"), "gating_rule", 'must be "win_rate" or "sprt"')
        require(self.export_norms in ("as_trained", "recompute"), "export_norms",
                'must be "as_trained" or "recompute"')
        within(self, "[1, 1000000]", "norm_positions")
        within(self, "(0, 0.5)", "sprt_alpha", "sprt_beta")
        within(self, "[-1000, 1000]", "sprt_elo0", "sprt_elo1")
        require(self.sprt_elo0 < self.sprt_elo1, "sprt_elo1", f"must be above sprt_elo0 ({self.sprt_elo0:g})")
        at_least(self, 2, "eval_round_games")
        require(self.eval_round_games % 2 == 0, "eval_round_games", "must be even (colours alternate in pairs)")
        within(self, "[0, 100000]", "games_per_generation", "steps_per_generation", "eval_games", "anchor_games",
               "eval_round_games")
        within(self, "[0, 1000000]", "eval_playouts", "anchor_playouts", "generations")

    def gate_rule(self) -> GateRule:
        """The promotion rule these settings describe (``gating.py``);
        ``eval_games`` is its most games."""
        mode = self.gating_rule if self.gating else "none"
        return GateRule(mode=mode, elo0=self.sprt_elo0, elo1=self.sprt_elo1, alpha=self.sprt_alpha,
                        beta=self.sprt_beta, win_rate=self.gating_win_rate,
                        round_games=self.eval_round_games if mode == "sprt" else max(self.eval_games, 2),
                        max_games=self.eval_games)


def reuse_figures(new_positions: int, steps: int, batch: int, rehearsal_fraction: float = 0.0) -> dict:
    """The data figures of a generation: ``reuse``, training samples per
    new position (the rehearsed share of the samples, ``[data]
    rehearsal_fraction``, left out), and ``new_positions_per_step``."""
    samples = steps * batch * (1.0 - rehearsal_fraction)
    return {"new_positions": new_positions, "planned_steps": steps,
            "reuse": round(samples / new_positions, 2) if new_positions else None,
            "new_positions_per_step": round(new_positions / steps, 1) if steps else None,
            **({"rehearsal_fraction": rehearsal_fraction} if rehearsal_fraction else {})}


def load_loop_config(path: str):
    """(LoopConfig, SelfplayConfig, TrainConfig) from one TOML file with
    ``[loop]``, ``[selfplay]``, ``[search]`` and the trainer's sections."""
    from ..search.config import SearchConfig
    from ..selfplay.config import SelfplayConfig
    from ..train.config import from_dict

    raw = read_toml(path)
    check_tables(raw, ["loop", "selfplay", "search", *TRAIN_SECTIONS], str(path))
    loop_cfg = fill(LoopConfig, raw.get("loop", {}), str(path), "loop")
    sp = dict(raw.get("selfplay", {}))
    if "search" in raw:
        sp["search"] = fill(SearchConfig, raw["search"], str(path), "search")
    sp_cfg = fill(SelfplayConfig, sp, str(path), "selfplay")
    train_cfg = from_dict({k: raw[k] for k in TRAIN_SECTIONS if k in raw}, str(path))
    if "loop" not in raw:
        raise ConfigError(f"{path}: no [loop] section: not a loop config (configs/loop-9x9.toml is one; a "
                          "training config goes to `sayuri-async train --config`)")
    if set(sp_cfg.board_sizes) != {train_cfg.data.board_size}:
        raise ConfigError(f"{path}: [data] board_size {train_cfg.data.board_size} differs from [selfplay] "
                          f"board_sizes {sp_cfg.board_sizes}: the loop trains on its own games, so both "
                          "must name the same single size")
    if sp_cfg.follow_weights:
        raise ConfigError(f"{path}: [selfplay] follow_weights: the loop plays each generation's best network; "
                          "a folder is followed by `selfplay --follow-weights` beside `train --follow`")
    return loop_cfg, sp_cfg, train_cfg
