"""The one config reader: self-play, loop, training and GTP files all give
``<file>: [<table>] <key>: <problem>`` errors, and the values in a file
are the values the program gets. Every range check of every config is
exercised here: removing one makes its case fail."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from gtp.config import GtpConfig, SearchSection
from gtp.config import load_config as load_gtp
from sayuri_async.configfile import Bad, ConfigError, at_least, positive, recheck, within
from sayuri_async.loop.config import LoopConfig
from sayuri_async.loop.config import load_loop_config
from sayuri_async.selfplay.config import SelfplayConfig, load_selfplay_config
from sayuri_async.train.config import OptimConfig
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
    ("[selfplay]\nbatch_size = 0\n", r"c\.toml: \[selfplay\] batch_size: must be at least 1, not 0"),
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
    assert_each_reads(tmp_path, cases, "must be a whole number, not 1.5")


def assert_each_reads(tmp_path, cases, problem: str) -> None:
    """Each ``(load, file text, where)`` fails with ``<file>: <where>: <problem>``."""
    for load, text, where in cases:
        with pytest.raises(ConfigError) as e:
            load(str(write(tmp_path, text)))
        assert str(e.value) == f"{tmp_path / 'c.toml'}: {where}: {problem}"


@pytest.mark.parametrize("name", ["selfplay-9x9.toml", "selfplay-19x19.toml"])
def test_shipped_selfplay_configs_load(name):
    cfg = load_selfplay_config(str(ROOT / "configs" / name))
    assert cfg.search.edge_capacity == 0  # sized from the playouts
    assert cfg.search_config().edge_capacity >= 20_000


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "configs").glob("loop-*.toml")))
def test_shipped_loop_configs_load(name):
    loop_cfg, sp, train = load_loop_config(str(ROOT / "configs" / name))
    assert sp.search.leaves_per_await == 4 and train.data.board_size == sp.board_sizes[0]


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "configs").glob("train-*.toml")))
def test_shipped_train_configs_load(name):
    cfg = load_train(str(ROOT / "configs" / name))
    assert cfg.schedule.total > 0 and cfg.data.board_size in (7, 9, 13, 19)


# (loader, table, the file's lines, the key the error must name); one case per range check
RANGE_CASES = [
    (load_selfplay_config, "selfplay", "board_sizes = [21]", "board_sizes"),
    (load_selfplay_config, "selfplay", "board_sizes = [6]", "board_sizes"),
    (load_selfplay_config, "selfplay", "board_sizes = []", "board_sizes"),
    (load_selfplay_config, "selfplay", "board_sizes = [9]\nboard_size_weights = [1.0, 2.0]", "board_size_weights"),
    (load_selfplay_config, "selfplay", "parallel_games = 0", "parallel_games"),
    (load_selfplay_config, "selfplay", "batch_size = 0", "batch_size"),
    (load_selfplay_config, "selfplay", "playouts = 0", "playouts"),
    (load_selfplay_config, "selfplay", "chunk_games = 0", "chunk_games"),
    (load_selfplay_config, "selfplay", "procs = 0", "procs"),
    (load_selfplay_config, "selfplay", "timeout_ms = -1", "timeout_ms"),
    (load_selfplay_config, "selfplay", "komi_stddev = -0.5", "komi_stddev"),
    (load_selfplay_config, "selfplay", "num_games = -1", "num_games"),
    (load_selfplay_config, "selfplay", "cache_size = -1", "cache_size"),
    (load_selfplay_config, "selfplay", "reduce_playouts_prob = 1.5", "reduce_playouts_prob"),
    (load_selfplay_config, "selfplay", "pass_after_factor = -0.1", "pass_after_factor"),
    (load_selfplay_config, "selfplay", "resign_discard_prob = 2", "resign_discard_prob"),
    (load_selfplay_config, "selfplay", "resign_threshold = 1", "resign_threshold"),
    (load_loop_config, "loop", "games_per_generation = 0", "games_per_generation"),
    (load_loop_config, "loop", "steps_per_generation = 0", "steps_per_generation"),
    (load_loop_config, "loop", "eval_playouts = 0", "eval_playouts"),
    (load_loop_config, "loop", "eval_games = -1", "eval_games"),
    (load_loop_config, "loop", "generations = -1", "generations"),
    (load_loop_config, "loop", "gating_win_rate = 1.5", "gating_win_rate"),
    (load_loop_config, "selfplay", "playouts = 0", "playouts"),
    (load_loop_config, "run", "log_every = 0", "log_every"),
    (load_train, "data", "board_size = 30", "board_size"),
    (load_train, "data", "window_min_positions = 0", "window_min_positions"),
    (load_train, "data", "window_max_positions = 50", "window_max_positions"),
    (load_train, "data", "window_expand_per_position = 0", "window_expand_per_position"),
    (load_train, "data", "window_taper_exponent = 0", "window_taper_exponent"),
    (load_train, "data", "shuffle_buffer = 0", "shuffle_buffer"),
    (load_train, "data", "workers = -1", "workers"),
    (load_train, "data", "prefetch_batches = 0", "prefetch_batches"),
    (load_train, "optim", "batch_size = 0", "batch_size"),
    (load_train, "optim", "momentum = 1", "momentum"),
    (load_train, "optim", "weight_decay = -1", "weight_decay"),
    (load_train, "optim", "adam_beta1 = 1", "adam_beta1"),
    (load_train, "optim", "adam_beta2 = -0.1", "adam_beta2"),
    (load_train, "optim", "adam_eps = 0", "adam_eps"),
    (load_train, "optim", "grad_clip_norm = -1", "grad_clip_norm"),
    (load_train, "optim", "momentum = 0", "nesterov"),
    (load_train, "schedule", "reference_batch = 0", "reference_batch"),
    (load_train, "schedule", "warmup = -1", "warmup"),
    (load_train, "schedule", "rates = [0.1]", "rates"),
    (load_train, "schedule", "rates = [0.1, 0.1, 0.1, 0.1, -0.1]", "rates"),
    (load_train, "schedule", "boundaries = [0, 1, 2, 3]", "boundaries"),
    (load_train, "schedule", "boundaries = [3, 2, 5, 9]", "boundaries"),
    (load_train, "schedule", "total = 0", "total"),
    *[(load_train, "loss", f"{k} = -1", k) for k in ("policy", "opp_policy", "wdl", "score", "ownership")],
    (load_train, "loss", "score_huber_delta = 0", "score_huber_delta"),
    (load_train, "average", "ema_decay = 1", "ema_decay"),
    (load_train, "average", "swa_start = -1", "swa_start"),
    (load_train, "average", "swa_every = 0", "swa_every"),
    (load_train, "run", "device = 'tpu'", "device"),
    (load_train, "run", "name = 'a/b'", "name"),
    (load_train, "run", "checkpoint_every = 0", "checkpoint_every"),
    (load_train, "run", "keep_checkpoints = 0", "keep_checkpoints"),
    (load_train, "run", "export_every = 0", "export_every"),
    (load_train, "run", "log_every = 0", "log_every"),
    (load_gtp, "net", "threads = -1", "threads"),
    (load_gtp, "game", "board_size = 1", "board_size"),
    (load_gtp, "game", "board_size = 26", "board_size"),
    (load_gtp, "game", "scoring = 'japanese'", "scoring"),
    (load_gtp, "search", "playouts = 0", "playouts"),
    (load_gtp, "search", "tree_memory_mb = 0.5", "tree_memory_mb"),
    (load_gtp, "search", "edges_per_expansion = -1", "edges_per_expansion"),
    (load_selfplay_config, "search", "tree_memory_mb = 0.5", "tree_memory_mb"),
    (load_selfplay_config, "search", "edge_capacity = -1", "edge_capacity"),
    (load_gtp, "search", "cache_size = -1", "cache_size"),
    (load_gtp, "search", "leaves_per_await = 0", "leaves_per_await"),
    (load_gtp, "search", "leaves_per_await = 17", "leaves_per_await"),
    (load_selfplay_config, "search", "leaves_per_await = 17", "leaves_per_await"),
    (load_selfplay_config, "search", "leaves_per_await = 0", "leaves_per_await"),
    (load_gtp, "search", "resign_min_visits = -1", "resign_min_visits"),
    (load_gtp, "search", "resign_threshold = 0.5", "resign_threshold"),
    (load_gtp, "search", "timeout_ms = -1", "timeout_ms"),
    (load_gtp, "time", "lag_margin_s = -0.1", "lag_margin_s"),
    (load_gtp, "time", "reserve_fraction = 1", "reserve_fraction"),
    (load_gtp, "time", "expected_length_factor = 0", "expected_length_factor"),
    (load_gtp, "time", "min_moves_left = 0", "min_moves_left"),
    (load_gtp, "time", "max_move_fraction = 0", "max_move_fraction"),
    (load_gtp, "analysis", "interval_cs = 0", "interval_cs"),
    (load_gtp, "analysis", "pv_length = 0", "pv_length"),
    (load_gtp, "analysis", "max_moves = 0", "max_moves"),
]


PROGRAM = {load_selfplay_config: "selfplay", load_loop_config: "loop", load_train: "train", load_gtp: "gtp"}


@pytest.mark.parametrize("load, table, lines, key", RANGE_CASES,
                         ids=[f"{PROGRAM[c[0]]}-{c[1]}-{c[2]}" for c in RANGE_CASES])
def test_every_range_check_names_file_table_and_key(tmp_path, load, table, lines, key):
    p = write(tmp_path, f"[{table}]\n{lines}\n")
    with pytest.raises(ConfigError) as e:
        load(str(p))
    assert str(e.value).startswith(f"{p}: [{table}] {key}: "), str(e.value)


@pytest.mark.parametrize("load, table, old, new", [
    (load_selfplay_config, "search", "node_capacity = 0", "edge_capacity"),
    (load_selfplay_config, "search", "search_nodes = 0", "search_edges"),
    (load_loop_config, "search", "node_capacity = 0", "edge_capacity"),
    (load_gtp, "search", "node_capacity = 16000000", "tree_memory_mb"),
])
def test_a_renamed_key_is_refused_by_name_with_the_new_one(tmp_path, load, table, old, new):
    """Pool sizes were once named for nodes while they counted edges: an old
    file fails on one line that names the key and what replaces it, rather
    than being read with another meaning."""
    p = write(tmp_path, f"[{table}]\n{old}\n")
    with pytest.raises(ConfigError) as e:
        load(str(p))
    key = old.split()[0]
    message = str(e.value)
    assert message.startswith(f"{p}: [{table}] {key}: renamed: use {new}") and "\n" not in message


@pytest.mark.parametrize("key, why", [
    ("dirichlet_epsilon = 0.1", "a self-play setting"),
    ("gumbel_considered_moves = 8", "a self-play setting"),
    ("edge_capacity = 100000", "GTP sizes its tree by tree_memory_mb"),
    ("node_records = 1000", "GTP sizes its tree by tree_memory_mb"),
])
def test_gtp_refuses_self_play_search_keys_by_name(tmp_path, key, why):
    """GTP's [search] is self-play's SearchConfig plus GTP's own keys; the
    keys that would do nothing in GTP are refused, not silently ignored."""
    p = write(tmp_path, f"[search]\n{key}\n")
    with pytest.raises(ConfigError) as e:
        load_gtp(str(p))
    assert str(e.value).startswith(f"{p}: [search] {key.split()[0]}: {why}"), str(e.value)


def test_gtp_search_takes_the_search_keys_it_shares_with_self_play(tmp_path):
    p = write(tmp_path, "[search]\nrandom_symmetry = true\nmax_moves_factor = 3.0\nc_init = 2.0\n")
    s = load_gtp(str(p)).search
    assert (s.random_symmetry, s.max_moves_factor, s.c_init, s.playouts) == (True, 3.0, 2.0, 400)
    assert s.params()[0] == 2.0  # the search reads it from the same dataclass


def test_the_same_range_mistake_reads_the_same_everywhere(tmp_path):
    """A batch size / playout count of 0: one message shape in every program."""
    cases = [
        (load_selfplay_config, "[selfplay]\nbatch_size = 0\n", "[selfplay] batch_size"),
        (load_loop_config, "[loop]\neval_playouts = 0\n", "[loop] eval_playouts"),
        (load_train, "[optim]\nbatch_size = 0\n", "[optim] batch_size"),
        (load_gtp, "[search]\nplayouts = 0\n", "[search] playouts"),
    ]
    assert_each_reads(tmp_path, cases, "must be at least 1, not 0")


@pytest.mark.parametrize("make, key", [
    (lambda: SelfplayConfig(batch_size=0), "batch_size"),
    (lambda: replace(SelfplayConfig(), resign_threshold=1.0), "resign_threshold"),
    (lambda: LoopConfig(gating_win_rate=2.0), "gating_win_rate"),
    (lambda: replace(OptimConfig(), momentum=-0.5), "momentum"),
    (lambda: GtpConfig(search=SearchSection(playouts=0)), "playouts"),
])
def test_no_config_can_be_built_with_a_bad_value(make, key):
    """The checks run on every construction and ``replace``, not only when a file is read;
    ``Bad`` is a ValueError that names the key."""
    with pytest.raises(ValueError) as e:
        make()
    assert isinstance(e.value, Bad) and e.value.key == key
    assert str(e.value).startswith(f"{key}: ")


def test_command_line_overrides_are_range_checked(tmp_path, capsys):
    from gtp.main import _configure, build_parser
    from sayuri_async.selfplay.cli import main as selfplay_main

    p = write(tmp_path, "[selfplay]\nboard_sizes = [9]\n")
    with pytest.raises(ConfigError, match=r"^--batch-size: must be at least 1, not 0$"):
        load_selfplay_config(str(p), {"batch_size": 0})
    assert selfplay_main(["--config", str(p), "--batch-size", "0", "--no-tui"]) == 2
    assert "sayuri-async selfplay: --batch-size: must be at least 1" in capsys.readouterr().err
    with pytest.raises(ConfigError, match=r"^--playouts: must be at least 1, not 0$"):
        _configure(build_parser().parse_args(["--playouts", "0"]))
    from sayuri_async.loop.driver import main as loop_main

    loop_toml = Path(__file__).resolve().parents[1] / "configs" / "loop-7x7.toml"
    assert loop_main(["--config", str(loop_toml), "--workspace", str(tmp_path / "ws"), "--generations", "-1"]) == 2
    assert "sayuri-async loop: --generations: must be at least 0, not -1" in capsys.readouterr().err
    with pytest.raises(ConfigError, match=r"^--board-size: must all be in 7\.\.19, not 1$"):
        load_selfplay_config(str(p), {"board_sizes": [1]})
    from sayuri_async.train.config import load_config as load_train_config, override

    train = load_train_config(Path(__file__).resolve().parents[1] / "configs" / "train-9x9.toml")
    with pytest.raises(ConfigError, match=r"^--workers: must be 0"):
        override(train, "data", "workers", -3)


def test_recheck_after_assigning_fields(tmp_path):
    cfg = GtpConfig()
    recheck(cfg, "command line")
    cfg.time.max_move_fraction = 1.5
    with pytest.raises(ConfigError, match=r"^command line: \[time\] max_move_fraction: must be in \(0, 1\], not 1\.5$"):
        recheck(cfg, "command line")
    sp = SelfplayConfig()
    sp.procs = 0
    with pytest.raises(ConfigError, match=r"^x\.toml: \[selfplay\] procs: must be at least 1, not 0$"):
        recheck(sp, "x.toml", "selfplay")


def test_the_range_helpers():
    @dataclass
    class Ranges:
        a: float = 0.0

    for interval, inside, outside in [
        ("[0, 1)", [0.0, 0.5], [-0.1, 1.0]),
        ("(0, 1]", [0.5, 1.0], [0.0, 1.1]),
        ("[0, 1]", [0.0, 1.0], [-0.1, 1.1]),
        ("(0, 0.5)", [0.25], [0.0, 0.5]),
    ]:
        for v in inside:
            within(Ranges(v), interval, "a")
        for v in outside:
            with pytest.raises(Bad, match=rf"^a: must be in {re.escape(interval)}, not {v}$"):
                within(Ranges(v), interval, "a")
    with pytest.raises(ValueError, match="not an interval"):
        within(Ranges(), "0..1", "a")
    at_least(Ranges(2.0), 2, "a")
    with pytest.raises(Bad, match=r"^a: must be at least 3, not 2\.0$"):
        at_least(Ranges(2.0), 3, "a")
    positive(Ranges(0.1), "a")
    with pytest.raises(Bad, match=r"^a: must be positive, not 0\.0$"):
        positive(Ranges(0.0), "a")


def test_the_example_selfplay_configs_document_every_option():
    import dataclasses
    import tomllib

    from sayuri_async.search.config import SearchConfig
    from sayuri_async.selfplay.config import SelfplayConfig

    set_by_the_loop = {"generation", "search"}  # the RL loop's generation; [search] is a table
    for name in ("selfplay-9x9.toml", "selfplay-19x19.toml"):
        path = Path(__file__).resolve().parents[1] / "configs" / name
        tables = tomllib.loads(path.read_text())
        for cls, table in ((SelfplayConfig, "selfplay"), (SearchConfig, "search")):
            keys = set(tables[table])
            missing = {f.name for f in dataclasses.fields(cls)} - keys - set_by_the_loop
            assert not missing, f"{name} [{table}] lacks {sorted(missing)}"
        load_selfplay_config(str(path))  # and every value it gives is accepted
