import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from sgfmill import sgf

from sayuri_async.lifetime import child_pids, pid_running
from sayuri_async.selfplay.config import SelfplayConfig
from sayuri_async.selfplay.report import PlainReporter
from sayuri_async.selfplay.runner import run_inprocess
from sayuri_async.chunkfile import ChunkError, read_chunk
from sayuri_async.search.config import SearchConfig

ROOT = Path(__file__).resolve().parents[1]


def small_cfg(out: Path, **kw) -> SelfplayConfig:
    base = dict(board_sizes=[7], komi=7.5, num_games=4, parallel_games=4, batch_size=2, playouts=12,
                reduce_playouts=4, reduce_playouts_prob=0.5, chunk_games=2, out=str(out), seed=11,
                random_moves_factor=0.2, search=SearchConfig(edge_capacity=20_000))
    base.update(kw)
    return SelfplayConfig(**base)


def check_chunk(path: Path) -> tuple[dict, dict]:
    a = read_chunk(path)
    meta = a.pop("meta")
    n = meta["board_size"]
    m = a["action"].shape[0]
    assert m > 0
    assert meta["encoder"] == "simple-v1" and meta["planes"] == 25
    planes = np.unpackbits(a["planes"], axis=-1, count=n * n).reshape(m, 25, n, n)
    assert np.all(planes[:, 17] == 1)  # the ones plane survived packing
    # side-to-move plane agrees with to_move
    assert np.all(planes[:, 16, 0, 0] == (a["to_move"] == 1))
    full = a["full_search"]
    sums = a["policy"].astype(np.float32).sum(axis=1)
    assert np.allclose(sums[full], 1.0, atol=2e-3)
    assert np.all(sums[~full] == 0)
    # the played action was legal: its point is empty in the current planes
    for i in range(m):
        act = int(a["action"][i])
        if act < n * n:
            y, x = divmod(act, n)
            assert planes[i, 0, y, x] == 0 and planes[i, 1, y, x] == 0
    # wdl one-hot and consistent with the score's sign, per side to move
    assert np.all(a["wdl"].sum(axis=1) == 1)
    assert np.all((a["score"] > 0) == (a["wdl"][:, 0] == 1))
    # consecutive positions of one game alternate colours and link actions
    same = a["game"][1:] == a["game"][:-1]
    assert np.all(a["to_move"][1:][same] != a["to_move"][:-1][same])
    assert np.all(a["next_action"][:-1][same] == a["action"][1:][same])
    return meta, a


@pytest.mark.slow
def test_selfplay_writes_chunks_and_sgf_that_load_back(tmp_path):
    cfg = small_cfg(tmp_path)
    final = run_inprocess(cfg, PlainReporter(every=1e9, stream=open(os.devnull, "w")))
    assert final[0].finished == 4
    chunks = sorted((tmp_path / "data").glob("chunk-*.npz"))
    assert len(chunks) == 2
    total = 0
    for c in chunks:
        meta, a = check_chunk(c)
        assert meta["games"] == 2
        total += a["action"].shape[0]
    sgfs = sorted((tmp_path / "sgf").glob("*.sgf"))
    assert len(sgfs) == 4
    moves = 0
    for f in sgfs:
        g = sgf.Sgf_game.from_bytes(f.read_bytes())
        assert g.get_size() == 7
        assert g.get_root().get("RE")
        moves += len(g.get_main_sequence()) - 1
    assert moves == total  # every move of every game is a position
    assert not list(tmp_path.rglob(".*.tmp"))


@pytest.mark.slow
def test_ownership_and_score_follow_the_final_board(tmp_path):
    cfg = small_cfg(tmp_path, num_games=2, chunk_games=2, reduce_playouts_prob=0.0)
    run_inprocess(cfg, PlainReporter(every=1e9, stream=open(os.devnull, "w")))
    (chunk,) = sorted((tmp_path / "data").glob("chunk-*.npz"))
    _, a = check_chunk(chunk)
    for gi in np.unique(a["game"]):
        rows = np.flatnonzero(a["game"] == gi)
        last = rows[-1]
        own = a["ownership"][last].astype(int)
        # area count from the ownership map of the side to move, minus komi
        sign = 1 if a["to_move"][last] == 1 else -1
        black_area = (own * sign).sum()
        assert a["score"][last] == pytest.approx(sign * (black_area - 7.5))


