"""The GTP program with a real (tiny, randomly initialised) network file: it
loads the weights, says so, honours the network's board-size range and
reports the network's ownership in kata-analyze."""
from __future__ import annotations

import subprocess
import sys

import pytest

from gtp.match import GtpFailure, GtpProcess

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.slow  # the engine as a subprocess


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    from sayuri_async.net.model import Net, NetConfig, init_weights
    from sayuri_async.net.weights import save_weights

    cfg = NetConfig(blocks=1, channels=8, policy_channels=4, value_channels=4, value_hidden=8,
                    board_size_min=7, board_size_max=13)
    net = init_weights(Net(cfg), seed=5)
    path = tmp_path_factory.mktemp("net") / "tiny.safetensors"
    save_weights(path, net, {"name": "tiny-test-net"})
    return path


def test_engine_with_weights(weights, tmp_path):
    err = open(tmp_path / "stderr.txt", "wb")
    p = GtpProcess([sys.executable, "-m", "gtp", "--weights", str(weights), "--playouts", "16"],
                   stderr=err, cwd=str(tmp_path))
    try:
        # the network plays 7..13: the default 19x19 board does not fit it, so
        # the program refuses to start with a message
        ok = p.proc.wait(timeout=60)
        assert ok == 2
    finally:
        p.close()
        err.close()
    assert "declares board sizes 7..13, so it cannot play [game] board_size 19" in \
        (tmp_path / "stderr.txt").read_text()

    conf = tmp_path / "nine.toml"
    conf.write_text("[game]\nboard_size = 9\n")
    err = open(tmp_path / "stderr2.txt", "wb")
    p = GtpProcess([sys.executable, "-m", "gtp", "--config", str(conf), "--weights", str(weights),
                    "--playouts", "16"], stderr=err, cwd=str(tmp_path))
    try:
        assert p.send("name", timeout=60) == "sayuri-async"
        with pytest.raises(GtpFailure, match="unacceptable size"):
            p.send("boardsize 19")
        p.send("boardsize 13")
        p.send("boardsize 9")
        move = p.send("genmove b")
        assert move.lower() == "pass" or p.send("list_stones black") == move.upper()
        p.write_line("7 kata-analyze 5 ownership true")
        assert p.read_line(30) == "=7"
        line = p.read_line(30)
        own = [float(x) for x in line.split("ownership ")[1].split()]
        assert len(own) == 81 and all(-1.0 <= x <= 1.0 for x in own)
        assert any(abs(x) > 1e-6 for x in own)  # a network's ownership, not the random backend's zeros
        p.write_line("")
        while p.read_line(10).strip():
            pass
    finally:
        p.close()
        err.close()
    log = (tmp_path / "stderr2.txt").read_text()
    assert "network" in log and "random network" not in log
    assert p.proc.returncode == 0


def test_missing_weights_file_is_reported(tmp_path):
    r = subprocess.run([sys.executable, "-m", "gtp", "--weights", str(tmp_path / "nope.safetensors")],
                       input=b"name\n", capture_output=True, timeout=60)
    assert r.returncode == 2
    assert b"--weights" in r.stderr and b"nope.safetensors: no such weights file" in r.stderr
    assert r.stdout == b""
