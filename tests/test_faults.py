"""The standing fault-injection suite: SIGKILL at scripted points
(``killpoint``) of self-play (``--procs`` 1 and 2: a writer between a chunk's
temporary and its rename, an engine between games, the parent of engine
processes), training (inside a checkpoint write, between the checkpoint and
the export, inside the export) and each phase of the RL loop (self-play,
training, evaluation, promotion, the state save). After every kill: no
process of the run survives, every file validates (``validate.check_run``),
nothing that existed before is changed or gone; the next run (a restart)
continues, and the last one finishes and leaves no temporary behind
(``faults_kit.run_chain``). The randomised long form is tools/kill_runs.py."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from faults_kit import Step, cli, run_chain
from test_loop import TINY

linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
pytestmark = [linux_only]

FAILED = 1  # a run whose engine or writer was killed ends with a failure


def selfplay_config(folder: Path, out: Path, procs: int, games: int, writer_process: bool = True) -> Path:
    cfg = folder / f"sp-{procs}-{games}-{int(writer_process)}.toml"
    cfg.write_text(f"[selfplay]\nboard_sizes = [7]\nnum_games = {games}\nparallel_games = 2\nbatch_size = 2\n"
                   f"playouts = 4\nchunk_games = 1\nprocs = {procs}\nout = '{out}'\n"
                   f"writer_process = {str(writer_process).lower()}\n")
    return cfg


def chunks(folder: Path) -> list[Path]:
    return sorted((folder / "data").glob("chunk-*.npz"))


@pytest.fixture(scope="module")
def games(tmp_path_factory) -> Path:
    """A folder with a normal run's self-play (3 games), for the chains to start over."""
    folder = tmp_path_factory.mktemp("games") / "out"
    cfg = selfplay_config(folder.parent, folder, 1, 3)
    run_chain(folder, lambda i: cli("selfplay", "--config", str(cfg), "--no-tui"), [Step(None)])
    assert len(chunks(folder)) == 3
    return folder


@pytest.mark.slow
def test_self_play_in_one_process_survives_kills_of_its_writer_and_its_engine(tmp_path, games):
    out = tmp_path / "out"
    shutil.copytree(games, out)
    separate = selfplay_config(tmp_path, out, 1, 2)
    inline = selfplay_config(tmp_path, out, 1, 2, writer_process=False)
    steps = [
        (separate, Step("rename:chunk-*@1", exits=(FAILED,), min_processes=1)),  # the writer process
        (separate, Step("selfplay-game@1", min_processes=1)),  # the engine, its writer left running
        (inline, Step("rename:chunk-*@1")),  # the engine writing chunks itself
        (separate, Step(None)),
    ]
    run_chain(out, lambda i: cli("selfplay", "--config", str(steps[i][0]), "--no-tui"), [s for _, s in steps])
    assert len(chunks(out)) >= 3 + 2


@pytest.mark.slow
def test_self_play_in_two_processes_survives_kills_of_its_parent_and_its_writers(tmp_path, games):
    out = tmp_path / "out"
    shutil.copytree(games, out)
    endless, two = selfplay_config(tmp_path, out, 2, 0), selfplay_config(tmp_path, out, 2, 2)
    steps = [  # endless runs: an engine that outlived its parent would play on
        (endless, Step("selfplay-status@3", min_processes=5)),  # the parent: engines, writers, resource tracker
        (endless, Step("rename:chunk-*@1", exits=(FAILED,), min_processes=5)),  # both writers
        (two, Step(None)),
    ]
    run_chain(out, lambda i: cli("selfplay", "--config", str(steps[i][0]), "--no-tui"), [s for _, s in steps])
    stamps = {c.name.rsplit("-p", 1)[0] for c in chunks(out)}
    assert len(stamps) >= 2, stamps  # each run wrote under its own names


def train_config(folder: Path, data: Path) -> Path:
    cfg = folder / "train.toml"
    cfg.write_text(f'[data]\ndir = "{data}"\nboard_size = 7\nworkers = 0\n'
                   "window_min_positions = 20\nshuffle_buffer = 50\n[model]\nblocks = 1\nchannels = 8\n"
                   '[optim]\nbatch_size = 8\n[run]\ndevice = "cpu"\nlog_every = 1\ncheckpoint_every = 2\n'
                   "export_every = 2\nkeep_checkpoints = 2\n")
    return cfg


@pytest.mark.slow
def test_training_survives_kills_inside_a_checkpoint_between_it_and_the_export_and_inside_the_export(
        tmp_path, games):
    out = tmp_path / "run"
    cfg = train_config(tmp_path, games / "data")
    base = cli("train", "--config", str(cfg), "--out", str(out), "--steps", "8", "--no-progress")
    one_reader = ["--workers", "1"]  # a data reader process, which must end with the trainer
    steps = [
        Step("rename:ckpt-*@2", min_processes=1),  # the data reader process must end too
        Step("train-checkpointed@1"),
        Step("rename:net-s*.safetensors@1"),
        Step(None),
    ]
    run_chain(out, lambda i: base + (["--auto-resume"] if i else one_reader), steps)
    exports = sorted(p.name for p in (out / "weights").glob("*-s*.safetensors"))
    assert exports[-1].endswith("-s000000008.safetensors"), exports
    rows = (out / "train_log.csv").read_text().splitlines()
    assert [int(r.split(",")[0]) for r in rows[1:]] == list(range(1, 9))  # one uninterrupted log


@pytest.mark.slow
def test_the_loop_survives_a_kill_in_every_phase(tmp_path):
    ws = tmp_path / "ws"
    cfg = tmp_path / "loop.toml"
    cfg.write_text(TINY.format(generations=1))
    steps = [
        Step("selfplay-game@1", min_processes=1),  # self-play, its writer process left running
        Step("rename:state.json@1"),  # self-play done, the state save
        Step("rename:ckpt-*@1"),  # training, inside a checkpoint
        Step("rename:*-vs-*.sgf@1"),  # the evaluation
        Step("loop-evaluated@1"),  # the promotion
        Step(None),
    ]
    run_chain(ws, lambda i: cli("loop", "--config", str(cfg), "--workspace", str(ws)), steps)
    st = json.loads((ws / "state.json").read_text())
    assert (st["generation"], st["phase"], st["best_generation"]) == (2, "selfplay", 1)
    assert st["summaries"][0]["games"] == 2 and st["summaries"][0]["steps"] == 4
    # the first evaluation was killed before its first game was whole (its empty folder is reused); the
    # second was killed after its games were whole, and its tally, saved in the state, is not played again
    assert len(list((ws / "matches").iterdir())) == 1
    m = st["summaries"][0]["match"]
    assert m["wins"] + m["losses"] + m["draws"] == 2 and m["decision"] == "promote"