@pytest.mark.slow
def test_read_chunk_rejects_damage(tmp_path):
    cfg = small_cfg(tmp_path, num_games=2, chunk_games=2)
    run_inprocess(cfg, PlainReporter(every=1e9, stream=open(os.devnull, "w")))
    (chunk,) = sorted((tmp_path / "data").glob("chunk-*.npz"))
    bad = tmp_path / "bad.npz"
    bad.write_bytes(chunk.read_bytes()[: len(chunk.read_bytes()) // 2])
    with pytest.raises(ChunkError, match="bad.npz"):
        read_chunk(bad)
    with np.load(chunk) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["policy"] = arrays["policy"][:, :-1]
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, **arrays)
    with pytest.raises(ChunkError, match="policy"):
        read_chunk(wrong)
    arrays = dict(arrays)
    meta = json.loads(str(arrays["meta"]))
    meta["version"] = 99
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez(wrong, **arrays)
    with pytest.raises(ChunkError, match="version"):
        read_chunk(wrong)


def _start(tmp_path: Path) -> subprocess.Popen:
    cfg = tmp_path / "sp.toml"
    cfg.write_text(
        "[selfplay]\nboard_sizes=[7]\nnum_games=0\nparallel_games=8\nbatch_size=4\nplayouts=8\n"
        f"chunk_games=1\nout='{tmp_path / 'out'}'\n"
    )
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, "-m", "sayuri_async.cli", "selfplay", "--config", str(cfg), "--no-tui"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
    )


_children = child_pids  # the names the lifetime tests import
_alive = pid_running


def _wait_for_chunks(tmp_path: Path, k: int, proc: subprocess.Popen, limit: float = 120) -> None:
    t0 = time.time()
    while len(list((tmp_path / "out" / "data").glob("chunk-*.npz"))) < k:
        assert proc.poll() is None, proc.stderr.read()
        assert time.time() - t0 < limit
        time.sleep(0.1)


@pytest.mark.slow
def test_sigint_stops_cleanly_and_leaves_whole_files(tmp_path):
    proc = _start(tmp_path)
    _wait_for_chunks(tmp_path, 2, proc)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGINT, err  # a clean stop on a signal: 128 + its number
    assert "stopped by SIGINT" in err and "Traceback" not in err
    assert "games" in out  # the summary
    files = list((tmp_path / "out").rglob("*"))
    assert not [f for f in files if f.name.endswith(".tmp")]
    for c in (tmp_path / "out" / "data").glob("*.npz"):
        check_chunk(c)


@pytest.mark.slow
def test_sigkill_leaves_no_partial_chunk(tmp_path):
    proc = _start(tmp_path)
    _wait_for_chunks(tmp_path, 3, proc)
    children = _children(proc.pid)  # the writer process (and multiprocessing's helpers)
    proc.kill()
    proc.wait(timeout=30)
    t0 = time.time()
    while any(_alive(c) for c in children) and time.time() - t0 < 20:
        time.sleep(0.2)
    assert not [c for c in children if _alive(c)], "an orphaned writer outlived the engine"
    for c in (tmp_path / "out" / "data").glob("*.npz"):
        check_chunk(c)  # every visible chunk is whole
    # a restart removes whatever temporary file the kill left behind
    before = len(list((tmp_path / "out" / "data").glob("chunk-*.npz")))
    proc = _start(tmp_path)
    _wait_for_chunks(tmp_path, before + 1, proc)  # the restarted run is under way
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert not list((tmp_path / "out").rglob(".*.tmp"))


