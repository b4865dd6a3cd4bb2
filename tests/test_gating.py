"""Gating: the SPRT's log-likelihood ratio and the promotion decisions
(``sayuri_async/loop/gating.py``), and the loop's use of them: a weaker
candidate is refused and never becomes the self-play network."""
import json
import math

import pytest

from sayuri_async.loop.driver import Loop
from sayuri_async.loop.gating import GateRule, expected_score, sprt_bounds, sprt_llr
from sayuri_async.loop.workspace import LoopState
from sayuri_async.net.model import Net, NetConfig
from sayuri_async.net.weights import save_weights
from sayuri_async.rating import match as match_module

from test_loop import write_cfg


def test_expected_score_is_logistic_in_elo():
    assert expected_score(0) == 0.5
    assert math.isclose(expected_score(400), 10 / 11)
    assert math.isclose(expected_score(-400), 1 / 11)


def test_llr_rises_with_wins_and_falls_with_losses():
    assert sprt_llr(60, 0, 40, 0, 35) > 0 > sprt_llr(40, 0, 60, 0, 35)
    assert sprt_llr(120, 0, 80, 0, 35) > sprt_llr(60, 0, 40, 0, 35)  # the same rate over more games
    assert sprt_llr(0, 0, 0, 0, 35) == 0.0
    assert sprt_llr(0, 10, 0, 0, 35) == 0.0  # only draws: nothing to weigh


def test_llr_of_one_kind_of_result_is_finite():
    assert 0 < sprt_llr(10, 0, 0, 0, 35) < math.inf
    assert -math.inf < sprt_llr(0, 0, 10, 0, 35) < 0


def test_llr_matches_the_normal_approximation_by_hand():
    w, d, l, e0, e1 = 55, 10, 35, 0.0, 35.0
    n = w + d + l
    s = (w + d / 2) / n
    var = (w * (1 - s) ** 2 + d * (0.5 - s) ** 2 + l * s ** 2) / n
    s0, s1 = 0.5, 1 / (1 + 10 ** (-35 / 400))
    assert math.isclose(sprt_llr(w, d, l, e0, e1), n * (s1 - s0) * (2 * s - s0 - s1) / (2 * var))


SPRT = GateRule(mode="sprt", elo0=0, elo1=35, alpha=0.05, beta=0.1, round_games=20, max_games=400)


@pytest.mark.parametrize("wins, draws, losses, decision", [
    (8, 0, 12, "play"),  # too few games to tell
    (30, 0, 70, "refuse"),  # clearly weaker
    (40, 0, 60, "refuse"),  # weaker, over 100 games
    (45, 0, 55, "play"),  # a little weaker: not yet told apart from elo0
    (75, 0, 25, "promote"),  # clearly stronger
    (205, 0, 195, "refuse"),  # the budget spent with the test still open: only evidence promotes
    (11, 0, 9, "play"),
])
def test_sprt_decisions(wins, draws, losses, decision):
    assert SPRT.decide(wins, draws, losses) == decision


def test_sprt_bounds_follow_alpha_and_beta():
    lo, hi = sprt_bounds(0.05, 0.1)
    assert math.isclose(lo, math.log(0.1 / 0.95)) and math.isclose(hi, math.log(0.9 / 0.05))


def test_win_rate_and_none_rules():
    rule = GateRule(mode="win_rate", win_rate=0.55, round_games=40, max_games=40)
    assert rule.decide(20, 0, 10) == "play"
    assert rule.decide(22, 0, 18) == "promote" and rule.decide(21, 1, 18) == "refuse"
    none = GateRule(mode="none", round_games=10, max_games=10)
    assert none.decide(0, 0, 10) == "promote"


def test_next_round_stops_at_the_budget():
    assert SPRT.next_round(0) == 20 and SPRT.next_round(390) == 10 and SPRT.next_round(400) == 0


def gated_cfg(tmp_path, rule: str) -> str:
    text = open(write_cfg(tmp_path, 1)).read().replace(
        "eval_games = 2\n", f"eval_games = 60\ngating = true\ngating_rule = \"{rule}\"\neval_round_games = 20\n")
    p = tmp_path / f"gated-{rule}.toml"
    p.write_text(text)
    return str(p)


def fake_match(win_rate: float):
    """A ``run_match`` that plays no game: the candidate wins ``win_rate``
    of each round."""
    async def run(a, b, games, *args, **kwargs):
        res = match_module.MatchResult(a.name, b.name)
        wins = round(games * win_rate)
        res.wins, res.losses = wins, games - wins
        return res
    return run


@pytest.mark.slow
@pytest.mark.parametrize("win_rate, promoted, games", [(0.3, False, 60), (0.5, False, 60), (0.85, True, 40)])
def test_the_loop_refuses_a_weaker_candidate(tmp_path, monkeypatch, win_rate, promoted, games):
    """The evaluation phase decides by SPRT in rounds; a refused candidate
    leaves the best network as it was."""
    monkeypatch.setattr(match_module, "run_match", fake_match(win_rate))
    monkeypatch.setattr("sayuri_async.backend_factory.make_backend", lambda *a, **k: None)
    ws = tmp_path / "ws"
    loop = Loop(gated_cfg(tmp_path, "sprt"), str(ws))
    # the players never load them here; the best one must be whole for the loop to start
    save_weights(ws / "weights" / "gen-000000.safetensors", Net(NetConfig(blocks=1, channels=8)))
    (ws / "weights" / "gen-000001.safetensors").write_bytes(b"")
    prior = LoopState(generation=1, phase="eval", best="weights/gen-000000.safetensors", best_generation=0,
                      summaries=[{"generation": 1}])
    loop.ws.save_state(prior)
    assert loop.run() == 0
    st = json.loads((ws / "state.json").read_text())
    s = st["summaries"][0]
    assert s["promoted"] is promoted and s["match"]["wins"] + s["match"]["losses"] == games
    assert s["match"]["decision"] == ("promote" if promoted else "refuse")
    assert st["best_generation"] == (1 if promoted else 0)
    assert st["best"] == ("weights/gen-000001.safetensors" if promoted else "weights/gen-000000.safetensors")
    assert s["best_generation"] == st["best_generation"]
