"""tools/kill_runs.py, the randomised kill tool: a short run of it, over
self-play, training and the loop, finds nothing wrong."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


@pytest.mark.slow
@linux_only
def test_a_short_run_of_random_kills_finds_no_failure():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "kill_runs.py"), "--trials", "3", "--seed", "2",
                        "--max-delay", "4", "--loop-max-delay", "8", "--train-steps", "40", "--kinds", "selfplay,train,loop"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert r.returncode == 0 and summary["failures"] == 0, r.stdout + r.stderr
    assert summary["kills"] == 3 and summary["files_checked"] > 0
