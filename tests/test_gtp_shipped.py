"""``sayuri-async gtp`` without weights: the shipped network on 9x9, the
random network elsewhere, one stderr line naming the file; ``--weights
random`` keeps the random network on 9x9 too."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from gtp.match import GtpProcess
from sayuri_async.net.shipped import SHIPPED, BoardSizeBackend, shipped_weights

pytest.importorskip("torch")
NINE = SHIPPED[9]
pytestmark = pytest.mark.skipif(not NINE.is_file(), reason="the shipped 9x9 network is not in this checkout")


def ownership(p: GtpProcess, size: int) -> list[float]:
    """kata-analyze's ownership of the empty board of ``size``."""
    p.send(f"boardsize {size}")
    p.send("clear_board")
    p.write_line("5 kata-analyze 5 ownership true")
    assert p.read_line(60) == "=5"
    line = p.read_line(60)
    p.write_line("")  # any input stops the analysis
    while p.read_line(10).strip():
        pass
    own = [float(x) for x in line.split("ownership ")[1].split()]
    assert len(own) == size * size
    return own


def run_engine(tmp_path, *extra: str) -> tuple[list[float], list[float], str]:
    err = open(tmp_path / "stderr.txt", "wb")
    p = GtpProcess([sys.executable, "-m", "gtp", "--playouts", "8", "--seed", "3", *extra], stderr=err,
                   cwd=str(tmp_path))
    try:
        nine, thirteen = ownership(p, 9), ownership(p, 13)
        move = p.send("genmove b")  # 13x13, the random network
        assert move
    finally:
        p.close()
        err.close()
    return nine, thirteen, (tmp_path / "stderr.txt").read_text()


@pytest.mark.slow
def test_no_weights_plays_the_shipped_network_on_9x9_only(tmp_path):
    nine, thirteen, log = run_engine(tmp_path)
    lines = [ln for ln in log.splitlines() if "no weights given" in ln]
    assert len(lines) == 1 and str(NINE) in lines[0] and "random network" in lines[0], log
    assert any(abs(x) > 1e-3 for x in nine)  # a trained network's ownership (the random one answers zeros)
    assert all(x == 0.0 for x in thirteen)  # 13x13: the random network


@pytest.mark.slow
def test_weights_random_keeps_the_random_network_on_9x9(tmp_path):
    nine, thirteen, log = run_engine(tmp_path, "--weights", "random")
    assert all(x == 0.0 for x in nine + thirteen)
    assert "random network" in log and str(NINE) not in log


def test_board_size_backend_sends_each_size_to_its_network():
    from sayuri_async.net.backends import RandomBackend
    from sayuri_async.backend_factory import make_backend

    net = make_backend(str(shipped_weights(9)), max_batch=4)
    be = BoardSizeBackend({9: net}, RandomBackend(encoder=net.encoder, seed=1))
    x9 = be.alloc_input(2, 9)
    x9[:, 0] = 1  # some planes on: a trained network's answer differs from the random one's
    out9 = be.run(x9)
    np.testing.assert_allclose(out9.policy, net.run(x9).policy, rtol=1e-5, atol=1e-6)
    out7 = be.run(be.alloc_input(2, 7))
    assert np.all(out7.ownership == 0) and np.allclose(out7.wdl, [0.5, 0.0, 0.5])
    with pytest.raises(ValueError, match="encoder"):
        BoardSizeBackend({9: net}, RandomBackend(encoder="sayuri-v3"))
