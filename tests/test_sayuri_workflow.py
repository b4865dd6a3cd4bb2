"""The Sayuri workflow of docs/sayuri.md ("The whole workflow") end to end, as
a user runs it, on tiny data: synthetic Sayuri v2 records
(``tools/gen_sayuri_data.py``), ``import-data --config
configs/sayuri-import.toml``, ``train --config configs/sayuri-train-19x19.toml``
(a new Sayuri network from ``[model]``, then one continued from its export with
``--init``), and ``loop --init`` with ``configs/sayuri-loop-19x19.toml``.

The shipped configs are read and only their sizes are cut down (board, network,
batch, games) so the run takes seconds; every other key is theirs. What
``tests/test_sayuri_train.py`` checks (a Sayuri file's outputs before the first
step, every head's gradient, export round trips) is not repeated here.
"""
from __future__ import annotations

import csv
import importlib.util
import json
import tomllib
from pathlib import Path

import pytest

from sayuri_async.chunkfile import read_chunk
from sayuri_async.cli import main as cli
from sayuri_async.sayuri.model import SayuriNet
from sayuri_async.sayuri.weights import load_any_weights
from sayuri_async.train.losses import SAYURI_LOSS_NAMES

ROOT = Path(__file__).resolve().parents[1]
TINY_MODEL = {"blocks": 1, "channels": 8, "policy_channels": 8, "value_channels": 8}


