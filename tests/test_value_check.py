"""tools/value_check.py: a network's value and policy figures on a folder of chunks."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from test_train_chunks import make_chunk

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("value_check", ROOT / "tools" / "value_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _net(path: Path) -> Path:
    from sayuri_async.net.model import Net, NetConfig
    from sayuri_async.net.weights import save_weights

    save_weights(path, Net(NetConfig(blocks=1, channels=8, policy_channels=4, value_channels=4, value_hidden=8)),
                 {"name": "tiny"})
    return path


@pytest.mark.slow
def test_figures_follow_the_chunks_and_the_network(tmp_path, capsys):
    from sayuri_async.backend_factory import make_backend

    one = make_chunk(tmp_path / "data" / "chunk-000001-a-000001.npz", n=7, positions=40, seed=1)
    make_chunk(tmp_path / "data" / "chunk-000002-a-000001.npz", n=7, positions=24, seed=2)
    w = _net(tmp_path / "tiny.safetensors")
    assert _tool().main([str(w), "--data", str(tmp_path / "data"), "--generation", "1"]) == 0
    got = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert got["positions"] == 40 and got["chunks"] == 1
    f = got["nets"][str(w)]
    z = one["wdl"][:, 0] - one["wdl"][:, 2]
    assert abs(f["baseline_mse"] - float((z ** 2).mean())) < 1e-4
    planes = np.unpackbits(one["planes"], axis=-1, count=49).reshape(40, -1, 7, 7)
    v = make_backend(str(w), max_batch=64).run(np.ascontiguousarray(planes)).value
    assert abs(f["value_mse"] - float(((v - z) ** 2).mean())) < 1e-3
    assert f["policy_kl"] >= -1e-3 and abs(f["policy_ce"] - f["target_entropy"] - f["policy_kl"]) < 1e-3
    assert _tool().main([str(w), "--data", str(tmp_path / "data")]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["positions"] == 64


def test_bad_input_is_one_line_and_status_2(tmp_path, capsys):
    make_chunk(tmp_path / "data" / "chunk-000001-a-000001.npz", n=7, positions=8)
    tool = _tool()
    assert tool.main(["w", "--data", str(tmp_path / "nowhere")]) == 2
    assert tool.main(["w", "--data", str(tmp_path / "data"), "--generation", "5"]) == 2
    (tmp_path / "junk.safetensors").write_bytes(b"not weights")
    assert tool.main([str(tmp_path / "junk.safetensors"), "--data", str(tmp_path / "data")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("value_check: ") for line in err)
