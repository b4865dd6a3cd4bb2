"""tools/kill_runs.py, the randomised kill tool: a short run of it finds
nothing wrong with main, and its file check does catch a damaged file."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


def _tool():
    spec = importlib.util.spec_from_file_location("kill_runs", ROOT / "tools" / "kill_runs.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_file_check_rejects_damaged_files_and_passes_good_ones(tmp_path):
    from test_selfplay import _records

    from sayuri_async.selfplay.writer import write_records

    tool = _tool()
    good = tmp_path / "chunk-good.npz"
    write_records(good, _records(1), "simple-v1", 25, "test")
    assert tool.check_file(good) is None
    cut = tmp_path / "chunk-cut.npz"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    assert tool.check_file(cut) is not None
    (tmp_path / "game.sgf").write_text("(;FF[4]GM[1]SZ[7];B[aa];W[bb])")
    assert tool.check_file(tmp_path / "game.sgf") is None
    (tmp_path / "bad.sgf").write_text("(;FF[4]SZ[7];B[aa")
    assert tool.check_file(tmp_path / "bad.sgf") is not None
    (tmp_path / "ckpt-000000002.pt").write_bytes(b"not a checkpoint")
    assert tool.check_file(tmp_path / "ckpt-000000002.pt") is not None


@pytest.mark.slow
@linux_only
def test_a_short_run_of_random_kills_finds_no_failure():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "kill_runs.py"), "--trials", "3", "--seed", "2",
                        "--max-delay", "4"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert r.returncode == 0 and summary["failures"] == 0, r.stdout + r.stderr
    assert summary["kills"] == 3 and summary["files_checked"] > 0
