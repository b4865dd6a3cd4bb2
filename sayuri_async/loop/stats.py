"""Per-generation statistics of the RL loop: the learning curves' figures.

Vocabulary
----------
game length      positions per self-play game of the generation (mean), read
                 from its chunks.
resignation check  self-play plays out a fraction (``[selfplay]
                 resign_discard_prob``) of the games in which a side would
                 have resigned (``resign_threshold``, ``resign_consecutive``);
                 their positions after the would-be resignation carry
                 ``after_resign``. The *resigner* is the side to move at the
                 position just before the first flagged one (the search that
                 made it resign). ``resign_checked``: such played-out games;
                 ``resign_false_positives``: those the resigner won;
                 ``resign_fp_rate``: their ratio (empty when none was
                 checked). Without a resignation threshold or a discard
                 fraction nothing is checked; a would-be resignation at a
                 game's last move flags no position and is not counted.
anchor           a fixed opponent every generation plays (``[loop]
                 anchor_games`` games, 0 by default: off, so CI stays fast),
                 GNU Go level 1 by default (``anchor_command``). Its win rate
                 gives an Elo against the anchor, ``-400 log10(1/p - 1)``,
                 comparable across generations (``anchor_elo``; infinite at
                 0% or 100%, written empty).
chain Elo        the Elo of each generation from the evaluation games
                 against the previous best: the sum of the Elo differences
                 along the chain of promoted networks (0 for generation 0).
                 ``best_elo``: the chain Elo of the network self-play uses
                 after the generation (the promoted network's line).
data figures     ``new_positions`` a generation brought to training (its
                 held-out share, ``holdout_positions``, excluded),
                 ``window_positions`` in the replay window after it,
                 ``reuse`` (training samples per new position; with
                 ``[data] rehearsal_fraction``, the steps grow so that the
                 rehearsed share leaves the new positions this reuse) and
                 ``new_positions_per_step``.
reference        with ``[loop] reference_dir`` (held-out chunks of the data
                 the start network learnt from): ``reference_value_mse``,
                 ``reference_top1`` (played move named first) and
                 ``reference_policy_ce`` of the generation's network there,
                 and the same of generation 0 (``reference_start_*``):
                 forgetting shows as the first falling away from the second.
value quality    ``value_mse`` of the generation's network on its
                 held-out positions, ``value_mse_best`` of the network that
                 played them, ``value_baseline_mse`` of answering 0
                 (``train/value_quality.py``).
curves           ``logs/generations.csv`` holds one row per generation
                 (``CURVE_COLUMNS``); ``plot_curves`` draws it as
                 ``logs/curves.png`` (win rates, Elo, losses, game length,
                 resignation false positives), with the training plot's
                 reader (``train.plot.read_log``).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

ANCHOR_COMMAND = "/usr/games/gnugo --mode gtp --chinese-rules --capture-all-dead --level 1"

CURVE_COLUMNS = ["generation", "games", "positions", "new_positions", "holdout_positions", "window_positions",
                 "reuse", "new_positions_per_step", "game_length", "steps", "loss_policy", "loss_wdl",
                 "loss_ownership", "value_mse", "value_mse_best", "value_baseline_mse", "reference_value_mse",
                 "reference_start_value_mse", "reference_top1", "reference_start_top1", "win_rate_vs_best",
                 "opponent", "eval_games", "llr", "chain_elo", "best_generation", "best_elo", "anchor_games",
                 "anchor_win_rate", "anchor_elo", "anchor_elo_lo", "anchor_elo_hi", "resign_checked",
                 "resign_false_positives", "resign_fp_rate", "promoted"]


def game_stats(arrays: list[dict]) -> dict:
    """Game count, mean game length and the resignation checks of chunks'
    arrays (each with ``game``, ``after_resign``, ``score``: the side to
    move's final score)."""
    games = positions = checked = false_pos = 0
    for a in arrays:
        game_ids = np.asarray(a["game"])
        flags = np.asarray(a["after_resign"], dtype=bool)
        score = np.asarray(a["score"])
        positions += int(game_ids.shape[0])
        for g in np.unique(game_ids):
            rows = np.flatnonzero(game_ids == g)
            games += 1
            flagged = rows[flags[rows]]
            if flagged.size == 0 or flagged[0] == rows[0]:
                continue  # no would-be resignation played out (a first row cannot follow one)
            checked += 1
            resigner_row = flagged[0] - 1  # the resigner's search, the last position before the flag
            false_pos += int(score[resigner_row] > 0)
    return {"games": games, "game_length": round(positions / games, 1) if games else None,
            "resign_checked": checked, "resign_false_positives": false_pos,
            "resign_fp_rate": round(false_pos / checked, 3) if checked else None}


def generation_game_stats(data_dir: Path, generation: int) -> dict:
    """``game_stats`` of generation ``generation``'s chunks in ``data_dir``
    (unreadable chunks are skipped: the trainer skips them too)."""
    from ..train.dataset import ChunkError, read_chunk

    arrays = []
    for path in sorted(data_dir.glob(f"chunk-{generation:06d}-*.npz")):
        try:
            arrays.append(read_chunk(path))
        except (ChunkError, OSError):
            continue
    return game_stats(arrays)


def elo_or_none(p: float) -> float | None:
    from ..rating.match import elo_of_rate

    e = elo_of_rate(p)
    return round(e, 1) if math.isfinite(e) else None


def anchor_figures(wins: int, losses: int, draws: int) -> dict:
    """Win rate, Elo and the Elo of its Wilson bounds against the anchor."""
    from ..rating.match import MatchResult

    res = MatchResult("net", "anchor", wins, losses, draws)
    lo, hi = res.wilson()
    return {"anchor_games": res.games, "anchor_win_rate": round(res.win_rate, 3),
            "anchor_elo": elo_or_none(res.win_rate), "anchor_elo_lo": elo_or_none(lo),
            "anchor_elo_hi": elo_or_none(hi)}


def chain_elo(summaries: list[dict]) -> dict[int, float]:
    """Generation -> Elo from the evaluation games against the best network
    so far (see the vocabulary); generations whose evaluation was 0% or
    100% (an infinite difference) count at the Elo of 1 game more lost or
    won, a finite stand-in; generations without one are left out."""
    elo: dict[int, float] = {0: 0.0}
    best = 0
    for s in sorted(summaries, key=lambda s: s["generation"]):
        m = s.get("match") or {}
        g = int(s["generation"])
        n = m.get("wins", 0) + m.get("losses", 0) + m.get("draws", 0)
        if n:
            p = (m["wins"] + 0.5 * m["draws"]) / n
            p = min(max(p, 0.5 / (n + 1)), 1 - 0.5 / (n + 1))
            elo[g] = round(elo.get(best, 0.0) - 400.0 * math.log10(1.0 / p - 1.0), 1)
        if s.get("promoted"):
            best = g
    return elo


def curve_rows(summaries: list[dict]) -> list[dict]:
    """The rows of ``logs/generations.csv`` (``CURVE_COLUMNS``; missing
    figures empty)."""
    chain = chain_elo(summaries)
    rows = []
    for s in sorted(summaries, key=lambda s: s["generation"]):
        m = s.get("match") or {}
        row = {c: s.get(c, "") for c in CURVE_COLUMNS}
        row["win_rate_vs_best"] = m.get("win_rate", "")
        row["opponent"] = m.get("opponent", "")
        row["eval_games"] = m.get("wins", 0) + m.get("losses", 0) + m.get("draws", 0) if m else ""
        row["llr"] = m.get("llr", "")
        row["chain_elo"] = chain.get(int(s["generation"]), "")
        row["best_elo"] = chain.get(int(s["best_generation"]), "") if "best_generation" in s else ""
        rows.append({k: ("" if v is None else v) for k, v in row.items()})
    return rows


def plot_curves(csv_path: Path, out: Path) -> Path:
    """Draw ``csv_path`` (the loop's generations.csv) as one PNG; needs matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    from ..train.plot import read_log

    cols = read_log(csv_path)
    gens = cols.get("generation", [])
    if not gens:
        raise ValueError(f"{csv_path}: no generations to plot")

    def col(name: str) -> list[float]:
        return cols.get(name, [math.nan] * len(gens))

    fig, axes = plt.subplots(7, 1, figsize=(8, 18), sharex=True)
    ax = axes[0]
    ax.plot(gens, col("win_rate_vs_best"), "o-", label="vs previous best")
    ax.plot(gens, col("anchor_win_rate"), "s-", label="vs anchor (GNU Go)")
    ax.axhline(0.5, color="grey", lw=0.8)
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel("win rate")
    ax.legend(loc="best", fontsize=8)
    ax = axes[1]
    ax.plot(gens, col("chain_elo"), "o-", label="chain of evaluations")
    ax.step(gens, col("best_elo"), where="post", color="black", lw=1.5, label="promoted network")
    anchor = col("anchor_elo")
    lo, hi = col("anchor_elo_lo"), col("anchor_elo_hi")
    err = [[a - l if math.isfinite(a) and math.isfinite(l) else 0.0 for a, l in zip(anchor, lo)],
           [h - a if math.isfinite(a) and math.isfinite(h) else 0.0 for a, h in zip(anchor, hi)]]
    ax.errorbar(gens, anchor, yerr=err, fmt="s-", capsize=3, label="vs anchor (95% Wilson)")
    ax.set_ylabel("Elo")
    ax.legend(loc="best", fontsize=8)
    ax = axes[2]
    ax.plot(gens, col("loss_policy"), "o-", label="policy")
    ax.plot(gens, col("loss_wdl"), "s-", label="value (wdl)")
    ax.plot(gens, col("loss_ownership"), "^-", label="ownership")
    ax.set_ylabel("loss")
    ax.legend(loc="best", fontsize=8)
    axes[3].plot(gens, col("game_length"), "o-")
    axes[3].set_ylabel("moves a game")
    axes[4].plot(gens, col("resign_fp_rate"), "o-")
    axes[4].set_ylabel("resignation\nfalse positives")
    axes[4].set_ylim(-0.02, 1.02)
    ax = axes[5]
    ax.plot(gens, col("value_mse"), "o-", label="network (held-out self-play)")
    ax.plot(gens, col("value_mse_best"), "s--", label="the network that played them")
    ax.plot(gens, col("value_baseline_mse"), ":", color="grey", label="answering 0")
    if any(v == v for v in col("reference_value_mse")):  # measured on the start network's kind of data
        ax.plot(gens, col("reference_value_mse"), "^-", label="network (reference data)")
        ax.plot(gens, col("reference_start_value_mse"), "v:", label="generation 0 (reference data)")
    ax.set_ylabel("value\nsquared error")
    ax.legend(loc="best", fontsize=8)
    ax = axes[6]
    ax.plot(gens, col("reuse"), "o-", label="samples per new position")
    ax.set_ylabel("reuse")
    ax2 = ax.twinx()
    ax2.plot(gens, col("window_positions"), "s-", color="tab:orange", label="window (positions)")
    ax2.set_ylabel("window positions")
    ax.legend(loc="upper left", fontsize=8)
    ax2.legend(loc="lower right", fontsize=8)
    axes[6].set_xlabel("generation")
    axes[6].xaxis.set_major_locator(MaxNLocator(integer=True))
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.suptitle(f"learning curves: {csv_path}")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    from ..fileio import atomic_path

    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=90, format="png")
    plt.close(fig)
    return out
