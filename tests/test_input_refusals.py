"""Inputs that used to hang or run without bound, refused in one line:
a ``--config`` that is a named pipe (opening one with no writer waits for
ever) or any other file that is not a regular one, a Sayuri data file
holding one huge line, an empty Sayuri data file."""
from __future__ import annotations

import gzip
import os
import resource
import shlex
import threading
from pathlib import Path

import numpy as np
import pytest

from sayuri_async import cli
from sayuri_async.sayuri import data
from sayuri_async.sayuri.data import SayuriDataError, convert, iter_records

ROOT = Path(__file__).resolve().parents[1]

FIFO_COMMANDS = [
    "selfplay --no-tui --config {fifo} --out {dir}/sp",
    "loop --config {fifo} --workspace {dir}/ws",
    "train --config {fifo} --data {dir} --out {dir}/tr",
    "gtp --config {fifo}",
    "tune --config {fifo} --out {dir}/tune",
    "import-data {data} -o {dir}/d --config {fifo}",
    "import-sgf {dir} -o {dir}/sgfo --config {fifo}",
    "cluster run --address 127.0.0.1:1 --config {fifo} --workspace {dir}/cws",
]


def run_cli(command: str, capsys) -> tuple[int, list[str]]:
    try:
        status = cli.main(shlex.split(command))
    except SystemExit as e:
        status = e.code
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return status, [x for x in err.splitlines() if x.strip() and not x.startswith("compiling ")]


@pytest.mark.parametrize("command", FIFO_COMMANDS, ids=[c.split(" --")[0].split(" {")[0] for c in FIFO_COMMANDS])
def test_a_config_that_is_a_named_pipe_is_refused_without_opening_it(command, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    fifo = tmp_path / "c.toml"
    os.mkfifo(fifo)
    (tmp_path / "a.txt").write_text("")
    opened = threading.Event()

    def rescue() -> None:  # a reader that opened the pipe waits for a writer: be one, so the test ends
        if not opened.wait(20):
            with open(fifo, "w") as f:
                f.write("= not TOML\n")  # and the command ends on it, without the line asked for

    helper = threading.Thread(target=rescue, daemon=True)
    helper.start()
    try:
        status, lines = run_cli(command.format(fifo=fifo, dir=tmp_path, data=tmp_path / "a.txt"), capsys)
    finally:
        opened.set()
    helper.join()
    name = command.split()[0]
    assert status == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"sayuri-async {name}: ") and str(fifo) in lines[0], lines
    assert "named pipe" in lines[0], lines


def test_a_config_that_is_a_device_is_refused_by_its_kind(tmp_path):
    from sayuri_async.configfile import ConfigError, read_toml

    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero here")
    with pytest.raises(ConfigError, match="/dev/zero: not a config file but a character device"):
        read_toml("/dev/zero")
    with pytest.raises(ConfigError, match="not a config file but a folder"):
        read_toml(tmp_path)


def test_a_gzip_holding_one_huge_line_is_refused_after_a_bounded_read(tmp_path, capsys):
    """20 MB of one line, compressed to a few KB: reading stops once the line
    passes the cap, in bounded memory, with one warning line naming the file
    and the line."""
    src = tmp_path / "one-line.gz"
    with gzip.open(src, "wb", compresslevel=9) as f:
        chunk = b"7" * (1 << 20)
        for _ in range(20):
            f.write(chunk)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(SayuriDataError, match=rf"{src}: record 0: line 1 is longer than 1 MiB"):
        list(iter_records(src))
    from sayuri_async.sayuri.cli import data_main

    assert data_main([str(src), "-o", str(tmp_path / "d")]) == 2
    grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kb < 64 * 1024, grown_kb
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert err[0] == (f"sayuri-async import-data: skipping the rest of {src}: record 0: line 1 is longer than "
                      f"1 MiB (a record's lines are at most a few KB); not Sayuri training data")
    assert err[1].startswith("sayuri-async import-data: nothing imported") and len(err) == 2


