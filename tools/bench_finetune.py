"""Fine-tuning speed of Sayuri networks: ``train --init`` on a Sayuri weights file.

    python tools/bench_finetune.py [--nets 6b96c,20b256c] [--board 19] [--batch 16]
                                   [--steps 6b96c=30,20b256c=8] [--device cpu]

Vocabulary:
  net       a random Sayuri weights file (version 5, residual blocks, SE on
            every third block with a squeeze of channels/4, policy and value
            heads of 32 channels, relu) written by our writer, then given to
            the trainer as ``--init``: the whole path of a user's fine-tuning
            (import, norms calibrated on the first batch, every Sayuri head's
            loss, EMA, checkpoint and export at the end).
  data      synthetic record-version-2 records (``tools/gen_sayuri_data.py``)
            converted by ``import-data``: the chunks carry the soft auxiliary
            policy and the Q and score averages, so every loss is live.
  steps/s   optimizer steps per second between the first and the last log
            row (every 2 steps), so start-up and the final checkpoint and
            export are left out; samples/s = steps/s x batch.
  load      the machine's 1-minute load average before and after each run
            (others share these cores).

Prints readable lines, then one JSON line (the last line) with the figures.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from sayuri_async.sayuri.data import convert  # noqa: E402
from sayuri_async.sayuri.model import BlockSpec, SayuriConfig  # noqa: E402
from sayuri_async.sayuri.weights import layers_for, write_sayuri  # noqa: E402
from sayuri_async.train.config import from_dict  # noqa: E402
from sayuri_async.train.trainer import train  # noqa: E402

DEFAULT_STEPS = {"6b96c": 30, "20b256c": 8}


def sayuri_config(name: str) -> SayuriConfig:
    blocks, channels = (int(v) for v in name.rstrip("c").split("b"))
    specs = [BlockSpec("residual", 0, channels // 4 if i % 3 == 2 else 0) for i in range(blocks)]
    return SayuriConfig(version=5, channels=channels, blocks=specs, policy_channels=32, value_channels=32)


def make_data(folder: Path, board: int, records: int) -> None:
    spec = importlib.util.spec_from_file_location("gen_sayuri_data", HERE / "gen_sayuri_data.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    gen.generate(folder / "raw", records, board, records, 100, 1, 1)
    convert(sorted(str(p) for p in (folder / "raw").glob("*.gz")), folder / "chunks")


def run_one(name: str, work: Path, board: int, batch: int, steps: int, device: str) -> dict:
    cfg = sayuri_config(name)
    net_path = work / f"{name}.txt"
    write_sayuri(net_path, cfg, layers_for(cfg, np.random.default_rng(1)), binary=True)
    out = work / f"run-{name}"
    tc = from_dict({
        "data": {"dir": str(work / "data" / "chunks"), "board_size": board, "workers": 0,
                 "shuffle_buffer": 256, "window_min_positions": 100_000},
        "optim": {"batch_size": batch},
        "schedule": {"reference_batch": 128, "warmup": 0, "boundaries": [512_000], "rates": [0.005, 0.0025],
                     "total": 1_000_000},
        "run": {"out": str(out), "log_every": 2, "checkpoint_every": 1_000_000, "export_every": 1_000_000,
                "progress": "off", "device": device},
    }, "bench_finetune")
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    result = train(tc, steps=steps, init=str(net_path), say=lambda _: None)
    wall = time.perf_counter() - t0
    load1 = os.getloadavg()[0]
    steps_per_s = result.samples_per_s / batch
    return {"net": name, "board": board, "batch": batch, "steps": steps, "device": device,
            "steps_per_s": round(steps_per_s, 4), "samples_per_s": round(result.samples_per_s, 2),
            "wall_s": round(wall, 1), "loss": round(result.losses.get("loss", float("nan")), 4),
            "load_start": round(load0, 2), "load_end": round(load1, 2)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Measure fine-tuning steps/s of Sayuri networks.")
    p.add_argument("--nets", default="6b96c,20b256c")
    p.add_argument("--board", type=int, default=19)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--steps", default="", help="per net, e.g. 6b96c=30,20b256c=8 (these are the defaults)")
    p.add_argument("--device", default="cpu")
    args = p.parse_args(argv)
    steps = dict(DEFAULT_STEPS)
    for item in filter(None, args.steps.split(",")):
        key, _, value = item.partition("=")
        steps[key] = int(value)
    import torch

    work = Path(tempfile.mkdtemp(prefix="bench-finetune-"))
    try:
        make_data(work / "data", args.board, max(512, 4 * args.batch))
        rows = []
        for name in args.nets.split(","):
            row = run_one(name, work, args.board, args.batch, steps.get(name, 10), args.device)
            rows.append(row)
            print(f"{name} on {args.device} ({torch.get_num_threads()} threads), {args.board}x{args.board}, "
                  f"batch {args.batch}: {row['steps_per_s']} steps/s ({row['samples_per_s']} samples/s) over "
                  f"{row['steps']} steps; load {row['load_start']} -> {row['load_end']}")
        print(json.dumps({"runs": rows, "cpus": os.cpu_count(), "threads": torch.get_num_threads()}))
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
