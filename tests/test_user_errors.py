"""One error policy for every subcommand (``sayuri_async.usererror``).

Each case of ``CASES`` is a mistake a user can make: a missing, wrong or
unreadable file, an output location that cannot be written, a number out of
range, a device that is not there, a GTP engine that does not start. Each
must end with one line ``sayuri-async <command>: ...`` naming the file or
option, exit status 2, and no traceback. The cases run through ``cli.main``
in this process (fast); a few run as the real program too.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sayuri_async import cli
from sayuri_async.usererror import RunFailure, UserError, exit_status, message

ROOT = Path(__file__).resolve().parents[1]
CUDA = False
try:
    import torch

    CUDA = torch.cuda.is_available()
except ImportError:  # pragma: no cover
    pass


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("bad")
    (d / "garbage.safetensors").write_bytes(b"garbage")
    (d / "latin1.toml").write_bytes(b"\xff\xfe[selfplay]\n")
    (d / "notatoml.toml").write_text("[selfplay\n")
    (d / "empty").mkdir()
    (d / "afile").write_text("x")
    (d / "log.csv").write_bytes(b"\x00\x01\x02 not a log")
    (d / "loopcuda.toml").write_text('[loop]\ndevice = "cuda:7"\n')
    names = {"garbage": "garbage.safetensors", "latin1": "latin1.toml", "notatoml": "notatoml.toml",
             "empty": "empty", "afile": "afile", "log": "log.csv", "loopcuda": "loopcuda.toml", "missing": "missing"}
    return {k: str(d / v) for k, v in names.items()} | {"dir": str(d)}


# (command line, words the one line must hold); {name} takes a path from ``files``
CASES = [
    # selfplay
    ("selfplay --config {missing}", ["{missing}", "no such file"]),
    ("selfplay --config {latin1}", ["latin1.toml", "not UTF-8"]),
    ("selfplay --config {notatoml}", ["notatoml.toml", "not valid TOML"]),
    ("selfplay --weights {missing} --no-tui", ["--weights", "no such weights file"]),
    ("selfplay --weights {empty} --no-tui", ["--weights", "not a weights file"]),
    ("selfplay --weights {garbage} --no-tui", ["garbage.safetensors", "safetensors"]),
    ("selfplay --device gpu --no-tui", ["device", "gpu"]),
    ("selfplay --device cuda:7 --no-tui", ["--device cuda:7"]),
    ("selfplay --out {afile} --no-tui", ["--out", "not a folder"]),
    ("selfplay --out /proc/none/x --no-tui", ["--out", "cannot write"]),
    ("selfplay --playouts 0 --no-tui", ["--playouts", "at least 1"]),
    ("selfplay --num-games -1 --no-tui", ["--num-games", "at least 0"]),
    ("selfplay --parallel-games 0 --no-tui", ["--parallel-games", "at least 1"]),
    ("selfplay --board-size 30 --no-tui", ["--board-size", "30"]),
    # train
    ("train --config {missing}", ["{missing}", "no such file"]),
    ("train --config {latin1}", ["latin1.toml", "not UTF-8"]),
    ("train --config configs/train-9x9.toml --data {missing}", ["--data", "no such folder"]),
    ("train --config configs/train-9x9.toml --data {empty} --out {dir}/t1", ["no training chunks", "board size 9"]),
    ("train --config configs/train-9x9.toml --data {empty} --device cuda:7", ["--device cuda:7"]),
    ("train --config configs/train-9x9.toml --data {empty} --device tpu", ["device", "auto, cpu, cuda"]),
    ("train --config configs/train-9x9.toml --data {empty} --init {missing}", ["--init", "no such weights file"]),
    ("train --config configs/train-9x9.toml --data {empty} --init {garbage} --out {dir}/t3", ["--init", "garbage"]),
    ("train --config configs/train-9x9.toml --data {empty} --out {afile}", ["--out", "not a folder"]),
    ("train --config configs/train-9x9.toml --steps -1", ["--steps"]),
    ("train --config configs/train-9x9.toml --workers -1", ["--workers"]),
    ("train --config configs/train-9x9.toml --nproc 0", ["--nproc"]),
    # loop
    ("loop --config {missing} --workspace {dir}/ws", ["{missing}", "no such file"]),
    ("loop --config {latin1} --workspace {dir}/ws", ["latin1.toml", "not UTF-8"]),
    ("loop --config configs/loop-7x7.toml --workspace {afile}", ["--workspace", "not a folder"]),
    ("loop --config configs/loop-7x7.toml --workspace {dir}/ws --generations -1", ["--generations", "at least 0"]),
    ("loop --config {loopcuda} --workspace {dir}/ws", ["[loop] device", "cuda:7"]),
    # match
    ("match random random --board 30", ["--board 30", "2..25"]),
    ("match random random --batch-size 0", ["--batch-size", "at least 1"]),
    ("match random random --games 0", ["--games", "at least 1"]),
    ("match random random --playouts 0", ["--playouts", "at least 1"]),
    ("match random random --concurrency 0", ["--concurrency", "at least 1"]),
    ("match random random --resign 2", ["--resign"]),
    ("match random random --device gpu", ["--device", "gpu"]),
    ("match random random --device cuda:7", ["--device cuda:7"]),
    ("match {garbage} random", ["garbage.safetensors", "safetensors"]),
    ("match /bin/sh random", ["/bin/sh"]),
    ("match {missing} random", ["{missing}", "neither a weights file"]),
    ("match random", ["at least two players"]),
    ("match 'gtp:/bin/false' random --board 7", ["GTP engine", "/bin/false", "does not speak GTP"]),
    ("match '{missing} --mode gtp' random --board 7", ["GTP engine", "cannot start"]),
    ("match random random --games 1 --board 5 --playouts 2 --sgf {afile}", ["--sgf", "not a folder"]),
    ("match random random --games 1 --json /proc/none/x.json", ["--json", "cannot write"]),
    ("match random random --games 1 --json {dir}", ["--json", "a folder"]),
    # tune
    ("tune --batch 0", ["--batch", "at least 1"]),
    ("tune --batch x", ["--batch", "whole numbers"]),
    ("tune --games 0", ["--games"]),
    ("tune --procs 0", ["--procs"]),
    ("tune --device cuda:7", ["--device cuda:7"]),
    ("tune --weights {missing}", ["--weights", "no such weights file"]),
    ("tune --out {afile}", ["--out", "not a folder"]),
    ("tune --window 0", ["--window"]),
    # gtp
    ("gtp --weights {missing}", ["--weights", "no such weights file"]),
    ("gtp --weights {garbage}", ["garbage.safetensors"]),
    ("gtp --device cuda:7", ["--device cuda:7"]),
    ("gtp --config {latin1}", ["latin1.toml", "not UTF-8"]),
    ("gtp --playouts 0", ["--playouts", "at least 1"]),
    ("gtp --tree-memory-mb -5", ["--tree-memory-mb"]),
    # import-weights, import-data
    ("import-weights {missing} -o {dir}/x.safetensors", ["{missing}", "no such Sayuri weights file"]),
    ("import-weights {garbage} -o {dir}/x.safetensors", ["garbage.safetensors", "not a Sayuri"]),
    ("import-weights {garbage} -o {empty}", ["-o", "a folder"]),
    ("import-data {missing} -o {dir}/d", ["{missing}", "no such Sayuri data file"]),
    ("import-data {afile} -o {afile}", ["-o", "not a folder"]),
    ("import-data {garbage} -o {dir}/d2", ["garbage.safetensors"]),
    # plot
    ("plot {missing}", ["{missing}", "no such log"]),
    ("plot {log}", ["log.csv", "not a training log"]),
    ("plot {empty}", ["train_log.csv", "no such log"]),
    # export
    ("export {missing} -o {dir}/x.txt", ["{missing}", "no such"]),
    ("export {garbage} -o {dir}/x.txt", ["garbage.safetensors"]),
    ("export {garbage} -o {empty}", ["-o", "a folder"]),
    # import-sgf
    ("import-sgf {missing} -o {dir}/sgfout", ["{missing}", "no such file"]),
    ("import-sgf {dir} -o {afile}", ["-o", "not a folder"]),
    ("import-sgf {dir} -o {dir}/sgfout --board 30", ["--board 30"]),
    ("import-sgf {dir} -o {dir}/sgfout --chunk-games 0", ["--chunk-games", "at least 1"]),
    # cluster
    ("cluster run --address 127.0.0.1:1 --config {missing} --workspace {dir}/cws", ["{missing}", "no such"]),
    ("cluster run --address 127.0.0.1:1 --config {latin1} --workspace {dir}/cws", ["latin1.toml", "not UTF-8"]),
    ("cluster run --address 127.0.0.1:1 --config configs/selfplay-9x9.toml --workspace {afile}",
     ["--workspace", "not a folder"]),
    ("cluster run --address 127.0.0.1:1 --config configs/selfplay-9x9.toml --workspace {dir}/cws "
     "--train-config {missing}", ["--train-config", "no such"]),
    ("cluster run --address 127.0.0.1:1 --config configs/selfplay-9x9.toml --workspace {dir}/cws "
     "--train-args '--steps 10'", ["--train-args goes with --train-config"]),
    ("cluster run --address 127.0.0.1:1 --config configs/selfplay-9x9.toml --workspace {dir}/cws "
     "--train-config configs/train-9x9.toml --train-args '--out x'", ["--train-args", "--out is the fleet's"]),
    ("cluster run --address 127.0.0.1:1 --config configs/selfplay-9x9.toml --workspace {dir}/cws "
     "--train-config configs/train-9x9.toml --train-args '--stepz 10'", ["--train-args", "--stepz"]),
    ("cluster run --address 127.0.0.1:1 --config configs/selfplay-9x9.toml --workspace {dir}/cws "
     "--train-config configs/train-9x9.toml --train-args '--steps \"10'", ["--train-args", "quotation"]),
    ("cluster head --bind 127.0.0.1 --port 0", ["--port", "at least 1"]),
    ("cluster fly", ["invalid choice"]),
    # rate
    ("rate {missing} --out {dir}/pool", ["{missing}", "no such file"]),
    ("rate {latin1} --out {dir}/pool", ["latin1.toml", "not UTF-8"]),
    ("rate configs/rate-9x9-search.toml --out {dir}/pool --games 0", ["--games", "at least 1"]),
    ("rate configs/rate-9x9-search.toml --out {dir}/pool --concurrency 0", ["--concurrency", "at least 1"]),
    ("rate configs/rate-9x9-search.toml --out /proc/none/pool", ["--out", "cannot write"]),
    # the dispatcher
    ("bench", ["unknown command 'bench'"]),
]
if CUDA:  # on a GPU machine cuda:7 may exist; the other cases still hold
    CASES = [c for c in CASES if "cuda:7" not in c[0]]


def run_in_process(command: str, capsys) -> tuple[int, str]:
    import shlex

    try:
        status = cli.main(shlex.split(command))
    except SystemExit as e:  # argparse's own usage errors
        status = e.code
    captured = capsys.readouterr()
    return status, captured.err


@pytest.mark.slow
@pytest.mark.parametrize("command,words", CASES, ids=[c[0][:60] for c in CASES])
def test_a_user_mistake_is_one_line_and_exit_status_2(command, words, files, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    command = command.format(**files)
    status, err = run_in_process(command, capsys)
    lines = [line for line in err.splitlines() if line.startswith("sayuri-async")]  # not argparse's usage
    assert status == 2, f"{command}: status {status}\n{err}"
    assert "Traceback" not in err
    assert lines, f"{command}: no message\n{err}"
    last = lines[-1]
    for w in words:
        assert w.format(**files) in last, f"{command}: {last!r} lacks {w!r}"


@pytest.mark.parametrize("command", sorted(cli.SUBCOMMANDS))
def test_a_command_line_mistake_is_one_line_not_the_usage_text(command, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    status, err = run_in_process(f"{command} --no-such-option 3", capsys)
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("compiling ")]  # cold cache
    assert status == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"sayuri-async {command}: "), err
    assert "--no-such-option" in lines[0] or "required" in lines[0], err
    assert f"sayuri-async {command} --help" in lines[0], err


def test_the_cases_cover_every_subcommand():
    covered = {c[0].split()[0] for c in CASES}
    assert set(cli.SUBCOMMANDS) <= covered, set(cli.SUBCOMMANDS) - covered


@pytest.mark.parametrize("argv,words", [
    (["match", "random", "random", "--board", "30"], ["sayuri-async match: --board 30"]),
    (["selfplay", "--device", "cuda:7", "--no-tui"], ["sayuri-async selfplay: --device cuda:7"]),
    (["train", "--config", "/nonexistent/t.toml"], ["sayuri-async train: /nonexistent/t.toml: no such file"]),
])
@pytest.mark.slow
def test_the_program_itself_answers_one_line(argv, words):
    if CUDA and "cuda:7" in argv:
        pytest.skip("a machine with GPUs may have cuda:7")
    r = subprocess.run([sys.executable, "-m", "sayuri_async.cli", *argv], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert [line for line in r.stderr.splitlines() if line.strip()][-1].startswith(words[0]), r.stderr


def test_kinds_and_statuses():
    from sayuri_async.configfile import ConfigError
    from sayuri_async.go.sgf import SgfError
    from sayuri_async.net.weights import WeightsError
    from sayuri_async.selfplay.runner import SelfplayError
    from sayuri_async.train.errors import NoTrainingData, RunFolderInUse, TrainError

    for e in (ConfigError("x"), SgfError("x"), WeightsError("x"), RunFolderInUse("x"), NoTrainingData("x"),
              UserError("x")):
        assert exit_status(e) == 2, type(e)
    for e in (SelfplayError("x"), TrainError("x"), RunFailure("x"), OSError(28, "No space left on device", "/d/f")):
        assert exit_status(e) == 1, type(e)
    assert exit_status(KeyboardInterrupt()) == 130
    assert exit_status(AssertionError("a bug")) is None  # a bug keeps its traceback
    assert message(OSError(28, "No space left on device", "/d/f")) == "/d/f: No space left on device"
    assert message(UserError("two\n  lines")) == "two lines"


def test_a_version_and_no_advertised_command_that_is_missing(capsys):
    import importlib

    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("sayuri-async 0.")
    for name, (target, _) in cli.SUBCOMMANDS.items():
        module, _, function = target.partition(":")
        assert importlib.util.find_spec(module) is not None, name
        assert callable(getattr(importlib.import_module(module), function or "main", None)), name
    assert "bench" not in cli.SUBCOMMANDS


def test_train_says_which_board_sizes_it_found(tmp_path, capsys, monkeypatch):
    from test_train_chunks import make_chunk

    monkeypatch.chdir(ROOT)
    make_chunk(tmp_path / "data" / "chunk-1-7-0.npz", n=7, positions=20)
    make_chunk(tmp_path / "data" / "chunk-2-7-0.npz", n=7, positions=20)
    status, err = run_in_process(f"train --config configs/train-9x9.toml --data {tmp_path / 'data'} "
                                 f"--out {tmp_path / 'run'} --workers 0 --no-progress", capsys)
    assert status == 2
    assert err.strip().splitlines()[-1].endswith(
        f"no training chunks (*.npz) of board size 9 under {tmp_path / 'data'} "
        "(left out chunks of other board sizes than 9: 2 of 7x7)"), err


def test_the_stop_line_says_to_delete_it(tmp_path, capsys):
    from sayuri_async.loop.driver import Loop

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "STOP").write_text("")
    assert Loop(str(ROOT / "configs" / "loop-7x7.toml"), str(ws)).run() == 0
    out = capsys.readouterr().out
    assert f"delete it to run the loop: rm {ws / 'STOP'}" in out
    assert not (ws / "data").exists() or not list((ws / "data").glob("*.npz"))


def test_train_readers_default_to_the_cores():
    import os

    from sayuri_async.train.config import DataConfig

    assert DataConfig().workers == max(1, min(4, os.cpu_count() or 1))


def test_tables_are_not_squeezed_when_piped(monkeypatch):
    from sayuri_async.console import PIPE_WIDTH, console

    monkeypatch.delenv("COLUMNS", raising=False)
    assert console().width == PIPE_WIDTH  # pytest's stdout is not a terminal


def test_a_notice_says_what_compiles_and_that_it_happens_once(monkeypatch, capsys):
    from sayuri_async import numba_cache

    monkeypatch.setattr(numba_cache, "uncompiled_modules", lambda: ["search.tree", "go.board"])
    assert numba_cache.compile_notice() is True
    err = capsys.readouterr().err
    assert err.startswith("compiling ") and "2 module(s)" in err and "search.tree, go.board" in err
    assert "what this command uses" in err and "once" in err
    monkeypatch.setattr(numba_cache, "uncompiled_modules", lambda: [])
    assert numba_cache.compile_notice() is False
    assert capsys.readouterr().err == ""
