"""Every numeric option of every subcommand, given a bad value (not a number,
negative, NaN, huge), is refused before anything runs: one line
``sayuri-async <command>: ...`` naming the option and its range, exit
status 2, no traceback. The same holds for an output path that is the
command's input (the same file, a hard link or a symlink to it), for config
values beyond their bounds, and for config files that are too large, nested
too deeply or hold a number of thousands of digits.

The checks are one mechanism: the settings dataclasses' ``__post_init__``
(``configfile``), reached from the command line through ``from_options``,
``fill`` or ``recheck``. ``test_the_table_covers_every_numeric_option``
reads each subcommand's parser, so a new option without a case fails here.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import shlex
import shutil
from pathlib import Path

import pytest

from sayuri_async import cli
from sayuri_async.configfile import MAX_CONFIG_BYTES
from sayuri_async.net import shipped

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = shipped.SHIPPED[9]
HUGE = "99999999999999999999999"

# (command up to the option, option, bad values); {name} takes a path from ``files``
BASES = {
    "selfplay": "selfplay --no-tui --out {dir}/sp",
    "gtp": "gtp",
    "train": "train --config configs/train-9x9.toml --data {empty} --out {dir}/tr",
    "loop": "loop --config configs/loop-7x7.toml --workspace {dir}/ws",
    "match": "match random random",
    "rate": "rate configs/rate-9x9-search.toml --out {dir}/pool",
    "tune": "tune --out {dir}/tune",
    "import-data": "import-data {afile} -o {dir}/d",
    "import-sgf": "import-sgf {sgfdir} -o {dir}/sgfo",
    "head": "cluster head --bind 127.0.0.1",
    "join": "cluster join 127.0.0.1:1 --bind 127.0.0.1",
    "run": "cluster run --address 127.0.0.1:1 --config configs/selfplay-9x9.toml --workspace {dir}/cws",
}
COMMAND_OF = {"head": "cluster", "join": "cluster", "run": "cluster"}  # a subcommand's parser: its command
INT_BAD = ("nan", "-5", HUGE)
FLOAT_BAD = ("nan", "inf", "-5", "1e30")
OPTIONS = {
    "selfplay": {"--num-games": INT_BAD, "--parallel-games": INT_BAD + ("100000000",), "--batch-size": INT_BAD,
                 "--max-batch-size": INT_BAD,
                 "--timeout-ms": FLOAT_BAD, "--playouts": INT_BAD, "--board-size": INT_BAD,
                 "--procs": INT_BAD + ("1000000",), "--seed": INT_BAD + ("-1",), "--follow-interval": FLOAT_BAD},
    "gtp": {"--playouts": INT_BAD, "--seed": ("nan", "-5", HUGE), "--tree-memory-mb": FLOAT_BAD},
    "train": {"--steps": INT_BAD, "--nproc": INT_BAD, "--workers": INT_BAD, "--nnodes": INT_BAD,
              "--restarts": INT_BAD, "--follow-reuse": FLOAT_BAD, "--follow-export-every": INT_BAD,
              "--follow-poll": FLOAT_BAD},
    # [loop]'s own bounds (LoopConfig, loop/config.py) hold the huge case
    "loop": {"--generations": ("nan", "-5")},
    "match": {"--games": INT_BAD, "--board": INT_BAD, "--komi": ("nan", "inf", "-1000", "1e30"),
              "--playouts": INT_BAD, "--resign": FLOAT_BAD, "--opening-moves": INT_BAD,
              "--concurrency": INT_BAD, "--batch-size": INT_BAD, "--random-opening": INT_BAD + ("1000",),
              "--seed": INT_BAD},
    "rate": {"--games": INT_BAD, "--concurrency": INT_BAD},
    "tune": {"--board-size": INT_BAD, "--playouts": INT_BAD, "--warmup": FLOAT_BAD, "--window": FLOAT_BAD,
             "--min-windows": INT_BAD, "--max-windows": INT_BAD, "--cv": FLOAT_BAD,
             "--batch": INT_BAD, "--games": INT_BAD + ("infx", "1e9x"), "--procs": INT_BAD},
    "import-data": {"--generation": INT_BAD + ("99999999999",), "--chunk-positions": INT_BAD, "--jobs": INT_BAD},
    "import-sgf": {"--board": INT_BAD, "--chunk-games": INT_BAD, "--komi": ("nan", "inf", "-1000", "1e30")},
    "head": {"--port": INT_BAD + ("70000",), "--num-cpus": INT_BAD, "--num-gpus": INT_BAD},
    "join": {"--num-cpus": INT_BAD, "--num-gpus": INT_BAD},
    "run": {"--cpu-engines": INT_BAD, "--poll": FLOAT_BAD, "--view-every": FLOAT_BAD},
}
CASES = [(f"{BASES[c]} {opt} {v}", COMMAND_OF.get(c, c), opt) for c, opts in OPTIONS.items()
         for opt, values in opts.items() for v in values]
# a line names a range, a limit or what the value must be
RANGE = re.compile(r"at least|at most|\bin [\[(]-?\d|must be finite|must be a |outside \d|\d+\.\.\d+|"
                   r"invalid (int|float) value|a winrate in|whole numbers|0 < N <= 1000|must name|\) or more")


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("bounds")
    (d / "empty").mkdir()
    (d / "afile").write_text("x")
    (d / "sgf").mkdir()
    (d / "sgf" / "g.sgf").write_text("(;GM[1]SZ[9]KM[7.5]RE[B+R];B[ee];W[cc])")
    return {"dir": str(d), "empty": str(d / "empty"), "afile": str(d / "afile"), "sgfdir": str(d / "sgf")}


def run(command: str, capsys) -> tuple[int, list[str], str]:
    try:
        status = cli.main(shlex.split(command))
    except SystemExit as e:  # never expected: the parser's mistakes are one line too
        status = e.code
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("compiling ")]
    return status, lines, err


def assert_refused(command: str, command_name: str, words: list[str], capsys) -> str:
    status, lines, err = run(command, capsys)
    assert status == 2, f"{command}: status {status}\n{err}"
    assert "Traceback" not in err, err
    assert len(lines) == 1, f"{command}: not one line:\n{err}"
    line = lines[0]
    assert line.startswith(f"sayuri-async {command_name}: "), line
    for w in words:
        assert w in line, f"{command}: {line!r} lacks {w!r}"
    return line


@pytest.mark.parametrize("command,name,option", CASES, ids=[c[0].split(" ", 1)[0] + " " + c[0].rsplit(" ", 2)[-2]
                                                          + " " + c[0].rsplit(" ", 1)[-1] for c in CASES])
def test_a_bad_number_is_refused_in_one_line_naming_the_option_and_range(command, name, option, files, capsys,
                                                                          monkeypatch):
    monkeypatch.chdir(ROOT)
    line = assert_refused(command.format(**files), name, [option], capsys)
    assert RANGE.search(line), f"{command}: {line!r} states no range"


def _numeric_options() -> dict[str, set[str]]:
    """Each subcommand's options that take a number (int or float), read
    from its parser as ``--help`` builds it."""
    seen: dict[str, set[str]] = {}
    original = argparse.ArgumentParser.add_argument

    def record(self, *names, **kw):
        if kw.get("type") in (int, float):
            seen.setdefault(self.prog.split()[-1], set()).add(names[-1])
        return original(self, *names, **kw)

    argparse.ArgumentParser.add_argument = record
    try:
        for command in cli.SUBCOMMANDS:
            try:
                cli.main([command, "--help"])
            except SystemExit:
                pass
    finally:
        argparse.ArgumentParser.add_argument = original
    return seen


def test_the_table_covers_every_numeric_option(capsys):
    options = _numeric_options()
    capsys.readouterr()
    assert options["selfplay"] and options["match"]  # the parsers were read
    for command, names in options.items():
        missing = names - set(OPTIONS.get(command, {}))
        assert not missing, f"{command}: no bad-value cases for {sorted(missing)}"
    for command, opts in OPTIONS.items():  # every option gets NaN or a non-number, and a value out of range
        for option, values in opts.items():
            assert "nan" in values and any(v.startswith("-") or v in (HUGE, "1e30") for v in values), option


def test_an_empty_output_folder_is_refused(files, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert_refused("selfplay --no-tui --out ''", "selfplay", ["--out", "must name a folder"], capsys)


# ---- an output that is the input ---------------------------------------------------------------------------
def digest(path: str | os.PathLike) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture
def linked(tmp_path) -> dict[str, str]:
    """A weights file, a Sayuri-looking file, an SGF folder, each with a hard
    link and a symlink (the folder: a symlink)."""
    net = tmp_path / "net.safetensors"
    shutil.copy(SHIPPED, net)
    say = tmp_path / "sayuri.txt"
    say.write_text("get main\nget info\nVersion 5\nend info\nget parameters\nend parameters\nend main\n")
    data = tmp_path / "data.txt.gz"
    data.write_bytes(b"\x1f\x8b not really")
    sgf = tmp_path / "games"
    sgf.mkdir()
    (sgf / "g.sgf").write_text("(;GM[1]SZ[9]KM[7.5]RE[B+R];B[ee];W[cc])")
    out = {"net": net, "say": say, "data": data, "sgf": sgf}
    for name, p in list(out.items()):
        if p.is_file():
            os.link(p, tmp_path / f"hard-{p.name}")
            out[f"{name}_hard"] = tmp_path / f"hard-{p.name}"
        os.symlink(p, tmp_path / f"sym-{p.name}")
        out[f"{name}_sym"] = tmp_path / f"sym-{p.name}"
    out["net_rel"] = Path(os.path.relpath(net, ROOT))  # the same file by another spelling
    return {k: str(v) for k, v in out.items()}


SAME_FILE = [
    ("import-weights {say} -o {say}", "import-weights", "say"),
    ("import-weights {say} -o {say_hard}", "import-weights", "say"),
    ("import-weights {say} -o {say_sym}", "import-weights", "say"),
    ("import-weights {say_sym} -o {say}", "import-weights", "say"),
    ("export {net} -o {net}", "export", "net"),
    ("export {net} -o {net_hard}", "export", "net"),
    ("export {net} -o {net_sym}", "export", "net"),
    ("export {net_rel} -o {net}", "export", "net"),
    ("import-data {data} -o {data}", "import-data", "data"),
    ("import-data {data} -o {data_sym}", "import-data", "data"),
    ("import-sgf {sgf} -o {sgf}", "import-sgf", "sgf"),
    ("import-sgf {sgf} -o {sgf_sym}", "import-sgf", "sgf"),
    ("match {net} random --games 1 --board 9 --playouts 2 --json {net_hard}", "match", "net"),
]


@pytest.mark.parametrize("command,name,source", SAME_FILE, ids=[c[0] for c in SAME_FILE])
def test_an_output_that_is_the_input_is_refused_and_the_input_kept(command, name, source, linked, capsys,
                                                                   monkeypatch):
    monkeypatch.chdir(ROOT)
    path = Path(linked[source])
    before = digest(path) if path.is_file() else sorted(p.name for p in path.iterdir())
    line = assert_refused(command.format(**linked), name, ["-o" if " -o " in command else "--json"], capsys)
    assert "is the input" in line or "not a folder" in line, line
    after = digest(path) if path.is_file() else sorted(p.name for p in path.iterdir())
    assert after == before


def test_every_command_with_an_input_and_an_output_has_a_same_file_case():
    takes_output = {c for c in cli.SUBCOMMANDS if c.startswith(("import-", "export"))} | {"match"}
    assert takes_output <= {case[1] for case in SAME_FILE}


# ---- config files ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("command,body,words", [
    ("selfplay --no-tui --config {cfg}", "[selfplay]\nparallel_games = 100000000\n",
     ["[selfplay] parallel_games", "at most 16384"]),
    ("selfplay --no-tui --config {cfg}", "[selfplay]\nseed = " + "7" * 5000 + "\n", ["c.toml", "4300"]),
    ("selfplay --no-tui --config {cfg}", "[selfplay]\nkomi = " + "7" * 400 + "\n", ["komi"]),
    ("selfplay --no-tui --config {cfg}", "x = " + "[" * 5000 + "]" * 5000 + "\n", ["c.toml", "nested too deeply"]),
    ("selfplay --no-tui --config {cfg}", "[selfplay]\nprocs = 100000\n", ["procs", "at most 256"]),
    ("selfplay --no-tui --config {cfg}", "[search]\nedge_capacity = 99999999999\n", ["edge_capacity", "at most"]),
    ("gtp --config {cfg}", "[search]\nplayouts = 1000000000000\n", ["[search] playouts", "at most"]),
    ("gtp --config {cfg}", "[analysis]\npv_length = 100000000\n", ["[analysis] pv_length", "at most"]),
    ("train --config {cfg}", "[optim]\nbatch_size = 1000000000\n", ["[optim] batch_size", "at most 65536"]),
    ("train --config {cfg} --data {dir}", "[model]\nchannels = 1000000\n",
     ["[model]", "channels 1000000", "limit of 4096"]),
    ("train --config {cfg} --data {dir}", "[model]\nblocks = 100000\n", ["[model]", "100000 blocks", "256"]),
    ("import-data {cfg} -o {dir}/d --config {cfg}", "[import]\ngeneration = 99999999999\n",
     ["[import] generation", "at most 999999"]),
])
def test_a_config_value_beyond_its_bounds_is_one_line(command, body, words, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    cfg = tmp_path / "c.toml"
    cfg.write_text(body)
    name = command.split()[0]
    assert_refused(command.format(cfg=cfg, dir=tmp_path), name, words, capsys)


@pytest.mark.parametrize("command", ["selfplay --no-tui --config /dev/zero", "gtp --config /dev/zero",
                                     "train --config /dev/zero", "tune --config /dev/zero",
                                     "loop --config /dev/zero --workspace {dir}/ws"])
def test_a_config_is_read_no_further_than_the_limit(command, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero here")
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert_refused(command.format(dir=tmp_path), command.split()[0],
                   ["/dev/zero", "not a config file but a character device"], capsys)  # refused before opening
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb < 64 * 1024, grown_kb  # the old reader took gigabytes


def test_a_big_file_just_over_the_limit_is_refused_and_one_under_it_read(tmp_path):
    from sayuri_async.configfile import ConfigError, read_toml

    p = tmp_path / "big.toml"
    p.write_text("# " + "x" * (MAX_CONFIG_BYTES - 3) + "\n")  # exactly the limit
    assert read_toml(p) == {}
    p.write_text("# " + "x" * (MAX_CONFIG_BYTES - 2) + "\n")
    with pytest.raises(ConfigError, match="larger than the limit"):
        read_toml(p)


# ---- what no bound can foresee: the machine's memory --------------------------------------------------------
@pytest.mark.parametrize("library", ["numpy", "torch"])
def test_an_allocation_the_machine_cannot_make_is_one_line_and_status_1(library, capsys):
    from sayuri_async.usererror import answered

    @answered("demo")
    def main(argv=None):
        if library == "numpy":
            import numpy as np

            np.empty(10 ** 15, dtype=np.uint8)
        else:
            import torch

            torch.empty(10 ** 15, dtype=torch.uint8)
        return 0

    assert main() == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sayuri-async demo: out of memory: an allocation failed"), err
    assert "smaller settings" in err


# ---- --init of a network that reads other planes than the chunks hold ---------------------------------------
def test_init_with_another_encoder_than_the_chunks_names_both(tmp_path, capsys, monkeypatch):
    import numpy as np

    from sayuri_async.sayuri.model import BlockSpec, SayuriConfig
    from sayuri_async.sayuri.weights import build_net, layers_for, read_sayuri, save_imported, write_sayuri
    from test_train_chunks import make_chunk

    monkeypatch.chdir(ROOT)
    for i in range(2):
        make_chunk(tmp_path / "data" / f"chunk-000001-t-{i:06d}.npz", n=7, positions=32, seed=i)  # simple-v1
    cfg = SayuriConfig(version=3, channels=8, blocks=[BlockSpec("residual")], policy_channels=4, value_channels=4)
    raw = tmp_path / "net.txt"
    write_sayuri(raw, cfg, layers_for(cfg, np.random.default_rng(0)))
    imported = tmp_path / "net.safetensors"
    save_imported(imported, build_net(read_sayuri(raw)), {"name": "x"})
    toml = tmp_path / "t.toml"
    toml.write_text(f'[data]\ndir = "{tmp_path / "data"}"\nboard_size = 7\nwindow_min_positions = 10\n'
                    f'[run]\nout = "{tmp_path / "run"}"\ndevice = "cpu"\n')
    for init in (raw, imported):
        line = assert_refused(f"train --config {toml} --init {init}", "train",
                              [f"--init {init}", "sayuri-v3", "simple-v1", "encoders differ"], capsys)
        assert "2 chunks" in line
    assert not (tmp_path / "run").exists()  # refused before the run folder was made
