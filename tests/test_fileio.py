"""The atomic writer: no replacing when asked not to, the umask's file modes,
and which temporaries count as stale."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from sayuri_async import fileio
from sayuri_async.fileio import NameTaken, atomic_path, clean_stale_temps, temp_name, write_bytes_atomic


def test_replace_false_keeps_an_existing_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "chunk.npz"
    write_bytes_atomic(path, b"first run")
    with pytest.raises(NameTaken, match="chunk.npz"):
        write_bytes_atomic(path, b"second run", replace=False)
    assert path.read_bytes() == b"first run"
    assert [p.name for p in tmp_path.iterdir()] == ["chunk.npz"]
    write_bytes_atomic(tmp_path / "new.npz", b"x", replace=False)
    assert (tmp_path / "new.npz").read_bytes() == b"x"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chunk.npz", "new.npz"]


def test_replace_false_without_hard_links_still_refuses_a_taken_name(tmp_path, monkeypatch):
    def no_links(*_):
        raise PermissionError("no hard links on this filesystem")

    monkeypatch.setattr(os, "link", no_links)
    path = tmp_path / "a.sgf"
    write_bytes_atomic(path, b"new", replace=False)
    assert path.read_bytes() == b"new"
    with pytest.raises(NameTaken):
        write_bytes_atomic(path, b"again", replace=False)
    assert path.read_bytes() == b"new" and [p.name for p in tmp_path.iterdir()] == ["a.sgf"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_files_follow_the_umask_like_open_does(tmp_path, umask):
    old = os.umask(umask)
    try:
        write_bytes_atomic(tmp_path / "w.safetensors", b"x")
        with open(tmp_path / "plain", "wb"):
            pass
    finally:
        os.umask(old)
    assert (tmp_path / "w.safetensors").stat().st_mode & 0o777 == 0o666 & ~umask
    assert (tmp_path / "w.safetensors").stat().st_mode & 0o777 == (tmp_path / "plain").stat().st_mode & 0o777


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.mark.slow
def test_only_stale_temporaries_of_our_names_are_cleaned(tmp_path):
    target = tmp_path / "ckpt-000000010.pt"
    live = temp_name(target)  # ours, this process is alive
    live.write_bytes(b"being written")
    dead = tmp_path / f".{target.name}.{_dead_pid()}-{fileio.HOST}-0123abcd.tmp"
    dead.write_bytes(b"a killed write")
    elsewhere = tmp_path / f".{target.name}.{_dead_pid()}-ffffffff-0123abcd.tmp"  # another host's
    elsewhere.write_bytes(b"maybe still being written")
    legacy = tmp_path / ".ckpt-000000002.pt.k2j4_x9q.tmp"  # tempfile.mkstemp's name (earlier versions)
    legacy.write_bytes(b"old")
    hours_ago = time.time() - 2 * fileio.STALE_AGE_S
    os.utime(legacy, (hours_ago, hours_ago))
    recent_legacy = tmp_path / ".ckpt-000000003.pt.abcdefgh.tmp"
    recent_legacy.write_bytes(b"maybe an older version at work")
    foreign = tmp_path / ".someone-elses.tmp"
    foreign.write_bytes(b"not ours")
    os.utime(foreign, (hours_ago, hours_ago))
    removed = clean_stale_temps(tmp_path)
    assert sorted(removed) == sorted([dead, legacy])
    assert live.exists() and elsewhere.exists() and recent_legacy.exists() and foreign.exists()
    os.utime(elsewhere, (hours_ago, hours_ago))
    assert clean_stale_temps(tmp_path) == [elsewhere]  # untouched for an hour: abandoned


@pytest.mark.slow
def test_a_killed_write_leaves_a_temporary_that_the_next_start_cleans(tmp_path):
    code = ("import os, signal, sys\n"
            "from sayuri_async.fileio import atomic_path\n"
            "with atomic_path(sys.argv[1]) as tmp:\n"
            "    tmp.write_bytes(b'half')\n"
            "    os.kill(os.getpid(), signal.SIGKILL)\n")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "weights.safetensors")])
    left = list(tmp_path.glob(".*.tmp"))
    assert len(left) == 1 and not (tmp_path / "weights.safetensors").exists()
    assert clean_stale_temps(tmp_path) == left
    assert not list(tmp_path.iterdir())


def test_run_stamps_hold_the_time_and_the_pid():
    stamp = fileio.run_stamp()
    assert stamp.endswith(f"-{os.getpid()}") and len(stamp.split("-")[0]) == len("20250131T235959Z")


def test_atomic_path_removes_its_temporary_when_the_write_fails(tmp_path):
    with pytest.raises(RuntimeError):
        with atomic_path(tmp_path / "x.json") as tmp:
            tmp.write_text("{")
            raise RuntimeError("serialising failed")
    assert not list(tmp_path.iterdir())


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_a_writer_that_makes_its_own_0600_file_still_gets_the_umask_mode(tmp_path):
    old = os.umask(0o022)
    try:
        with atomic_path(tmp_path / "net-s000000005.safetensors") as tmp:
            tmp.unlink()  # as safetensors' save_file does: a file of its own, mode 0600
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, b"weights")
            os.close(fd)
    finally:
        os.umask(old)
    assert (tmp_path / "net-s000000005.safetensors").stat().st_mode & 0o777 == 0o644


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_step_exports_are_readable_by_others_under_the_usual_umask(tmp_path):
    from sayuri_async.net.model import Net, NetConfig
    from sayuri_async.train.checkpoint import export_weights

    old = os.umask(0o022)
    try:
        path = export_weights(tmp_path, "net", 5, Net(NetConfig(blocks=1, channels=8)), {})
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "weights" / "net-latest.safetensors").stat().st_mode & 0o777 == 0o644


def _full_disk_after(monkeypatch, allowed: int) -> None:
    """os.write writes ``allowed`` bytes in all, then fails with ENOSPC."""
    real = os.write
    left = [allowed]

    def write(fd, data):
        if left[0] <= 0:
            raise OSError(28, "No space left on device")
        n = real(fd, bytes(data)[:left[0]])
        left[0] -= n
        return n

    monkeypatch.setattr(os, "write", write)


@pytest.mark.parametrize("allowed", [0, 1, 7])
def test_a_failed_append_leaves_the_file_as_it_was(tmp_path, monkeypatch, allowed):
    path = tmp_path / "train_log.csv"
    fileio.append_whole(path, b"step,loss\n1,2.5\n")
    _full_disk_after(monkeypatch, allowed)
    with pytest.raises(OSError, match="No space"):
        fileio.append_whole(path, b"2,2.25\n3,2.125\n")
    assert path.read_bytes() == b"step,loss\n1,2.5\n"
    monkeypatch.undo()
    fileio.append_whole(path, b"2,2.25\n")
    assert path.read_bytes() == b"step,loss\n1,2.5\n2,2.25\n"


def test_an_append_written_in_pieces_lands_whole(tmp_path, monkeypatch):
    real = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real(fd, bytes(data)[:3]))  # short writes, no error
    fileio.append_whole(tmp_path / "log.csv", b"step,loss\n1,2.5\n")
    assert (tmp_path / "log.csv").read_bytes() == b"step,loss\n1,2.5\n"
