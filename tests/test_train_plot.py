"""``sayuri-async plot``: PNG files from a training log; a clear error without matplotlib."""
from __future__ import annotations

import builtins
import importlib.util

import pytest

from sayuri_async.train.plot import NO_MATPLOTLIB, main

LOG = """step,samples,lr,loss,policy,opp_policy,wdl,score,ownership,samples_per_s,data_wait,elapsed_s
10,320,0.01,9.5,4.5,4.6,1.1,30.0,0.9,1500,0.05,1.0
20,640,0.02,7.5,4.0,4.2,1.0,20.0,0.8,1600,0.04,2.0
30,960,0.01,6.5,3.5,4.0,0.9,15.0,0.7,1700,0.03,3.0
"""


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="matplotlib not installed")
def test_plot_writes_pngs(tmp_path, capsys):
    (tmp_path / "train_log.csv").write_text(LOG)
    assert main([str(tmp_path), "--out", str(tmp_path / "png")]) == 0
    for name in ("losses.png", "lr.png"):
        data = (tmp_path / "png" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    assert "losses.png" in capsys.readouterr().out


def test_plot_without_matplotlib_says_so(tmp_path, monkeypatch, capsys):
    (tmp_path / "train_log.csv").write_text(LOG)
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    assert main([str(tmp_path / "train_log.csv")]) == NO_MATPLOTLIB != 0
    assert "matplotlib is not installed" in capsys.readouterr().err
    assert not (tmp_path / "losses.png").exists()


def test_plot_missing_log(tmp_path, capsys):
    assert main([str(tmp_path / "nothing.csv")]) == 2
    assert "no such log" in capsys.readouterr().err


ONE_ROW = LOG.splitlines()[0] + "\n20,640,0.02,7.5,4.0,4.2,1.0,20.0,0.8,1600,0.04,2.0\n"


def drawn_pixels(path) -> int:
    """Pixels of the curves' colours (matplotlib's tab:blue) in a PNG."""
    import matplotlib.image as mpimg
    import numpy as np

    img = mpimg.imread(path)[..., :3]
    blue = np.array([0x1F, 0x77, 0xB4]) / 255.0
    return int((np.abs(img - blue).sum(axis=-1) < 0.05).sum())


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="matplotlib not installed")
def test_a_one_row_log_is_drawn_as_points_and_said_so(tmp_path, capsys):
    """A 20-step run logs one row: the charts must show it, not six empty panels."""
    (tmp_path / "train_log.csv").write_text(ONE_ROW)
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "has 1 row" in out and "curves need more steps" in out
    assert drawn_pixels(tmp_path / "losses.png") > 6 * 10  # a visible point in each of the six panels


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="matplotlib not installed")
def test_only_columns_with_values_get_a_panel(tmp_path):
    from sayuri_async.train.plot import plot_log

    header, *rows = LOG.splitlines()
    log = tmp_path / "train_log.csv"
    # a Sayuri net's q_error with values, its score_error empty
    log.write_text(header + ",q_error,score_error\n" + "\n".join(r + ",0.5," for r in rows) + "\n")
    import matplotlib.image as mpimg

    plot_log(log, tmp_path)
    height = mpimg.imread(tmp_path / "losses.png").shape[0]
    assert height == pytest.approx(2.2 * 7 * 100, abs=2)  # loss, five terms and q_error: no empty panel
