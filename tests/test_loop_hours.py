"""``tools/loop_hours.py``: the loop time of a log of several starts, across
midnight, a restart's ``--init`` line not counted, self-play's progress lines
extending a start past its last stamp."""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import loop_hours  # noqa: E402

LOG = """\
[loop 22:00:00] workspace ws: generation 1, phase selfplay, best weights/gen-000000.safetensors
[loop 22:00:00] generation 1: self-play 400 games with weights/gen-000000.safetensors
[  600.0s] games    10 live  16
[loop 23:30:00] generation 1: train to step 100
step 50 | 17 samples/s
[loop 00:30:00] generation 1: gen1 vs gen0, gate
[loop 01:00:00] generation 2: self-play 400 games with weights/gen-000001.safetensors
[ 1800.0s] games   100 live  16
[loop 05:00:00] --init x.safetensors: the workspace has started already; it goes on with weights/gen-000001.safetensors
[loop 05:00:00] workspace ws: generation 2, phase selfplay, best weights/gen-000001.safetensors
[loop 05:00:00] generation 2: self-play 300 games with weights/gen-000001.safetensors
[ 5400.0s] games   250 live  16
"""


def test_starts_are_summed_across_midnight_and_progress_lines(tmp_path, capsys):
    runs = loop_hours.starts(LOG.splitlines())
    # 22:00 to 01:30 (the second self-play's progress line, 30 minutes after its 01:00 stamp); 05:00 to 06:30
    assert [(r["generation"], r["phase"], (r["end"] - r["first"]) / 3600) for r in runs] == \
        [(1, "selfplay", 3.5), (2, "selfplay", 1.5)]
    log = tmp_path / "loop.log"
    log.write_text(LOG)
    assert loop_hours.main([str(log)]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["hours"] == 5.0


def test_a_file_without_a_start_is_one_line(tmp_path, capsys):
    log = tmp_path / "other.log"
    log.write_text("nothing here\n")
    assert loop_hours.main([str(log)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"loop_hours: {log} has no loop start") and "\n" not in err
