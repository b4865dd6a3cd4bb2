"""What synchronised batch norms cost (``[optim] sync_norms``): training steps/s
of the same DDP job with per-rank batch norms and with synchronised ones.

Each rank is a forked process with torchrun's environment variables (gloo on
the CPU; NCCL with ``--device cuda`` and a GPU per rank). A step is what the
trainer does: forward, a loss over every output, backward (DDP's gradient
all-reduce), an SGD update, on random planes of the encoder's shape. The two
kinds alternate over ``--rounds`` rounds of ``--steps`` steps (after
``--warmup`` steps each) so machine load hits both alike; the figure of each
is its fastest round (the one other load disturbed least), its median beside
it. Prints one line per round and kind, then a summary; the last line is
JSON: steps/s and positions/s of each, the cost in percent (fastest rounds,
and medians), the number of synchronised layers, the machine's load.

    python tools/bench_syncbn.py [--world 2] [--board 9] [--blocks 6] [--channels 64]
                                 [--batch 64] [--steps 20] [--rounds 3] [--device cpu]
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.multiprocessing as mp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank(rank: int, args: argparse.Namespace, port: int, out: str) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(args.world), LOCAL_RANK=str(rank), MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=str(port))
    torch.set_num_threads(args.threads)
    import torch.distributed as dist
    from torch import nn

    from sayuri_async.net.model import Net, NetConfig, init_weights
    from sayuri_async.train.syncnorm import synchronise_norms

    device = torch.device(f"cuda:{rank}" if args.device == "cuda" else "cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    config = NetConfig(blocks=args.blocks, channels=args.channels)
    share = args.batch // args.world
    g = torch.Generator().manual_seed(rank)
    x = (torch.rand(share, config.input_planes, args.board, args.board, generator=g) < 0.3).float().to(device)
    models, layers = {}, 0
    for kind in ("per-rank", "synchronised"):
        net = init_weights(Net(config), seed=1).to(device)
        if kind == "synchronised":
            layers = synchronise_norms(net)
        net.train()
        ids = [device.index] if device.type == "cuda" else None
        models[kind] = (nn.parallel.DistributedDataParallel(net, device_ids=ids),
                        torch.optim.SGD(net.parameters(), lr=1e-4, momentum=0.9))

    def steps(kind: str, n: int) -> float:
        model, opt = models[kind]
        if device.type == "cuda":
            torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(n):
            out = model(x)
            loss = sum((v.float() ** 2).mean() for v in out.values())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        dist.barrier()
        return n / (time.perf_counter() - t0)

    figures: dict[str, list[float]] = {"per-rank": [], "synchronised": []}
    for kind in figures:
        steps(kind, args.warmup)
    for r in range(args.rounds):
        for kind in figures:
            rate = steps(kind, args.steps)
            figures[kind].append(rate)
            if rank == 0:
                print(f"round {r + 1} {kind:>12}: {rate:.2f} steps/s", flush=True)
    if rank == 0:
        Path(out).write_text(json.dumps({"figures": figures, "layers": layers}))
    dist.destroy_process_group()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--world", type=int, default=2, help="ranks (processes)")
    p.add_argument("--board", type=int, default=9)
    p.add_argument("--blocks", type=int, default=6)
    p.add_argument("--channels", type=int, default=64)
    p.add_argument("--batch", type=int, default=64, help="global batch (split over the ranks)")
    p.add_argument("--steps", type=int, default=20, help="steps a round")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=1, help="torch threads a rank")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    args = p.parse_args(argv)
    if args.world < 2 or args.batch % args.world or min(args.steps, args.rounds, args.board, args.blocks) < 1:
        p.error("--world must be at least 2 and divide --batch; --steps, --rounds, --board, --blocks at least 1")
    if args.device == "cuda" and torch.cuda.device_count() < args.world:
        p.error(f"--device cuda needs a GPU a rank: {args.world} ranks, {torch.cuda.device_count()} GPUs")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{args.world} ranks ({args.device}, {'nccl' if args.device == 'cuda' else 'gloo'}), "
          f"{args.blocks}b{args.channels}c {args.board}x{args.board}, batch {args.batch} "
          f"({args.batch // args.world} a rank), {os.cpu_count()} cores, load {load:.1f}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "figures.json"
        mp.start_processes(_rank, args=(args, _free_port(), str(out)), nprocs=args.world, join=True,
                           start_method="fork")
        result = json.loads(out.read_text())
    per_rank = max(result["figures"]["per-rank"])
    synced = max(result["figures"]["synchronised"])
    cost = 100 * (per_rank / synced - 1)
    per_rank_median = statistics.median(result["figures"]["per-rank"])
    synced_median = statistics.median(result["figures"]["synchronised"])
    cost_median = 100 * (per_rank_median / synced_median - 1)
    print(f"fastest rounds: per-rank norms {per_rank:.2f} steps/s, synchronised {synced:.2f} steps/s "
          f"({result['layers']} layers): {cost:+.1f}% time a step (medians {per_rank_median:.2f} and "
          f"{synced_median:.2f}: {cost_median:+.1f}%)")
    print(json.dumps({
        "world": args.world, "device": args.device, "net": f"{args.blocks}b{args.channels}c", "board": args.board,
        "batch": args.batch, "sync_layers": result["layers"],
        "per_rank_steps_per_s": round(per_rank, 3), "sync_steps_per_s": round(synced, 3),
        "per_rank_positions_per_s": round(per_rank * args.batch, 1),
        "sync_positions_per_s": round(synced * args.batch, 1),
        "cost_percent": round(cost, 1), "per_rank_median_steps_per_s": round(per_rank_median, 3),
        "sync_median_steps_per_s": round(synced_median, 3), "cost_percent_medians": round(cost_median, 1),
        "load_1min": round(load, 2),
        "rounds": result["figures"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
