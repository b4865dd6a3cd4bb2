"""Two ranks on the CPU with the gloo backend: the weights stay identical on both
ranks, the loss is finite, and each rank reads its own data.

The ranks are spawned processes given torchrun's environment variables
(``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``), so
the trainer takes exactly the path it takes under torchrun; a second test goes
through ``sayuri-async train --nproc 2`` and torchrun itself. (Not forked: a
fork of the test process, which has threads, can hang on a lock one of them
held at the fork.)
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

from test_train_chunks import make_chunk

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_main(rank: int, world: int, port: int, data: str, out: str) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    from sayuri_async.train.config import from_dict
    from sayuri_async.train.trainer import Trainer
    import torch.distributed as dist

    cfg = from_dict({
        "data": {"dir": data, "board_size": 7, "workers": 0, "shuffle_buffer": 64},
        "model": {"blocks": 2, "channels": 16, "policy_channels": 8, "value_channels": 8, "value_hidden": 16},
        "optim": {"batch_size": 32},
        "schedule": {"reference_batch": 32, "warmup": 0, "boundaries": [1000], "rates": [0.02, 0.01]},
        "run": {"out": out, "log_every": 2, "checkpoint_every": 100, "export_every": 100, "progress": "off",
                "device": "cpu", "backend": "gloo"},
    }, "ddp-test")
    trainer = Trainer(cfg, steps=6, say=lambda _: None)
    seen: list[list[list[int]]] = []
    original = trainer._train_step

    def spy(batch):  # fingerprint the rows: per-plane stone counts survive the symmetries
        seen.append(batch["planes"].sum(dim=(2, 3)).tolist())
        return original(batch)

    trainer._train_step = spy
    result = trainer.run()
    torch.save({k: v.clone() for k, v in trainer.net.state_dict().items()}, Path(out) / f"rank{rank}.pt")
    (Path(out) / f"rank{rank}.json").write_text(json.dumps({
        "loss": result.losses["loss"], "shards": sorted(trainer.positions), "batches": len(seen),
        "rows": [row for batch in seen for row in batch]}))
    dist.destroy_process_group()


@pytest.mark.slow
def test_two_gloo_ranks_keep_identical_weights(tmp_path):
    data = tmp_path / "data"
    for i in range(4):
        make_chunk(data / f"chunk-{i}-1-0.npz", n=7, positions=64, seed=i)
    out = tmp_path / "out"
    out.mkdir()
    mp.start_processes(_rank_main, args=(2, _free_port(), str(data), str(out)), nprocs=2, join=True,
                       start_method="spawn")
    w0 = torch.load(out / "rank0.pt", weights_only=True)
    w1 = torch.load(out / "rank1.pt", weights_only=True)
    params = [k for k in w0 if w0[k].is_floating_point() and "running" not in k]
    assert all(torch.equal(w0[k], w1[k]) for k in params)
    r0 = json.loads((out / "rank0.json").read_text())
    r1 = json.loads((out / "rank1.json").read_text())
    assert r0["batches"] == r1["batches"] == 6
    assert r0["shards"] == [0] and r1["shards"] == [1]  # one reader per rank here
    # 6 steps x 16 rows per rank stay inside the first pass over each rank's 2 files: no row in common
    rows0, rows1 = {tuple(r) for r in r0["rows"]}, {tuple(r) for r in r1["rows"]}
    assert len(rows0) > 60 and len(rows1) > 60 and not rows0 & rows1
    assert torch.isfinite(torch.tensor([r0["loss"], r1["loss"]])).all()
    # training happened: the weights moved away from the seeded initialisation
    from sayuri_async.net.model import Net, NetConfig, init_weights

    start = init_weights(Net(NetConfig(blocks=2, channels=16, policy_channels=8, value_channels=8,
                                       value_hidden=16)), seed=1).state_dict()
    assert any(not torch.equal(start[k], w0[k]) for k in params)


@pytest.mark.slow
def test_cli_nproc_two_runs_under_torchrun(tmp_path):
    data = tmp_path / "data"
    for i in range(4):
        make_chunk(data / f"chunk-{i}-1-0.npz", n=7, positions=64, seed=i)
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"""
[data]
dir = "{data}"
board_size = 7
workers = 1
shuffle_buffer = 64
[model]
blocks = 1
channels = 8
[optim]
batch_size = 16
[run]
out = "{tmp_path / 'out'}"
device = "cpu"
log_every = 2
checkpoint_every = 4
progress = "off"
""")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "sayuri_async.cli", "train", "--config", str(cfg),
                           "--steps", "4", "--nproc", "2"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    state = torch.load(tmp_path / "out" / "checkpoints" / "ckpt-000000004.pt", weights_only=True)
    assert len(state["ranks"]) == 2 and state["data"]["world"] == 2
    shards = [set(r["positions"]) for r in state["ranks"]]
    assert shards[0] == {0} and shards[1] == {1}
    log = (tmp_path / "out" / "train_log.csv").read_text().splitlines()
    assert len(log) == 3 and "nan" not in log[-1]


def test_the_trainer_is_gone_before_the_process_group_is(monkeypatch):
    """DistributedDataParallel holds the process group: a trainer still alive in
    a reference cycle when the group is destroyed keeps gloo's threads to
    interpreter exit, where one can abort the rank ("terminate called without
    an active exception")."""
    import weakref

    from sayuri_async.train import trainer as trainer_mod

    joined = {"now": False}
    alive_at_destroy: list[bool] = []
    made: list[weakref.ref] = []

    class CyclicTrainer:
        def __init__(self, *args, **kwargs):
            self.me = self  # a cycle: only the garbage collector frees it
            made.append(weakref.ref(self))

        def run(self):
            joined["now"] = True  # the trainer joins the group itself, as under torchrun
            return "result"

    monkeypatch.setattr(trainer_mod, "Trainer", CyclicTrainer)
    monkeypatch.setattr(trainer_mod.dist, "is_initialized", lambda: joined["now"])
    monkeypatch.setattr(trainer_mod.dist, "barrier", lambda: None)

    def destroy():
        alive_at_destroy.append(made[0]() is not None)
        joined["now"] = False

    monkeypatch.setattr(trainer_mod.dist, "destroy_process_group", destroy)
    assert trainer_mod.train(None) == "result"
    assert alive_at_destroy == [False]
