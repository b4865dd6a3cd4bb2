"""Self-play processes end with their parent, report failures in their exit
status, and never overwrite the files of an earlier run."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sayuri_async.lifetime import descendant_pids
from sayuri_async.selfplay.config import SelfplayConfig
from sayuri_async.selfplay.runner import run_selfplay
from sayuri_async.selfplay.writer import ChunkWriter
from sayuri_async.search.config import SearchConfig
from test_selfplay import _alive, _records, check_chunk

ROOT = Path(__file__).resolve().parents[1]
linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")


class Quiet:
    def update(self, statuses):
        return []

    def close(self, statuses):
        pass


_descendants = descendant_pids


def _start(tmp_path: Path, procs: int = 2, num_games: int = 0) -> subprocess.Popen:
    cfg = tmp_path / "sp.toml"
    cfg.write_text(
        f"[selfplay]\nboard_sizes=[7]\nnum_games={num_games}\nparallel_games=4\nbatch_size=4\nplayouts=8\n"
        f"chunk_games=1\nprocs={procs}\nout='{tmp_path / 'out'}'\n"
    )
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, "-m", "sayuri_async.cli", "selfplay", "--config", str(cfg), "--no-tui"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
    )


def _chunks(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "out" / "data").glob("chunk-*.npz"))


def _wait_for_both_engines(tmp_path: Path, proc: subprocess.Popen, limit: float = 120) -> None:
    """Until each engine process has written a chunk (so both writers run)."""
    t0 = time.time()
    while not all(any(f"-{t}-" in c.name for c in _chunks(tmp_path)) for t in ("p0", "p1")):
        assert proc.poll() is None, proc.communicate()[1]
        assert time.time() - t0 < limit
        time.sleep(0.1)


@pytest.mark.slow
@linux_only
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_engines_writers_and_helpers_end_with_the_main_process(tmp_path, sig):
    proc = _start(tmp_path)
    _wait_for_both_engines(tmp_path, proc)
    family = _descendants(proc.pid)  # 2 engines, their 2 writers, multiprocessing's resource tracker
    assert len(family) >= 5, family
    proc.send_signal(sig)
    proc.communicate(timeout=90)
    if sig == signal.SIGTERM:
        assert proc.returncode == 143  # a clean stop, 128 + SIGTERM
    t0 = time.time()
    while any(_alive(p) for p in family) and time.time() - t0 < 30:
        time.sleep(0.2)
    assert not [p for p in family if _alive(p)], "a child outlived the main process"
    written = _chunks(tmp_path)
    time.sleep(1.5)
    assert _chunks(tmp_path) == written  # nobody is writing any more
    for c in written:
        check_chunk(c)
    assert not list((tmp_path / "out").rglob(".*.tmp"))  # the engines stopped cleanly


@pytest.mark.slow
def test_engines_that_fail_during_the_run_exit_1_with_one_line(tmp_path):
    proc = _start(tmp_path)
    _wait_for_both_engines(tmp_path, proc)
    data = tmp_path / "out" / "data"
    data.rename(tmp_path / "out" / "data-full")
    data.write_text("the disk is full")  # every later chunk write fails
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("sayuri-async selfplay: engine process")
    assert "selfplay-p0" in lines[0] and "selfplay-p1" in lines[0] and str(data) in lines[0]


@pytest.mark.slow
def test_a_failing_run_in_one_process_exits_1_with_one_line(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "data").write_text("not a folder")
    cfg = tmp_path / "sp.toml"
    cfg.write_text(f"[selfplay]\nboard_sizes=[7]\nnum_games=1\nparallel_games=1\nbatch_size=1\nplayouts=4\n"
                   f"out='{tmp_path / 'out'}'\nwriter_process=false\n")
    out = subprocess.run([sys.executable, "-m", "sayuri_async.cli", "selfplay", "--config", str(cfg), "--no-tui"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "data" in lines[0] and lines[0].startswith("sayuri-async selfplay:"), out.stderr


def _cfg(out: Path, **kw) -> SelfplayConfig:
    base = dict(board_sizes=[7], num_games=2, parallel_games=2, batch_size=2, playouts=6, chunk_games=1,
                out=str(out), seed=5, search=SearchConfig(edge_capacity=20_000))
    base.update(kw)
    return SelfplayConfig(**base)


@pytest.mark.slow
@pytest.mark.parametrize("procs", [1, 2])
def test_a_second_run_into_the_same_folder_keeps_the_first_runs_files(tmp_path, procs):
    out = tmp_path / "out"
    run_selfplay(_cfg(out, procs=procs), Quiet())
    first = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert len([p for p in first if p.suffix == ".npz"]) == 2 and len([p for p in first if p.suffix == ".sgf"]) == 2
    run_selfplay(_cfg(out, procs=procs), Quiet())
    assert all(p.read_bytes() == data for p, data in first.items())  # not one replaced
    assert len(list(out.glob("data/*.npz"))) == 4 and len(list(out.glob("sgf/*.sgf"))) == 4


def test_a_writer_never_replaces_a_file_of_the_same_name(tmp_path):
    recs = _records(3)
    args = ("simple-v1", 25, 1, "same-tag", "random")
    old = ChunkWriter(tmp_path, *args)
    for r in recs[:2]:
        old.add(r)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    new = ChunkWriter(tmp_path, *args)  # the same names again: a repeated tag
    new.add(recs[2])
    new.close()
    assert all(p.read_bytes() == data for p, data in before.items())
    names = sorted(p.name for p in (tmp_path / "data").iterdir())
    assert names == [f"chunk-000000-same-tag-00000{i}.npz" for i in (1, 2, 3)]
    assert len(list((tmp_path / "sgf").iterdir())) == 3
