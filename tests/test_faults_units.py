"""The pieces of the fault-injection suite: kill requests (``killpoint``),
the file checks (``validate.check_file``, ``check_run``) and the overwrite
check (``validate.overwritten``)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sayuri_async import fileio
from sayuri_async.killpoint import ENV
from sayuri_async.validate import check_file, check_run, file_digests, overwritten
from test_selfplay import _records

ROOT = Path(__file__).resolve().parents[1]
REACH = ("from sayuri_async.killpoint import kill_point\n"
         "for name in ['a', 'rename:x.npz', 'rename:ckpt-1.pt', 'rename:ckpt-2.pt', 'b']:\n"
         "    kill_point(name); print(name, flush=True)\n")


def _reached(request: str | None) -> tuple[int, list[str]]:
    env = dict(os.environ)
    env.pop(ENV, None)
    if request is not None:
        env[ENV] = request
    r = subprocess.run([sys.executable, "-c", REACH], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=60)
    return r.returncode, r.stdout.split("\n")[:-1]


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="SIGKILL")
def test_a_kill_request_names_a_point_a_pattern_and_which_time():
    assert _reached(None) == (0, ["a", "rename:x.npz", "rename:ckpt-1.pt", "rename:ckpt-2.pt", "b"])
    assert _reached("b") == (-signal.SIGKILL, ["a", "rename:x.npz", "rename:ckpt-1.pt", "rename:ckpt-2.pt"])
    assert _reached("rename:ckpt-*") == (-signal.SIGKILL, ["a", "rename:x.npz"])
    assert _reached("rename:ckpt-*@2") == (-signal.SIGKILL, ["a", "rename:x.npz", "rename:ckpt-1.pt"])
    assert _reached("nowhere, rename:*.npz") == (-signal.SIGKILL, ["a"])
    assert _reached("rename:*@9")[0] == 0  # reached three times only


def test_the_file_check_passes_whole_files_and_names_what_is_wrong_with_others(tmp_path):
    from sayuri_async.selfplay.writer import write_records

    good = tmp_path / "chunk-good.npz"
    write_records(good, _records(1), "simple-v1", 25, "test")
    assert check_file(good) is None
    cut = tmp_path / "chunk-cut.npz"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    assert "chunk-cut.npz" in check_file(cut)
    (tmp_path / "game.sgf").write_text("(;FF[4]GM[1]SZ[7];B[aa];W[bb])")
    assert check_file(tmp_path / "game.sgf") is None
    (tmp_path / "bad.sgf").write_text("(;FF[4]SZ[7];B[aa")
    assert check_file(tmp_path / "bad.sgf") is not None
    (tmp_path / "ckpt-000000002.pt").write_bytes(b"not a checkpoint")
    assert check_file(tmp_path / "ckpt-000000002.pt") is not None
    (tmp_path / "ckpt-000000004.pt.unreadable").write_bytes(b"set aside")
    assert check_file(tmp_path / "ckpt-000000004.pt.unreadable") is None
    (tmp_path / "net-s000000002.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}")
    assert check_file(tmp_path / "net-s000000002.safetensors") is not None
    (tmp_path / "state.json").write_text('{"generation": 2')
    assert "JSON" in check_file(tmp_path / "state.json")
    (tmp_path / "train_log.csv").write_text("step,loss\n1,0.5\n2,0.4,9\n")
    assert "row 3" in check_file(tmp_path / "train_log.csv")
    whole_png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 20 + b"\x00\x00\x00\x00IEND\xaeB`\x82"
    (tmp_path / "curves.png").write_bytes(whole_png[:-12])
    assert "PNG" in check_file(tmp_path / "curves.png")
    (tmp_path / "curves.png").write_bytes(whole_png)
    assert check_file(tmp_path / "curves.png") is None
    (tmp_path / "notes.bin").write_bytes(b"?")
    assert "no known kind" in check_file(tmp_path / "notes.bin")
    bad, checked = check_run(tmp_path)
    assert checked == 11 and {p.name for p, _ in bad} == {"chunk-cut.npz", "bad.sgf", "ckpt-000000002.pt",
                                                           "net-s000000002.safetensors", "state.json",
                                                           "train_log.csv", "notes.bin"}


@pytest.mark.slow
def test_a_temporary_passes_only_once_its_writer_is_gone(tmp_path):
    with fileio.atomic_path(tmp_path / "chunk-x.npz") as tmp:  # this process writes it: still running
        tmp.write_bytes(b"half")
        assert "still running" in check_file(tmp)
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    dead = tmp_path / f".chunk-y.npz.{p.pid}-{fileio.HOST}-0000abcd.tmp"
    dead.write_bytes(b"half")
    assert check_file(dead) is None


def test_files_changed_or_gone_are_named_unless_rewritten_or_rotated_by_design(tmp_path):
    for name in ("a.sgf", "state.json", "ckpt-000000002.pt", "b.npz", "net-latest.safetensors"):
        (tmp_path / name).write_text(name)
    before = file_digests(tmp_path)
    assert overwritten(before, file_digests(tmp_path)) == []
    for name in ("a.sgf", "state.json", "net-latest.safetensors"):
        (tmp_path / name).write_text("new")
    for name in ("ckpt-000000002.pt", "b.npz"):
        (tmp_path / name).unlink()
    (tmp_path / ".c.npz.1-00000000-00000000.tmp").write_text("half")
    assert overwritten(before, file_digests(tmp_path)) == [f"{tmp_path / 'a.sgf'}: changed",
                                                           f"{tmp_path / 'b.npz'}: gone"]