def test_the_line_reader_gathers_a_long_line_once_and_keeps_short_ones_whole(monkeypatch):
    import io

    monkeypatch.setattr(data, "_READ_BLOCK", 7)
    text = b"ab\n" + b"x" * 50 + b"\n\nlast"
    assert list(data._lines(io.BytesIO(text))) == [b"ab\n", b"x" * 50 + b"\n", b"\n", b"last"]
    with pytest.raises(data.LineTooLong) as e:
        list(data._lines(io.BytesIO(text), limit=20))
    assert e.value.number == 2
    assert data.MAX_LINE_BYTES >= 1 << 20


def test_an_empty_data_file_is_named_in_a_warning(tmp_path, capsys):
    from sayuri_async.sayuri.cli import data_main

    from test_sayuri_data import game_records

    empty = tmp_path / "empty.txt"
    empty.write_text("")
    blank = tmp_path / "blank.gz"
    with gzip.open(blank, "wb") as f:
        f.write(b"\n\n")
    good = tmp_path / "good.txt"
    good.write_text(game_records(np.random.default_rng(3))[0])
    res = convert([str(empty), str(good), str(blank)], tmp_path / "out")
    assert res.positions == 3 and len(res.warnings) == 2
    assert res.warnings[0].startswith(f"{empty}: no records in it") and str(blank) in res.warnings[1]
    # some data imported: the warning, the summary, exit status 0
    assert data_main([str(empty), str(good), "-o", str(tmp_path / "d1")]) == 0
    out = capsys.readouterr()
    assert out.err.strip() == f"sayuri-async import-data: {empty}: no records in it (an empty file); nothing " \
                              f"imported from it"
    assert "wrote 2 chunk(s)" in out.out
    # nothing imported at all: said so, exit status 2
    assert data_main([str(empty), "-o", str(tmp_path / "d2")]) == 2
    out = capsys.readouterr()
    last = out.err.strip().splitlines()[-1]
    assert last == f"sayuri-async import-data: nothing imported: no records read from {empty}"
    assert out.out == "" and not list((tmp_path / "d2").glob("*.npz"))


# ---------------------------------------------------------------------------
# the loop's state file


def tiny_weights(path: Path, **cfg) -> Path:
    from sayuri_async.net.model import Net, NetConfig
    from sayuri_async.net.weights import save_weights

    save_weights(path, Net(NetConfig(**{"blocks": 1, "channels": 8, "policy_channels": 4, "value_channels": 4,
                                        "value_hidden": 8, **cfg})))
    return path


def loop_start(tmp_path: Path, state: str | None, capsys) -> tuple[int, list[str], Path]:
    """``loop`` on a workspace whose state.json holds ``state``; the status
    and the lines on stderr."""
    from test_loop import write_cfg

    ws = tmp_path / "ws"
    (ws / "weights").mkdir(parents=True, exist_ok=True)
    if state is not None:
        (ws / "state.json").write_text(state)
    status, lines = run_cli(f"loop --config {write_cfg(tmp_path, 1)} --workspace {ws}", capsys)
    return status, lines, ws


@pytest.mark.parametrize("state, words", [
    ("[" * 100_000 + "]" * 100_000, ["not a loop state file", "nested too deeply"]),
    ('{"generation": 2, "best": "/etc/passwd", "best_generation": 1}', ["best '/etc/passwd'",
                                                                         "not a network of this workspace"]),
    ('{"generation": 2, "best": "../x.safetensors", "best_generation": 1}', ["best '../x.safetensors'"]),
    ('{"generation": 2, "best": "weights/../../x", "best_generation": 1}', ["best 'weights/../../x'"]),
    ('{"generation": 2, "best": 3, "best_generation": 1}', ["best '3'"]),
], ids=["nested", "absolute", "dotdot", "dotdot-inside", "number"])
def test_a_bad_state_file_is_one_line_naming_it(state, words, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    status, lines, ws = loop_start(tmp_path, state, capsys)
    assert status == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"sayuri-async loop: {ws / 'state.json'}: "), lines
    for w in words:
        assert w in lines[0], lines
    assert "next start" not in lines[0]


