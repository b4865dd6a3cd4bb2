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
    assert out.err.strip().splitlines()[-1] == f"sayuri-async import-data: nothing imported: no records read from {empty}"
    assert out.out == "" and not list((tmp_path / "d2").glob("*.npz"))
