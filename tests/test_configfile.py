"""The one config reader: self-play, loop, training and GTP files all give
``<file>: [<table>] <key>: <problem>`` errors, and the values in a file
are the values the program gets."""
from __future__ import annotations

from pathlib import Path

import pytest

from gtp.config import load_config as load_gtp
from sayuri_async.configfile import ConfigError
from sayuri_async.loop import load_loop_config
from sayuri_async.selfplay.config import load_selfplay_config
from sayuri_async.train.config import load_config as load_train

ROOT = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "c.toml"
    p.write_text(text)
    return p


def test_selfplay_file_values_and_command_line_overrides(tmp_path):
    p = write(tmp_path, "[selfplay]\nboard_sizes = [7]\nparallel_games = 8\nbatch_size = 4\ntimeout_ms = 3\n"
                        "[search]\nc_init = 2.5\nleaves_per_await = 2\n")
    cfg = load_selfplay_config(str(p), {"batch_size": 6, "playouts": None})
    assert cfg.board_sizes == [7] and cfg.parallel_games == 8 and cfg.batch_size == 6
    assert cfg.timeout_ms == 3.0 and isinstance(cfg.timeout_ms, float)
    assert cfg.search.c_init == 2.5 and cfg.search.leaves_per_await == 2
    assert cfg.playouts == 100  # None: not given on the command line


@pytest.mark.parametrize("text, pattern", [
    ("[selfplay]\nparalel_games = 8\n", r"c\.toml: \[selfplay\] paralel_games: unknown key"),
    ("[selfplay]\nbatch_size = 'big'\n", r"c\.toml: \[selfplay\] batch_size: must be a whole number"),
    ("[selfplay]\nbatch_size = 0\n", r"c\.toml: \[selfplay\] batch_size must be at least 1"),
    ("[search]\nc_int = 1\n", r"c\.toml: \[search\] c_int: unknown key"),
    ("[search]\nreuse_tree = 1\n", r"c\.toml: \[search\] reuse_tree: must be true or false"),
    ("[serach]\nc_init = 1\n", r"c\.toml: unknown section \[serach\] \(known: selfplay, search\)"),
    ("[selfplay\n", r"c\.toml: not valid TOML"),
])
def test_selfplay_errors_name_file_table_and_key(tmp_path, text, pattern):
    with pytest.raises(ConfigError, match=pattern):
        load_selfplay_config(str(write(tmp_path, text)))


def test_loop_errors_name_file_table_and_key(tmp_path):
    with pytest.raises(ConfigError, match=r"c\.toml: \[loop\] generation: unknown key"):
        load_loop_config(str(write(tmp_path, "[loop]\ngeneration = 3\n")))
    with pytest.raises(ConfigError, match=r"c\.toml: \[search\] fpu: unknown key"):
        load_loop_config(str(write(tmp_path, "[search]\nfpu = 3\n")))
    with pytest.raises(ConfigError, match=r"c\.toml: \[optim\] batch_size: must be at least 1"):
        load_loop_config(str(write(tmp_path, "[optim]\nbatch_size = 0\n")))


def test_the_same_mistake_reads_the_same_everywhere(tmp_path):
    """A float where a whole number belongs, in each program's file."""
    cases = [
        (load_selfplay_config, "[selfplay]\nplayouts = 1.5\n", "[selfplay] playouts"),
        (load_train, "[optim]\nbatch_size = 1.5\n", "[optim] batch_size"),
        (load_gtp, "[search]\nplayouts = 1.5\n", "[search] playouts"),
    ]
    for load, text, where in cases:
        with pytest.raises(ConfigError) as e:
            load(str(write(tmp_path, text)))
        assert str(e.value) == f"{tmp_path / 'c.toml'}: {where}: must be a whole number, not 1.5"


@pytest.mark.parametrize("name", ["selfplay-9x9.toml", "selfplay-19x19.toml"])
def test_shipped_selfplay_configs_load(name):
    cfg = load_selfplay_config(str(ROOT / "configs" / name))
    assert cfg.search.node_capacity == 0  # sized from the playouts
    assert cfg.search_config().node_capacity >= 20_000


@pytest.mark.parametrize("name", ["loop-9x9.toml", "loop-7x7.toml"])
def test_shipped_loop_configs_load(name):
    loop_cfg, sp, train = load_loop_config(str(ROOT / "configs" / name))
    assert sp.search.leaves_per_await == 4 and train.data.board_size == sp.board_sizes[0]
