"""The loop's data accounting and value quality: training steps set by
samples per new position, a held-out share of each generation's chunks
(stable, counted as played, never trained on) and the value head's
squared error on it, written per generation."""
import csv
import json

import pytest

from sayuri_async.loop.config import LoopConfig, reuse_figures
from sayuri_async.loop.driver import Loop
from sayuri_async.loop.stats import CURVE_COLUMNS, curve_rows
from sayuri_async.loop.workspace import LoopState, Workspace, held_out
from sayuri_async.net.model import Net, NetConfig, init_weights
from sayuri_async.net.weights import save_weights

from test_loop import write_cfg
from test_train_chunks import make_chunk

TINY_NET = dict(blocks=1, channels=8, policy_channels=4, value_channels=4, value_hidden=8)


def test_reuse_sets_the_steps_and_the_figures(tmp_path):
    text = open(write_cfg(tmp_path, 1)).read().replace("[loop]\n", "[loop]\nsamples_per_position = 4\n")
    (tmp_path / "reuse.toml").write_text(text)
    loop = Loop(str(tmp_path / "reuse.toml"), str(tmp_path / "ws"))
    assert loop.train_cfg.optim.batch_size == 8
    assert loop.train_steps(100) == 50  # 100 positions x 4 samples / batch 8
    assert loop.train_steps(3) == 2  # rounded up
    assert reuse_figures(100, 50, 8) == {"new_positions": 100, "planned_steps": 50, "reuse": 4.0,
                                         "new_positions_per_step": 2.0}
    fixed = Loop(write_cfg(tmp_path, 1), str(tmp_path / "ws2"))
    assert fixed.train_steps(100) == 4  # samples_per_position = 0: steps_per_generation


def test_bad_data_settings_are_refused():
    for bad in (dict(samples_per_position=-1), dict(holdout_fraction=0.9), dict(samples_per_position=float("nan")),
                dict(gating_rule="elo"), dict(sprt_elo0=10, sprt_elo1=5), dict(eval_round_games=3)):
        with pytest.raises(ValueError):
            LoopConfig(**bad)


def test_held_out_share_is_stable_and_near_its_fraction():
    names = [f"chunk-000003-host-{k:06d}.npz" for k in range(2000)]
    picked = [n for n in names if held_out(n, 0.1)]
    assert 150 < len(picked) < 250
    assert picked == [n for n in names if held_out(n, 0.1)]
    assert not any(held_out(n, 0.0) for n in names)


def test_hold_out_moves_chunks_and_they_still_count_as_played(tmp_path):
    ws = Workspace(tmp_path / "ws")
    for k in range(40):
        make_chunk(ws.root / "data" / f"chunk-000001-t-{k:06d}.npz", positions=16, game_length=16, seed=k)
    before = ws.games_in_generation(1)
    moved = ws.hold_out(1, 0.25)
    assert 0 < moved < 40 and len(ws.holdout_chunks(1)) == moved
    assert len(list((ws.root / "data").glob("*.npz"))) == 40 - moved
    assert ws.games_in_generation(1) == before == (40, 640)
    assert ws.hold_out(1, 0.25) == 0  # again: nothing left to move


def test_value_quality_is_recorded_per_generation(tmp_path):
    ws_root = tmp_path / "ws"
    loop = Loop(write_cfg(tmp_path, 1), str(ws_root))
    for k in range(3):
        make_chunk(ws_root / "holdout" / f"chunk-000001-t-{k:06d}.npz", positions=32, seed=k)
    for g in (0, 1):
        net = init_weights(Net(NetConfig(**TINY_NET)), seed=g + 1)
        save_weights(loop.ws.weights(g), net, {"step": g})
    st = LoopState(generation=1, phase="eval", best="weights/gen-000000.safetensors")
    vq = loop.value_quality(st)
    assert vq["holdout_positions"] == 96
    assert vq["value_baseline_mse"] > 0 and vq["value_mse"] >= 0 and vq["value_mse_best"] >= 0
    assert vq["value_mse"] != vq["value_mse_best"]
    assert loop.value_quality(LoopState(generation=2)) == {}  # no held-out chunk of generation 2
    rows = curve_rows([{"generation": 1, **vq, "best_generation": 0, "reuse": 4.0}])
    assert {"value_mse", "value_mse_best", "value_baseline_mse", "reuse", "best_elo"} <= set(CURVE_COLUMNS)
    assert rows[0]["value_mse"] == vq["value_mse"] and rows[0]["best_elo"] == 0.0