@pytest.mark.parametrize("damage", ["missing", "truncated"])
def test_a_missing_or_cut_best_network_is_refused_at_start_without_the_hint(damage, tmp_path, capsys,
                                                                            monkeypatch):
    monkeypatch.chdir(ROOT)
    ws = tmp_path / "ws"
    best = ws / "weights" / "gen-000001.safetensors"
    best.parent.mkdir(parents=True)
    if damage == "truncated":
        data = tiny_weights(best).read_bytes()
        best.write_bytes(data[: len(data) - 100])
    state = '{"generation": 2, "best": "weights/gen-000001.safetensors", "best_generation": 1}'
    status, lines, _ = loop_start(tmp_path, state, capsys)
    assert status == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"sayuri-async loop: {best}: "), lines
    assert ("missing" if damage == "missing" else "truncated") in lines[0] and "state.json" in lines[0], lines
    assert "continues from the last finished step" not in lines[0]
    assert not list((ws / "data").glob("*.npz"))  # no work done


def test_a_failure_says_how_the_next_start_goes_on(tmp_path, capsys, monkeypatch):
    import errno

    from sayuri_async.loop import driver as loop_mod
    from sayuri_async.selfplay.runner import SelfplayError
    from test_loop import write_cfg

    monkeypatch.chdir(ROOT)
    ws = tmp_path / "ws"
    lp = loop_mod.Loop(write_cfg(tmp_path, 1), str(ws))

    def failing(e):
        def run() -> int:
            raise e
        return run

    full = OSError(errno.ENOSPC, "No space left on device", str(ws / "data" / "x.npz"))
    fuller = "; the disk is full: free some space, and the next start continues from the last finished step"
    cases = [
        (SelfplayError("engine 0 died"), "engine 0 died; the next start continues from the last finished step"),
        (full, f"{ws / 'data' / 'x.npz'}: No space left on device{fuller}"),
        (SelfplayError("writer: [Errno 28] No space left on device"), f"No space left on device{fuller}"),
    ]
    for e, end in cases:
        monkeypatch.setattr(lp, "run", failing(e))
        assert loop_mod._run(lp) == 1
        line = capsys.readouterr().err.strip()
        assert "\n" not in line and line.startswith("sayuri-async loop: ") and line.endswith(end), line
    # the best network went missing during the run: no promise that the next start goes on
    (ws / "state.json").write_text('{"generation": 2, "best": "weights/gen-000001.safetensors", '
                                   '"best_generation": 1}')
    monkeypatch.setattr(lp, "run", failing(SelfplayError("engine 0: cannot load the network")))
    assert loop_mod._run(lp) == 1
    line = capsys.readouterr().err.strip()
    assert "continues" not in line and "is missing; the next start stops there too" in line, line


# ---------------------------------------------------------------------------
# a full disk names the file


