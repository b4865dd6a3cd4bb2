"""GTP's torch threads: ``[net] threads`` when set, else half the usable
cores (self-play's share rule with the engine and its controller as two
processes), at least one; the backend runs with that many and the start
line says so."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gtp import main as gtp_main
from gtp.config import GtpConfig


@pytest.mark.parametrize("cores,want", [(1, 1), (2, 1), (3, 1), (4, 2), (16, 8)])
def test_the_default_is_half_the_cores(monkeypatch, cores, want):
    monkeypatch.setattr(gtp_main, "usable_cores", lambda: cores)
    cfg = GtpConfig()
    assert cfg.net.threads == 0
    assert gtp_main.torch_threads(cfg) == want
    assert f"torch threads {want} ({cores} cores" in gtp_main.threads_text(cfg)


def test_a_configured_count_wins(monkeypatch):
    monkeypatch.setattr(gtp_main, "usable_cores", lambda: 16)
    cfg = GtpConfig()
    cfg.net.threads = 3
    assert gtp_main.torch_threads(cfg) == 3
    assert "torch threads 3 ([net] threads)" in gtp_main.threads_text(cfg)
    cfg.net.device = "cuda:0"
    assert gtp_main.threads_text(cfg) == ""


def test_the_backend_runs_with_the_chosen_threads(monkeypatch):
    torch = pytest.importorskip("torch")
    from sayuri_async.net.shipped import shipped_weights

    path = shipped_weights(9)
    if path is None:
        pytest.skip("no shipped network in this checkout")
    before = torch.get_num_threads()
    monkeypatch.setattr(gtp_main, "usable_cores", lambda: 4)
    try:
        gtp_main.make_engine_backend(GtpConfig(), str(path))
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


@pytest.mark.slow
def test_the_start_line_names_the_threads(tmp_path):
    want = max(1, len(os.sched_getaffinity(0)) // 2)
    out = subprocess.run([sys.executable, "-m", "gtp"], input="quit\n", capture_output=True, text=True,
                         cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr
    first = out.stderr.splitlines()[0]
    assert "shipped network" in first and f"torch threads {want} (" in first, first
