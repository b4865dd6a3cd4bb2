"""The trainer's progress when its output is not a terminal (a pipe, a log
file): every logging step is one whole line with every loss, never cut to a
bar's width."""
from __future__ import annotations

import pytest

from sayuri_async.train.trainer import train
from test_train_loop import chunks, tiny_config


@pytest.mark.slow
def test_progress_lines_stay_whole_when_piped_even_with_the_bar_on(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    data = chunks(tmp_path / "data", count=1)
    cfg = tiny_config(data, tmp_path / "out", data={"window_min_positions": 10}, optim={"batch_size": 8},
                      run={"log_every": 2, "checkpoint_every": 100, "export_every": 100, "progress": "on"})
    train(cfg, steps=4)
    err = capsys.readouterr().err
    steps = [line for line in err.splitlines() if line.startswith("step ") and " | " in line]
    assert [line.split(" | ")[0] for line in steps] == ["step 2", "step 4"], err
    for line in steps:
        assert all(f" {name} " in line for name in ("policy", "wdl", "score", "ownership")), line
        assert "…" not in line and line.rstrip().endswith(line.split(" | ")[-1]), line
    assert "…" not in err, err