def full_disk_writes(monkeypatch) -> None:
    """Every ``Path.write_bytes`` fails as a write to a full disk does: ENOSPC
    with no file name (the open succeeded, the write did not)."""
    import errno

    def write_bytes(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", write_bytes)


def full_disk_safetensors(monkeypatch) -> None:
    """safetensors' writer fails as it does on a full disk (its own error
    type, not an OSError; the text is what safetensors 0.8 says)."""
    import safetensors.torch
    from safetensors import SafetensorError

    def save_file(*args, **kwargs):
        raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")

    monkeypatch.setattr(safetensors.torch, "save_file", save_file)


def test_import_weights_on_a_full_disk_names_the_output(tmp_path, capsys, monkeypatch):
    from sayuri_async.sayuri import cli as sayuri_cli
    from sayuri_async.sayuri.weights import layers_for, write_sayuri
    from test_sayuri_weights import CONFIGS

    cfg = CONFIGS["v3-swish"]
    src = tmp_path / "net.txt"
    write_sayuri(src, cfg, layers_for(cfg, np.random.default_rng(5)))
    out = tmp_path / "out.safetensors"
    full_disk_safetensors(monkeypatch)
    assert sayuri_cli.main([str(src), "-o", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"sayuri-async import-weights: cannot write {out}: No space left on device", err
    assert not out.exists() and not list(tmp_path.glob(".*.tmp"))


def test_saving_our_weights_on_a_full_disk_is_an_os_error_naming_the_file(tmp_path, monkeypatch):
    import errno

    full_disk_safetensors(monkeypatch)
    with pytest.raises(OSError) as e:
        tiny_weights(tmp_path / "w.safetensors")
    assert e.value.errno == errno.ENOSPC and e.value.filename == str(tmp_path / "w.safetensors")


def test_export_on_a_full_disk_names_the_output(tmp_path, capsys, monkeypatch):
    from sayuri_async.sayuri.export import main as export_main
    from sayuri_async.sayuri.weights import layers_for, write_sayuri
    from test_sayuri_weights import CONFIGS

    cfg = CONFIGS["v3-swish"]
    src = tmp_path / "net.txt"
    write_sayuri(src, cfg, layers_for(cfg, np.random.default_rng(5)))
    out = tmp_path / "exported.txt"
    full_disk_writes(monkeypatch)
    assert export_main([str(src), "-o", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert err == f"sayuri-async export: {out}: No space left on device", err
    assert not list(tmp_path.glob(".*.tmp"))


def test_match_sgf_on_a_full_disk_names_the_file(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    full_disk_writes(monkeypatch)
    status, lines = run_cli(f"match random random --games 1 --board 7 --playouts 2 --sgf {tmp_path / 'g'}", capsys)
    assert status == 1 and len(lines) == 1, lines
    assert lines[0].startswith(f"sayuri-async match: {tmp_path / 'g'}/") and lines[0].endswith(
        ".sgf: No space left on device"), lines


# ---------------------------------------------------------------------------
# a network that declares other board sizes


@pytest.fixture
def net_7x7(tmp_path) -> Path:
    return tiny_weights(tmp_path / "w7.safetensors", board_size_min=7, board_size_max=7)


@pytest.mark.parametrize("command, option", [
    ("selfplay --no-tui --weights {w} --board-size 9 --num-games 1 --out {dir}/sp", "--board-size 9"),
    ("selfplay --no-tui --weights {w} --num-games 1 --out {dir}/sp", f"{ROOT}/configs/selfplay-9x9.toml: "
                                                                     "[selfplay] board_sizes 9"),
    ("match {w} random --board 9 --games 1 --playouts 2", "--board 9"),
], ids=["selfplay-option", "selfplay-config", "match"])
def test_a_board_size_the_network_does_not_declare_is_refused(command, option, net_7x7, tmp_path, capsys,
                                                              monkeypatch):
    monkeypatch.chdir(ROOT)
    status, lines = run_cli(command.format(w=net_7x7, dir=tmp_path), capsys)
    name = command.split()[0]
    assert status == 2 and len(lines) == 1, lines
    assert lines[0] == (f"sayuri-async {name}: {net_7x7}: the network declares board sizes 7..7, so it cannot "
                        f"play {option}"), lines
    assert not (tmp_path / "sp" / "data").exists() or not list((tmp_path / "sp" / "data").glob("*.npz"))


def test_gtp_refuses_it_in_the_same_words(net_7x7, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    status, lines = run_cli(f"gtp --weights {net_7x7}", capsys)
    assert status == 2 and lines[-1] == (f"sayuri-async: {net_7x7}: the network declares board sizes 7..7, so it "
                                         f"cannot play [game] board_size 19"), lines


def test_a_declared_board_size_plays(net_7x7, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    status, lines = run_cli(f"match {net_7x7} random --board 7 --games 1 --playouts 2", capsys)
    assert status == 0, lines
