"""The RL loop survives kills and bad files: a kill between training and the
state file, an unreadable checkpoint, self-play processes of a killed loop,
an unknown phase, mismatched board sizes, temporaries of killed writes."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sayuri_async import fileio
from sayuri_async.killpoint import ENV
from sayuri_async.loop.driver import Loop
from sayuri_async.loop.workspace import Workspace
from test_loop import TINY, write_cfg
from test_selfplay import _alive
from test_selfplay_lifetime import _descendants, linux_only

ROOT = Path(__file__).resolve().parents[1]


def _loop_cmd(cfg: str, ws: Path) -> list[str]:
    return [sys.executable, "-m", "sayuri_async.cli", "loop", "--config", cfg, "--workspace", str(ws)]


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def _set_state(ws: Path, **kw) -> None:
    st = json.loads((ws / "state.json").read_text())
    st.update(kw)
    (ws / "state.json").write_text(json.dumps(st))


@pytest.mark.slow
def test_a_loop_killed_between_its_last_checkpoint_and_its_state_file_continues(tmp_path):
    ws = tmp_path / "ws"
    cfg = write_cfg(tmp_path, 1)
    env = dict(os.environ, **{ENV: "loop-trained"})
    out = subprocess.run(_loop_cmd(cfg, ws), cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == -signal.SIGKILL, out.stderr
    st = json.loads((ws / "state.json").read_text())
    assert (st["generation"], st["phase"]) == (1, "train")  # training was done, the state did not say so
    assert Loop(cfg, str(ws)).run() == 0
    st = json.loads((ws / "state.json").read_text())
    assert st["generation"] == 2 and st["summaries"][0]["steps"] == 4 and "loss_policy" in st["summaries"][0]
    assert (ws / "weights" / "gen-000001.safetensors").is_file()


@pytest.mark.slow
def test_a_training_phase_that_had_finished_runs_again_and_the_loop_goes_on(tmp_path):
    ws = tmp_path / "ws"
    cfg = write_cfg(tmp_path, 1)
    assert Loop(cfg, str(ws)).run() == 0
    _set_state(ws, generation=1, phase="train", best="random", best_generation=0)  # as a kill would leave it
    assert Loop(cfg, str(ws)).run() == 0
    st = json.loads((ws / "state.json").read_text())
    assert st["generation"] == 2 and st["phase"] == "selfplay" and st["best"] == "weights/gen-000001.safetensors"


@pytest.mark.slow
def test_the_loop_falls_back_to_an_older_checkpoint_when_the_newest_is_unreadable(tmp_path, capsys):
    ws = tmp_path / "ws"
    cfg = write_cfg(tmp_path, 1)
    assert Loop(cfg, str(ws)).run() == 0
    newest = ws / "checkpoints" / "checkpoints" / "ckpt-000000004.pt"
    newest.write_bytes(b"damaged")
    _set_state(ws, generation=1, phase="train", best="random", best_generation=0)
    capsys.readouterr()
    assert Loop(cfg, str(ws)).run() == 0
    captured = capsys.readouterr()
    assert "ckpt-000000004.pt" in captured.err and "older checkpoint" in captured.err
    assert "resuming at 2" in captured.out
    st = json.loads((ws / "state.json").read_text())
    assert st["generation"] == 2 and st["summaries"][0]["steps"] == 4


@pytest.mark.slow
@linux_only
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_self_play_processes_of_a_stopped_loop_stop_writing(tmp_path, sig):
    cfg = tmp_path / "loop.toml"
    cfg.write_text(TINY.format(generations=1).replace("games_per_generation = 2", "games_per_generation = 500")
                   .replace("chunk_games = 1", "chunk_games = 1\nprocs = 2"))
    ws = tmp_path / "ws"
    proc = subprocess.Popen(_loop_cmd(str(cfg), ws), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    t0 = time.time()
    while not all(list((ws / "data").glob(f"chunk-000001-*-{t}-*.npz")) for t in ("p0", "p1")):
        assert proc.poll() is None, proc.communicate()
        assert time.time() - t0 < 180
        time.sleep(0.2)
    family = _descendants(proc.pid)
    assert len(family) >= 5, family  # engines, writers, resource tracker
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=90)
    if sig == signal.SIGTERM:
        assert proc.returncode == 143, err  # a clean stop, 128 + SIGTERM
        assert not (ws / "state.json").exists()  # and the generation's self-play is not taken as done
    t0 = time.time()
    while any(_alive(p) for p in family) and time.time() - t0 < 30:
        time.sleep(0.2)
    assert not [p for p in family if _alive(p)], "a self-play process outlived the loop"
    written = sorted((ws / "data").glob("*.npz"))
    time.sleep(1.5)
    assert sorted((ws / "data").glob("*.npz")) == written
    assert not list(ws.rglob(".*.tmp"))


@pytest.mark.slow
def test_an_unknown_phase_is_refused_with_the_state_files_name(tmp_path):
    ws = tmp_path / "ws"
    Workspace(ws)
    (ws / "state.json").write_text(json.dumps({"generation": 3, "phase": "trian"}))
    out = subprocess.run(_loop_cmd(write_cfg(tmp_path, 2), ws), cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2
    line = _one_line(out.stderr)
    assert str(ws / "state.json") in line and "'trian'" in line


@pytest.mark.slow
def test_training_and_self_play_board_sizes_must_agree_at_start(tmp_path):
    cfg = tmp_path / "loop.toml"
    cfg.write_text(TINY.format(generations=1).replace("board_sizes = [7]", "board_sizes = [9]"))
    ws = tmp_path / "ws"
    out = subprocess.run(_loop_cmd(str(cfg), ws), cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    line = _one_line(out.stderr)
    assert "loop.toml" in line and "board_size 7" in line and "[9]" in line
    assert not (ws / "data").exists() or not list((ws / "data").iterdir())


@pytest.mark.slow
def test_a_start_removes_temporaries_of_killed_writes_in_the_workspace(tmp_path):
    ws = tmp_path / "ws"
    Workspace(ws)
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    left = [ws / "weights" / f".gen-000001.safetensors.{p.pid}-{fileio.HOST}-0000abcd.tmp",
            ws / f".state.json.{p.pid}-{fileio.HOST}-0000abce.tmp",
            ws / "logs" / f".generations.csv.{p.pid}-{fileio.HOST}-0000abcf.tmp"]
    for f in left:
        f.write_bytes(b"half")
    (ws / "STOP").write_text("")
    assert Loop(write_cfg(tmp_path, 1), str(ws)).run() == 0
    assert not any(f.exists() for f in left)