def toml_text(doc: dict) -> str:
    """A parsed TOML document of tables of plain values, written back."""
    lines = []
    for table, body in doc.items():
        lines.append(f"[{table}]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in body.items()]
        lines.append("")
    return "\n".join(lines)


def shipped(name: str, out: Path, **changes: dict) -> Path:
    """``configs/<name>`` with the tables' keys in ``changes`` replaced, written to ``out``."""
    doc = tomllib.loads((ROOT / "configs" / name).read_text())
    for table, values in changes.items():
        assert set(values) <= set(doc[table]), f"{name} [{table}] lacks {set(values) - set(doc[table])}"
        doc[table].update(values)
    out.write_text(toml_text(doc))
    return out


def gen_sayuri_data(argv: list[str]) -> int:
    spec = importlib.util.spec_from_file_location("gen_sayuri_data", ROOT / "tools" / "gen_sayuri_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.main(argv)


def log_rows(run: Path) -> list[dict]:
    with open(run / "train_log.csv", newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_the_sayuri_workflow_runs_end_to_end(tmp_path, capsys):
    raw, data = tmp_path / "tdata", tmp_path / "data"
    assert gen_sayuri_data([str(raw), "--records", "240", "--board", "9", "--per-file", "120",
                            "--game-length", "40", "--seed", "5"]) == 0

    # step 1: import-data, the shipped config with its folder moved
    cfg = shipped("sayuri-import.toml", tmp_path / "import.toml", **{"import": {"out": str(data)}})
    assert cli(["import-data", "--config", str(cfg), *sorted(map(str, raw.glob("*.txt.gz")))]) == 0
    assert "240 positions from 2 file(s)" in capsys.readouterr().out
    (chunk,) = sorted(data.glob("chunk-*.npz"))
    assert chunk.name.startswith("chunk-000000-") and chunk.name.endswith("-000001.npz")
    assert read_chunk(chunk, 9, "sayuri-v3", 43)["q_avg"].shape == (240, 4)

    # step 2: supervised training of a new Sayuri network, then one continued from its export
    small = {"data": {"dir": str(data), "board_size": 9, "shuffle_buffer": 256, "workers": 0},
             "model": TINY_MODEL, "optim": {"batch_size": 32}, "schedule": {"warmup": 0},
             "run": {"out": str(tmp_path / "train"), "device": "cpu", "checkpoint_every": 3, "log_every": 1,
                     "progress": "off"}}
    cfg = shipped("sayuri-train-19x19.toml", tmp_path / "train.toml", **small)
    assert cli(["train", "--config", str(cfg), "--steps", "3"]) == 0
    err = capsys.readouterr().err
    # lr_scaling "inverse-keep-steps" gives 128 / 32 = x4 at batch 32: held at the configured rates, said once
    assert "batch 32 (schedule written for 128), rates x1 (lr_scaling 'inverse-keep-steps')" in err
    assert err.count("gives rates x4; they stay at the configured rates") == 1
    export = tmp_path / "train" / "weights" / "sayuri-latest.safetensors"
    net, _ = load_any_weights(export)
    assert isinstance(net, SayuriNet) and net.config.short_name == "1b8c" and net.config.encoder == "sayuri-v3"
    rows = log_rows(tmp_path / "train")
    assert [int(r["step"]) for r in rows] == [1, 2, 3]
    assert float(rows[-1]["lr"]) == pytest.approx(0.005)
    assert all(rows[-1][name] != "" for name in SAYURI_LOSS_NAMES)

    assert cli(["train", "--config", str(cfg), "--init", str(export), "--out", str(tmp_path / "more"),
                "--steps", "2"]) == 0
    assert f"starting from {export} (Sayuri v5, norms batch, 1b8c)" in capsys.readouterr().err
    assert (tmp_path / "more" / "weights" / "sayuri-s000000002.safetensors").is_file()

    # step 3: the RL loop from that network
    ws = tmp_path / "loop"
    tiny = {"loop": {"generations": 1, "games_per_generation": 2, "steps_per_generation": 2, "eval_games": 0,
                     "device": "cpu"},
            "selfplay": {"board_sizes": [9], "parallel_games": 2, "batch_size": 2, "playouts": 4,
                         "reduce_playouts": 2, "chunk_games": 1, "device": "cpu"},
            "data": {"board_size": 9, "window_min_positions": 16, "shuffle_buffer": 256, "workers": 0},
            "model": TINY_MODEL, "optim": {"batch_size": 16},
            "run": {"device": "cpu", "checkpoint_every": 2, "log_every": 1, "progress": "off"}}
    cfg = shipped("sayuri-loop-19x19.toml", tmp_path / "loop.toml", **tiny)
    assert cli(["loop", "--config", str(cfg), "--workspace", str(ws), "--init", str(export)]) == 0
    state = json.loads((ws / "state.json").read_text())
    assert state["best"] == "weights/gen-000001.safetensors" and len(state["summaries"]) == 1
    assert (ws / "weights" / "gen-000000.safetensors").read_bytes() == export.read_bytes()
    played = sorted((ws / "data").glob("chunk-000001-*.npz"))
    assert len(played) == 2 and all(read_chunk(p)["meta"]["encoder"] == "sayuri-v3" for p in played)
    net, _ = load_any_weights(ws / "weights" / "gen-000001.safetensors")
    assert isinstance(net, SayuriNet) and net.config.short_name == "1b8c"


@pytest.mark.parametrize("table, message", [
    ("chunk_positions = 0", "[import] chunk_positions: must be at least 1"),
    ("jobs = 'two'", "[import] jobs: must be a whole number"),
    ("outdir = 'x'", "[import] outdir: unknown key"),
])
def test_import_config_keys_are_checked(tmp_path, capsys, table, message):
    src = tmp_path / "a.txt"
    src.write_text("")
    cfg = tmp_path / "import.toml"
    cfg.write_text(f"[import]\nout = '{tmp_path / 'out'}'\n{table}\n")
    assert cli(["import-data", "--config", str(cfg), str(src)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(cfg) in err[0] and message in err[0]
    assert not (tmp_path / "out").exists()


def test_import_options_override_the_config(tmp_path, capsys):
    raw = tmp_path / "tdata"
    assert gen_sayuri_data([str(raw), "--records", "30", "--board", "7", "--game-length", "10"]) == 0
    cfg = shipped("sayuri-import.toml", tmp_path / "import.toml", **{"import": {"out": str(tmp_path / "a")}})
    files = sorted(map(str, raw.glob("*.txt.gz")))
    assert cli(["import-data", "--config", str(cfg), "--chunk-positions", "10", "-o", str(tmp_path / "b"),
                "--generation", "3", *files]) == 0
    assert not (tmp_path / "a").exists()
    assert [p.name.split("-")[1] for p in sorted((tmp_path / "b").glob("*.npz"))] == ["000003"] * 3
    capsys.readouterr()
    assert cli(["import-data", *files]) == 2
    assert "-o: the folder for the chunks is required" in capsys.readouterr().err