@pytest.mark.slow
def test_a_loop_generation_holds_out_games_and_writes_value_quality(tmp_path):
    text = open(write_cfg(tmp_path, 1)).read().replace(
        "[loop]\n", "[loop]\nholdout_fraction = 0.5\nsamples_per_position = 2\n").replace(
        "games_per_generation = 2", "games_per_generation = 6")
    cfg = tmp_path / "held.toml"
    cfg.write_text(text)
    ws = tmp_path / "ws"
    assert Loop(str(cfg), str(ws)).run() == 0
    st = json.loads((ws / "state.json").read_text())
    s = st["summaries"][0]
    held = sorted(p.name for p in (ws / "holdout").glob("*.npz"))
    trained = sorted(p.name for p in (ws / "data").glob("*.npz"))
    assert s["games"] == 6 and held and trained and not set(held) & set(trained)
    assert s["new_positions"] == s["positions"] - s["holdout_positions"] > 0
    assert s["planned_steps"] == -(-s["new_positions"] * 2 // 8) == s["steps"]
    assert "value_mse" in s and "value_baseline_mse" in s
    with open(ws / "logs" / "generations.csv") as f:
        row = next(csv.DictReader(f))
    assert float(row["value_mse"]) == s["value_mse"] and float(row["reuse"]) == s["reuse"]


@pytest.mark.slow
def test_a_training_config_given_to_the_loop_is_refused_by_name(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-m", "sayuri_async.cli", "loop", "--config", "configs/train-9x9.toml",
                        "--workspace", str(tmp_path / "ws")], cwd=root, capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "configs/train-9x9.toml: no [loop] section" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "ws" / "state.json").exists()


@pytest.mark.slow
def test_the_loop_trains_in_two_processes_under_torchrun(tmp_path):
    """[run] processes = 2: the generation's training runs as two gloo ranks
    under torchrun and the loop takes rank 0's export, as in one process."""
    text = open(write_cfg(tmp_path, 1)).read().replace("[run]\n", "[run]\nprocesses = 2\ndevice = \"cpu\"\n")
    cfg = tmp_path / "two.toml"
    cfg.write_text(text)
    ws = tmp_path / "ws"
    assert Loop(str(cfg), str(ws)).run() == 0
    st = json.loads((ws / "state.json").read_text())
    assert st["generation"] == 2 and st["summaries"][0]["steps"] == 4
    assert (ws / "weights" / "gen-000001.safetensors").is_file()
    log = (ws / "checkpoints" / "train_log.csv").read_text().splitlines()
    assert log[0].startswith("step,") and len(log) == 3  # steps 2 and 4, written once (rank 0)


def test_reference_figures_measure_each_generation_beside_the_start_on_the_start_networks_data(tmp_path, monkeypatch):
    from sayuri_async.train import value_quality
    from sayuri_async.configfile import ConfigError

    (tmp_path / "ref").mkdir()
    text = open(write_cfg(tmp_path, 1)).read().replace("[loop]\n", f"[loop]\nreference_dir = \"{tmp_path / 'ref'}\"\n")
    (tmp_path / "ref.toml").write_text(text)
    with pytest.raises(ConfigError, match=r"reference_dir .*no chunks"):
        Loop(str(tmp_path / "ref.toml"), str(tmp_path / "ws"))  # refused before any self-play
    for k in range(2):
        make_chunk(tmp_path / "ref" / f"gnugo-{k}.npz", positions=24, seed=10 + k)
    loop = Loop(str(tmp_path / "ref.toml"), str(tmp_path / "ws"))
    for g in (0, 1):
        save_weights(loop.ws.weights(g), init_weights(Net(NetConfig(**TINY_NET)), seed=g + 1), {"step": g})
    ref = loop.reference_quality(LoopState(generation=1, phase="eval", best="weights/gen-000000.safetensors"))
    assert ref["reference_positions"] == 48
    assert 0 <= ref["reference_top1"] <= 1 and 0 <= ref["reference_start_top1"] <= 1
    assert ref["reference_value_mse"] != ref["reference_start_value_mse"]  # two networks, two figures
    row = curve_rows([{"generation": 1, **ref}])[0]
    assert row["reference_value_mse"] == ref["reference_value_mse"]
    assert row["reference_start_top1"] == ref["reference_start_top1"]
    # generation 2 measures only itself: generation 0's figures come from the summary of generation 1
    save_weights(loop.ws.weights(2), init_weights(Net(NetConfig(**TINY_NET)), seed=3), {"step": 2})
    measured = []
    real = value_quality.net_figures
    monkeypatch.setattr(value_quality, "net_figures", lambda path, pos: measured.append(path) or real(path, pos))
    ref2 = loop.reference_quality(LoopState(generation=2, summaries=[{"generation": 1, **ref}]))
    assert measured == [str(loop.ws.weights(2))]
    assert {k: ref2[k] for k in ref2 if k.startswith("reference_start")} == \
        {k: ref[k] for k in ref if k.startswith("reference_start")}
    assert ref2["reference_value_mse"] != ref["reference_value_mse"]
    plain = Loop(write_cfg(tmp_path, 1), str(tmp_path / "ws2"))
    assert plain.reference_quality(LoopState(generation=1)) == {}
