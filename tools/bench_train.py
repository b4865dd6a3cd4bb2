"""Training throughput: the real pipeline against a bare forward+backward loop.

    python tools/bench_train.py [--board 9] [--blocks 6] [--channels 96] [--batch 256]
                                [--steps N] [--workers K] [--device auto|cpu|cuda]

Vocabulary:
  pipeline  ``sayuri_async.train.trainer`` end to end: synthetic chunks on disk
            (written here, following docs/data-format.md), the replay window,
            reader processes, symmetries, host-to-device copies, losses,
            optimizer, EMA. Its samples/s is measured between its first and
            last log rows, so start-up, the final checkpoint and export are
            left out.
  bare      the same network, loss, optimizer and precision on one batch of
            random inputs kept on the device: the ceiling the pipeline can reach.
  ratio     pipeline / bare. The goal on a CUDA machine is >= 0.85 (the readers
            keep the GPU fed). On a small CPU machine the readers and the
            training share the same cores, so the ratio says little there.

Prints readable lines, then one JSON line (the last line) with the figures.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sayuri_async.chunkfile import chunk_name, make_meta, write_chunk  # noqa: E402
from sayuri_async.features import get_encoder  # noqa: E402
from sayuri_async.net.model import Net, NetConfig, init_weights  # noqa: E402
from sayuri_async.train.config import from_dict  # noqa: E402
from sayuri_async.train.losses import compute_losses  # noqa: E402
from sayuri_async.train.step import build_optimizer  # noqa: E402
from sayuri_async.train.trainer import Trainer  # noqa: E402


def write_chunks(folder: Path, n: int, planes: int, count: int, positions: int, seed: int = 0) -> None:
    """Random but well-formed chunks (see docs/data-format.md)."""
    rng = np.random.default_rng(seed)
    area = n * n
    folder.mkdir(parents=True, exist_ok=True)
    for c in range(count):
        m = positions
        bits = (rng.random((m, planes, area)) < 0.3).astype(np.uint8)
        policy = rng.random((m, area + 1)).astype(np.float32)
        policy /= policy.sum(axis=1, keepdims=True)
        nxt = rng.integers(0, area + 1, size=m).astype(np.int16)
        nxt[-1] = -1
        wdl = np.zeros((m, 3), np.float32)
        wdl[np.arange(m), rng.integers(0, 3, size=m)] = 1
        meta = make_meta("simple-v1", planes, n, 1, "random")
        write_chunk(folder / chunk_name(c, "0", 0), meta, dict(
            planes=np.packbits(bits, axis=-1),
            policy=policy.astype(np.float16), next_action=nxt, action=rng.integers(0, area + 1, m).astype(np.int16),
            wdl=wdl, score=rng.normal(0, 10, m).astype(np.float32),
            ownership=rng.integers(-1, 2, (m, area)).astype(np.int8), to_move=np.ones(m, np.int8),
            komi=np.full(m, 7.5, np.float32), full_search=rng.random(m) < 0.75, after_resign=np.zeros(m, bool),
            game=np.zeros(m, np.int32), root_value=rng.random(m).astype(np.float32)))


def bench_pipeline(args: argparse.Namespace, data: Path, out: Path) -> tuple[float, float, str, bool]:
    log_every = max(1, args.warmup_steps)
    cfg = from_dict({
        "data": {"dir": str(data), "board_size": args.board, "workers": args.workers,
                 "shuffle_buffer": args.shuffle_buffer, "prefetch_batches": 4},
        "model": {"blocks": args.blocks, "channels": args.channels},
        "optim": {"batch_size": args.batch},
        "schedule": {"reference_batch": args.batch, "warmup": 0, "boundaries": [10**9], "rates": [0.001, 0.001]},
        "run": {"out": str(out), "device": args.device, "log_every": log_every, "checkpoint_every": 10**9,
                "export_every": 10**9, "progress": "off"},
    }, "bench")
    trainer = Trainer(cfg, steps=args.warmup_steps + args.steps, say=lambda _: None)
    result = trainer.run()
    with open(out / "train_log.csv", newline="") as f:
        rows = list(csv.DictReader(f))[1:]
    wait = float(np.mean([float(r["data_wait"]) for r in rows])) if rows else float("nan")
    return result.samples_per_s, wait, str(trainer.device), trainer.use_bf16


def bench_bare(args: argparse.Namespace, device: torch.device, bf16: bool) -> float:
    from sayuri_async.train.config import LossConfig

    planes = get_encoder("simple-v1").planes
    net = init_weights(Net(NetConfig(blocks=args.blocks, channels=args.channels)), seed=1).to(device)
    cuda = device.type == "cuda"
    if cuda:
        net = net.to(memory_format=torch.channels_last)
    opt = build_optimizer(net, from_dict({}, check_model=False).optim)
    for g in opt.param_groups:
        g["lr"] = 0.001
    b, n, a = args.batch, args.board, args.board ** 2 + 1
    x8 = torch.randint(0, 2, (b, planes, n, n), dtype=torch.uint8, device=device)
    targets = {
        "policy": torch.softmax(torch.randn(b, a, device=device), 1), "policy_mask": torch.ones(b, dtype=torch.bool, device=device),
        "opp_policy": torch.softmax(torch.randn(b, a, device=device), 1), "opp_mask": torch.ones(b, dtype=torch.bool, device=device),
        "wdl": torch.softmax(torch.randn(b, 3, device=device), 1), "score": torch.randn(b, device=device),
        "ownership": torch.randint(-1, 2, (b, n * n), device=device).float(),
    }
    loss_cfg = LossConfig()

    def step() -> None:
        x = x8.float()
        if cuda:
            x = x.contiguous(memory_format=torch.channels_last)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            out = net(x)
        total, _ = compute_losses(out, targets, loss_cfg)
        opt.zero_grad(set_to_none=True)
        total.backward()
        opt.step()

    for _ in range(args.warmup_steps):
        step()
    if cuda:
        torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(args.steps):
        step()
    if cuda:
        torch.cuda.synchronize()
    return args.steps * b / (time.perf_counter() - t)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--board", type=int, default=9)
    p.add_argument("--blocks", type=int, default=6)
    p.add_argument("--channels", type=int, default=96)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--steps", type=int, default=None, help="timed steps (default 12 on CPU, 300 on CUDA)")
    p.add_argument("--warmup-steps", type=int, default=None, help="untimed steps first (default 3 / 50)")
    p.add_argument("--workers", type=int, default=None, help="reader processes (default 1 on CPU, 6 on CUDA)")
    p.add_argument("--shuffle-buffer", type=int, default=20_000)
    p.add_argument("--positions", type=int, default=None, help="synthetic positions on disk (default 20000 / 100000)")
    p.add_argument("--device", default="auto")
    p.add_argument("--skip-bare", action="store_true")
    args = p.parse_args(argv)
    cuda = args.device.startswith("cuda") or (args.device == "auto" and torch.cuda.is_available())
    args.steps = args.steps or (300 if cuda else 12)
    args.warmup_steps = args.warmup_steps or (50 if cuda else 3)
    args.workers = args.workers if args.workers is not None else (6 if cuda else 1)
    positions = args.positions or (100_000 if cuda else 20_000)
    planes = get_encoder("simple-v1").planes
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        t = time.perf_counter()
        per = 2_000
        write_chunks(data, args.board, planes, max(1, positions // per), per)
        print(f"wrote {positions} synthetic positions in {time.perf_counter() - t:.1f}s", flush=True)
        speed, wait, device, bf16 = bench_pipeline(args, data, Path(tmp) / "out")
    name = f"{args.blocks}b{args.channels}c"
    print(f"pipeline: {name} {args.board}x{args.board} batch {args.batch} on {device} "
          f"({'bf16' if bf16 else 'fp32'}, {args.workers} readers): {speed:,.0f} samples/s, "
          f"data wait {wait:.1%}", flush=True)
    figures = {"net": name, "board": args.board, "batch": args.batch, "device": device,
               "precision": "bf16" if bf16 else "fp32", "workers": args.workers,
               "threads": torch.get_num_threads(), "cpus": os.cpu_count(),
               "train_samples_per_s": round(speed, 1), "data_wait": round(wait, 4)}
    if not args.skip_bare:
        bare = bench_bare(args, torch.device(device), bf16)
        ratio = speed / bare if bare else float("nan")
        print(f"bare forward+backward loop: {bare:,.0f} samples/s; pipeline reaches {ratio:.0%} of it"
              + (" (goal >= 85%)" if cuda else ""), flush=True)
        figures.update(bare_samples_per_s=round(bare, 1), ratio=round(ratio, 3))
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
