"""The loop's per-generation statistics: game length and resignation false
positives from chunk arrays, the chain Elo, the CSV rows and the plot, and a
one-generation loop with anchor games against GNU Go."""
from __future__ import annotations

import csv
import importlib.util
import json
import shutil

import numpy as np
import pytest

from sayuri_async.loop.driver import Loop
from sayuri_async.loop.stats import CURVE_COLUMNS, anchor_figures, chain_elo, curve_rows, game_stats, plot_curves

from test_loop import TINY


def arrays(games: list[tuple[int, int | None, float]]) -> dict:
    """Chunk arrays of games given as (positions, first flagged row or None,
    the resigner's final score in its own view)."""
    game, flags, score = [], [], []
    for g, (m, first, resigner_score) in enumerate(games):
        game += [g] * m
        flags += [first is not None and i >= first for i in range(m)]
        # the side to move alternates; the resigner moves at row first-1
        r = (first - 1) if first is not None else 0
        score += [resigner_score if (i - r) % 2 == 0 else -resigner_score for i in range(m)]
    return {"game": np.array(game, np.int32), "after_resign": np.array(flags), "score": np.array(score, np.float32)}


def test_game_stats_counts_played_out_resignations_the_resigner_won():
    a = arrays([(10, 4, 3.5),   # played out after row 3's resignation; the resigner won: a false positive
                (8, 2, -6.5),   # played out; the resigner lost: the resignation was right
                (6, None, 1.5)])  # no would-be resignation
    b = arrays([(12, 7, 0.5)])  # a second chunk: the resigner won by half a point
    st = game_stats([a, b])
    assert st == {"games": 4, "game_length": 9.0, "resign_checked": 3, "resign_false_positives": 2,
                  "resign_fp_rate": 0.667}
    none = game_stats([arrays([(5, None, 1.0)])])
    assert none["resign_checked"] == 0 and none["resign_fp_rate"] is None


def test_chain_elo_adds_differences_along_promoted_networks():
    summaries = [{"generation": 1, "match": {"wins": 15, "losses": 5, "draws": 0}, "promoted": True},  # 75%: +191
                 {"generation": 2, "match": {"wins": 5, "losses": 15, "draws": 0}, "promoted": False},  # vs gen 1
                 {"generation": 3, "match": {"wins": 10, "losses": 10, "draws": 0}, "promoted": True}]  # vs gen 1
    elo = chain_elo(summaries)
    assert elo[0] == 0.0 and elo[1] == pytest.approx(190.8, abs=0.1)
    assert elo[2] == pytest.approx(0.0, abs=0.1) and elo[3] == pytest.approx(190.8, abs=0.1)
    assert chain_elo([{"generation": 1, "match": {"wins": 4, "losses": 0, "draws": 0}}])[1] > 300  # finite at 100%


def test_anchor_figures_and_curve_rows():
    f = anchor_figures(3, 1, 0)
    assert f["anchor_games"] == 4 and f["anchor_win_rate"] == 0.75 and f["anchor_elo"] == pytest.approx(190.8, 0.01)
    assert f["anchor_elo_lo"] < f["anchor_elo"] < f["anchor_elo_hi"]
    assert anchor_figures(2, 0, 0)["anchor_elo"] is None  # infinite: written empty
    rows = curve_rows([{"generation": 1, "games": 2, "match": {"wins": 1, "losses": 1, "draws": 0, "win_rate": 0.5,
                                                               "opponent": "random"}, **f}])
    assert list(rows[0]) == CURVE_COLUMNS
    assert rows[0]["win_rate_vs_best"] == 0.5 and rows[0]["chain_elo"] == 0.0 and rows[0]["resign_fp_rate"] == ""


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="matplotlib not installed")
def test_plot_curves_writes_a_png(tmp_path):
    path = tmp_path / "generations.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CURVE_COLUMNS)
        w.writeheader()
        for g in (1, 2, 3):
            w.writerow({"generation": g, "win_rate_vs_best": 0.5 + 0.1 * g, "anchor_win_rate": 0.2 * g,
                        "anchor_elo": -100 + 50 * g, "anchor_elo_lo": -200 + 50 * g, "anchor_elo_hi": 50 * g,
                        "chain_elo": 30 * g, "loss_policy": 2 - 0.1 * g, "loss_wdl": 1 - 0.1 * g,
                        "game_length": 60 + g, "resign_fp_rate": ""})
    out = plot_curves(path, tmp_path / "png" / "curves.png")
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


@pytest.mark.slow
@pytest.mark.gnugo
@pytest.mark.skipif(shutil.which("gnugo") is None and not shutil.which("/usr/games/gnugo"), reason="no GNU Go")
def test_loop_generation_plays_the_anchor_and_logs_the_curves(tmp_path):
    gnugo = shutil.which("gnugo") or "/usr/games/gnugo"
    cfg = TINY.format(generations=1).replace(
        "eval_playouts = 4",
        f'eval_playouts = 4\nanchor_games = 2\nanchor_command = "{gnugo} --mode gtp --level 1 --chinese-rules '
        f'--capture-all-dead"')
    path = tmp_path / "loop.toml"
    path.write_text(cfg)
    ws = tmp_path / "ws"
    assert Loop(str(path), str(ws)).run() == 0
    st = json.loads((ws / "state.json").read_text())
    s = st["summaries"][0]
    assert s["anchor_games"] == 2 and s["game_length"] > 0 and s["resign_checked"] == 0
    assert len(list((ws / "matches" / "anchor-000001").glob("*.sgf"))) == 2
    rows = list(csv.DictReader(open(ws / "logs" / "generations.csv")))
    assert rows[0]["anchor_games"] == "2" and rows[0]["anchor_win_rate"] != ""
    if importlib.util.find_spec("matplotlib") is not None:
        assert (ws / "logs" / "curves.png").read_bytes()[:4] == b"\x89PNG"
    # a workspace begun from a network (--init) plays the anchor with it first: generation 0 of the curves
    loop = Loop(str(path), str(tmp_path / "ws2"))
    loop.init_from(str(ws / "weights" / "gen-000001.safetensors"))
    loop.anchor_init(loop.ws.load_state())
    st = loop.ws.load_state()
    assert st.summaries[0]["generation"] == 0 and st.summaries[0]["anchor_games"] == 2
    assert st.generation == 1 and st.phase == "selfplay"
    loop.anchor_init(st)  # once only
    assert len(loop.ws.load_state().summaries) == 1


def test_an_anchor_that_is_not_installed_is_a_config_error(tmp_path):
    from sayuri_async.loop.driver import main

    path = tmp_path / "loop.toml"
    path.write_text(TINY.format(generations=1).replace(
        "eval_playouts = 4", 'eval_playouts = 4\nanchor_games = 2\nanchor_command = "/nonexistent/gnugo --mode gtp"'))
    assert main(["--config", str(path), "--workspace", str(tmp_path / "ws")]) == 2
