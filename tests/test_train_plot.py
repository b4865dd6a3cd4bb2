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
