"""``[data] rehearsal_dir`` / ``rehearsal_fraction``: chunks of an older
data set join every window as that share of its positions, drawn by the
run's data seed; the RL loop adds steps so that the new positions keep
their reuse, and says the share in its figures."""
from __future__ import annotations

import pytest

from sayuri_async.configfile import ConfigError
from sayuri_async.loop.config import reuse_figures
from sayuri_async.loop.driver import Loop
from sayuri_async.train.config import from_dict
from sayuri_async.train.dataset import rehearsal_positions
from sayuri_async.train.errors import NoTrainingData
from sayuri_async.train.trainer import Trainer

from test_loop import write_cfg
from test_train_chunks import make_chunk


def _cfg(tmp_path, fraction: float, rehearsal: str, seed: int = 3) -> dict:
    return {
        "data": {"dir": str(tmp_path / "new"), "board_size": 7, "workers": 0, "shuffle_buffer": 64,
                 "rehearsal_dir": rehearsal, "rehearsal_fraction": fraction},
        "model": {"blocks": 1, "channels": 8, "policy_channels": 4, "value_channels": 4, "value_hidden": 8},
        "optim": {"batch_size": 16},
        "schedule": {"reference_batch": 16, "warmup": 0, "boundaries": [1000], "rates": [0.02, 0.01]},
        "run": {"out": str(tmp_path / f"run-{seed}"), "log_every": 2, "checkpoint_every": 100,
                "export_every": 100, "progress": "off", "device": "cpu", "seed": seed},
    }


def _chunks(tmp_path):
    for i in range(3):
        make_chunk(tmp_path / "new" / f"chunk-{i}-1-0.npz", n=7, positions=16, seed=i)
    for i in range(40):
        make_chunk(tmp_path / "old" / f"sgf-{i:03d}.npz", n=7, positions=16, seed=100 + i)


def test_rehearsal_positions_make_the_fraction_of_the_window():
    assert rehearsal_positions(300, 0.0) == 0
    assert rehearsal_positions(300, 0.5) == 300
    assert rehearsal_positions(300, 0.25) == 100
    assert rehearsal_positions(1, 0.9) == 9


def test_the_window_rehearses_old_chunks_as_its_share_drawn_by_the_seed(tmp_path):
    _chunks(tmp_path)
    said: list[str] = []
    trainer = Trainer(from_dict(_cfg(tmp_path, 0.5, str(tmp_path / "old")), "r.toml"), steps=2, say=said.append)
    new = [p for p, _ in trainer.window if "/new/" in p]
    old = [p for p, _ in trainer.window if "/old/" in p]
    assert len(new) == 3 and len(old) == 3  # 48 new positions, 48 rehearsed (16 a chunk)
    assert any(line.startswith("rehearsal: 48 positions in 3 chunks") for line in said)
    trainer.run()  # the rehearsed chunks train like the others
    other = Trainer(from_dict(_cfg(tmp_path, 0.5, str(tmp_path / "old"), seed=4), "r.toml"), steps=2,
                    say=lambda _: None)
    assert {p for p, _ in other.window if "/old/" in p} != set(old)
    none = Trainer(from_dict(_cfg(tmp_path, 0.0, "", seed=5), "r.toml"), steps=2, say=lambda _: None)
    assert all("/new/" in p for p, _ in none.window) and len(none.window) == 3


def test_rehearsal_settings_and_a_missing_folder_are_refused_in_words(tmp_path):
    _chunks(tmp_path)
    with pytest.raises(ConfigError, match="rehearsal_dir"):
        from_dict(_cfg(tmp_path, 0.5, ""), "r.toml")
    with pytest.raises(ConfigError, match="rehearsal_fraction"):
        from_dict(_cfg(tmp_path, 0.95, str(tmp_path / "old")), "r.toml")
    with pytest.raises(NoTrainingData, match=r"rehearsal_dir .*nowhere: no chunks .* \(no such folder\)"):
        Trainer(from_dict(_cfg(tmp_path, 0.5, str(tmp_path / "nowhere")), "r.toml"), steps=2, say=lambda _: None)


def test_the_loop_adds_steps_for_the_rehearsed_share_and_keeps_the_reuse(tmp_path):
    text = open(write_cfg(tmp_path, 1)).read().replace("[loop]\n", "[loop]\nsamples_per_position = 4\n")
    text = text.replace("[data]\n", f"[data]\nrehearsal_dir = \"{tmp_path / 'old'}\"\nrehearsal_fraction = 0.5\n")
    assert "rehearsal_fraction" in text
    (tmp_path / "r.toml").write_text(text)
    with pytest.raises(ConfigError, match=r"r\.toml: \[data\] rehearsal_dir .*no chunks"):
        Loop(str(tmp_path / "r.toml"), str(tmp_path / "ws"))  # before any self-play
    make_chunk(tmp_path / "old" / "sgf-000.npz", n=7, positions=16)
    loop = Loop(str(tmp_path / "r.toml"), str(tmp_path / "ws"))
    assert loop.train_steps(100) == 100  # 100 positions x 4 samples / batch 8, doubled: half of each batch is old
    assert reuse_figures(100, 100, 8, 0.5) == {"new_positions": 100, "planned_steps": 100, "reuse": 4.0,
                                               "new_positions_per_step": 1.0, "rehearsal_fraction": 0.5}
