"""The RL loop end to end on a tiny 7x7 setting: two generations, a resume,
and a state file that survives a kill between phases."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from sayuri_async.loop.driver import Loop
from sayuri_async.loop.workspace import Workspace

ROOT = Path(__file__).resolve().parents[1]

TINY = """
[loop]
generations = {generations}
games_per_generation = 2
steps_per_generation = 4
eval_games = 2
eval_playouts = 4

[selfplay]
board_sizes = [7]
parallel_games = 2
batch_size = 2
playouts = 6
reduce_playouts = 0
chunk_games = 1
write_sgf = true

[search]
edge_capacity = 20000

[data]
board_size = 7
window_min_positions = 100
window_max_positions = 1000
shuffle_buffer = 100
workers = 0

[model]
blocks = 1
channels = 8
policy_channels = 4
value_channels = 4
value_hidden = 8

[optim]
batch_size = 8

[schedule]
warmup = 2
boundaries = [100]
rates = [0.01, 0.005]
total = 200

[run]
checkpoint_every = 2
log_every = 2
progress = "off"
"""


def write_cfg(tmp_path: Path, generations: int) -> str:
    p = tmp_path / f"loop{generations}.toml"
    p.write_text(TINY.format(generations=generations))
    return str(p)


@pytest.mark.slow
def test_loop_runs_two_generations_then_resumes_for_a_third(tmp_path):
    ws = tmp_path / "ws"
    assert Loop(write_cfg(tmp_path, 2), str(ws)).run() == 0
    st = json.loads((ws / "state.json").read_text())
    assert st["generation"] == 3 and st["phase"] == "selfplay"
    assert (ws / "weights" / "gen-000001.safetensors").is_file()
    assert (ws / "weights" / "gen-000002.safetensors").is_file()
    assert [s["generation"] for s in st["summaries"]] == [1, 2]
    assert all(s["games"] == 2 and s["match"]["wins"] + s["match"]["losses"] + s["match"]["draws"] == 2
               for s in st["summaries"])
    assert st["summaries"][1]["steps"] == 8  # training continued from generation 1's step 4
    assert len(list((ws / "data").glob("chunk-000001-*.npz"))) == 2
    assert len(list((ws / "data").glob("chunk-000002-*.npz"))) == 2
    assert (ws / "logs" / "generations.csv").read_text().count("\n") == 3
    # a second start with one more generation continues where the first ended
    assert Loop(write_cfg(tmp_path, 3), str(ws)).run() == 0
    st = json.loads((ws / "state.json").read_text())
    assert st["generation"] == 4
    assert st["summaries"][2]["steps"] == 12
    assert len(list((ws / "data").glob("chunk-000003-*.npz"))) == 2


@pytest.mark.slow
def test_loop_continues_a_generation_killed_after_self_play(tmp_path):
    ws = tmp_path / "ws"
    cfg = write_cfg(tmp_path, 1)
    loop = Loop(cfg, str(ws))
    st = loop.ws.load_state()
    assert loop.selfplay(st)  # self-play finished, then the process "died" before saving the phase
    games, _ = loop.ws.games_in_generation(1)
    assert games == 2
    assert Loop(cfg, str(ws)).run() == 0  # no games replayed: the generation goes on to training
    assert len(list((ws / "data").glob("chunk-000001-*.npz"))) == 2
    st = json.loads((ws / "state.json").read_text())
    assert st["generation"] == 2 and st["summaries"][0]["steps"] == 4


def test_stop_file_ends_the_loop_before_any_work(tmp_path):
    ws = tmp_path / "ws"
    Workspace(ws)
    (ws / "STOP").write_text("")
    assert Loop(write_cfg(tmp_path, 2), str(ws)).run() == 0
    assert not list((ws / "data").glob("*.npz"))


@pytest.mark.slow
def test_bad_loop_config_names_the_file_and_key(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("[loop]\ngames_per_generaton = 3\n")
    out = subprocess.run([sys.executable, "-m", "sayuri_async.cli", "loop", "--config", str(p), "--workspace",
                          str(tmp_path / "ws")], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 2
    assert "bad.toml" in out.stderr and "games_per_generaton" in out.stderr