@pytest.mark.slow
def test_the_random_network_answers_on_the_loop_and_a_real_one_in_the_worker(tmp_path):
    import asyncio
    import threading

    from sayuri_async.net.backends import RandomBackend
    from sayuri_async.selfplay.engine import Engine

    class Recording(RandomBackend):  # the threads its batches ran in
        def __init__(self) -> None:
            super().__init__(seed=1)
            self.threads: set = set()

        def run(self, batch):
            self.threads.add(threading.current_thread())
            return super().run(batch)

    class Slow(Recording):  # stands for a network: not cheap
        cheap = False

    for backend, cfg_inline, want in [(Recording(), True, True), (Recording(), False, False),
                                      (Slow(), True, False)]:
        cfg = small_cfg(tmp_path / f"o{len(backend.threads)}{cfg_inline}{backend.cheap}", num_games=1,
                        inline_cheap_backend=cfg_inline, write_sgf=False)
        eng = Engine(cfg, backend)
        assert all(bt.inline is want for bt in eng.batchers.values())
        asyncio.run(eng.run())
        eng.close()
        on_loop = backend.threads == {threading.main_thread()}
        assert backend.threads and on_loop is want, (cfg_inline, backend.cheap, backend.threads)


def _records(count: int) -> list:
    """Finished 7x7 games from the random network, as the engine hands them over."""
    import asyncio

    from sayuri_async.infer.batcher import Batcher
    from sayuri_async.net.backends import RandomBackend
    from sayuri_async.search.mcts import Search
    from sayuri_async.selfplay.game import play_game

    cfg = small_cfg(Path("."), reduce_playouts_prob=0.0)
    be = RandomBackend(seed=3)

    async def games():
        bt = Batcher(be, 7, 4, inline=True)
        bt.attach()
        s = Search(cfg.search_config(), be.encoder, rng=np.random.default_rng(5))
        return [await play_game(cfg, s, bt, np.random.default_rng(i), 7, be.encoder) for i in range(count)]

    return asyncio.run(games())


@pytest.mark.slow
def test_the_writer_process_writes_what_the_writer_on_the_loop_writes(tmp_path):
    from sayuri_async.selfplay.writer import ChunkWriter
    from sayuri_async.selfplay.writer_proc import WriterProcess

    recs = _records(5)
    args = ("simple-v1", 25, 2, "t", "random")
    here = ChunkWriter(tmp_path / "here", *args)
    there = WriterProcess(str(tmp_path / "there"), *args)
    for r in recs:
        here.add(r)
        there.add(r)
    here.close()
    there.close()
    assert (there.chunks_written, there.positions_written) == (here.chunks_written, here.positions_written) == (
        3, sum(len(r) for r in recs))
    assert there.games_written == here.games_written == 5
    names = sorted(p.name for p in (tmp_path / "here" / "data").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "there" / "data").iterdir())
    for name in names:
        a1, a2 = read_chunk(tmp_path / "here" / "data" / name), read_chunk(tmp_path / "there" / "data" / name)
        m1, m2 = a1.pop("meta"), a2.pop("meta")
        assert m1 == m2 and a1.keys() == a2.keys()
        for k in a1:
            np.testing.assert_array_equal(a1[k], a2[k])
    for sgf_file in (tmp_path / "here" / "sgf").iterdir():
        assert sgf_file.read_text() == (tmp_path / "there" / "sgf" / sgf_file.name).read_text()


@pytest.mark.slow
def test_a_failing_writer_process_stops_the_run_with_the_folder_and_the_error(tmp_path):
    from sayuri_async.selfplay.writer_proc import WriterError, WriterProcess

    recs = _records(2)
    w = WriterProcess(str(tmp_path / "out"), "simple-v1", 25, 1, "t", "random", write_sgf=False)
    data = tmp_path / "out" / "data"
    data.rmdir()
    data.write_text("not a folder")  # every chunk write now fails
    with pytest.raises(WriterError, match=r"out: writing training data failed: .*data"):
        for r in recs:
            w.add(r)
        w.close()
    w.close()  # a second close does not hang


def test_a_bad_output_folder_fails_at_once_in_the_engine_process(tmp_path):
    from sayuri_async.selfplay.writer_proc import WriterProcess

    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(OSError):
        WriterProcess(str(blocker / "out"), "simple-v1", 25, 1, "t", "random")
