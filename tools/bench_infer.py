"""Inference benchmark: evals/s of a backend by batch size, and encoder cost.

Vocabulary
----------
evals/s    positions evaluated per second through ``Backend.run`` (host
           uint8 batch in, numpy probabilities out: copies, conversion and
           softmax included), for a net of random weights of the given shape.
mode       ``eager`` (plain torch calls) or ``graph`` (CUDA graphs, one per
           batch bucket; CUDA only).
ceiling    the forward-pass figures measured on an H200
           (``sayuri_async/net/device_tables/h200.json``, the table the
           device model uses, or ``--ceiling``); on CUDA each graph row shows our figure as a
           percentage of the ceiling's ``bf16graph`` row for the same net,
           board and batch, where it has one.
encoder    microseconds per position of the compiled encoder, called from
           compiled code for a batch of 256 positions from random games into
           one buffer (the way the search fills a batcher buffer), and from
           Python one position at a time (``encode_into(arr)`` and with the
           record argument).

Usage: ``python tools/bench_infer.py --blocks 6 --channels 96 --board 9
--seconds 2``. The last line printed is one JSON object with every figure.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sayuri_async.encoders import get_encoder
from sayuri_async.encoders.planes import encode_many  # noqa: E402
from sayuri_async.go.game import Game  # noqa: E402
from sayuri_async.net.backends import TorchBackend  # noqa: E402
from sayuri_async.net.model import Net, NetConfig, init_weights  # noqa: E402


def random_positions(n: int, count: int, seed: int = 0) -> np.ndarray:
    """Board records from random games (``[count]`` of BOARD_DTYPE)."""
    rng = np.random.default_rng(seed)
    recs = []
    g = Game(n)
    while len(recs) < count:
        legal = np.flatnonzero(g.legal_actions())
        moves = legal[legal < n * n]
        if len(moves) == 0 or len(g.moves) > n * n:
            g = Game(n)
            continue
        g.play(int(rng.choice(moves)))
        recs.append(g.arr.copy())
    return np.concatenate(recs)


def bench_encoder(name: str, n: int, positions: int = 256, batch: int = 256, reps: int = 40) -> dict:
    """Best of ``reps`` timings of encoding a batch of ``batch`` positions
    into one buffer (the size of a batcher buffer, cache-resident, as in
    self-play), 10 times per timing (short timings, so some run unpreempted
    on a shared machine)."""
    enc = get_encoder(name)
    recs = random_positions(n, positions)
    idx = np.random.default_rng(1).integers(0, len(recs), batch)
    out = np.zeros((batch, enc.planes, n, n), dtype=np.uint8)
    encode_many(enc.encode, recs, idx, out)  # compile
    best = float("inf")
    loops = 10
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(loops):
            encode_many(enc.encode, recs, idx, out)
        best = min(best, (time.perf_counter() - t) / (loops * batch))
    arr = recs[len(recs) // 2 : len(recs) // 2 + 1]  # (1,) board array, as Game.arr
    one = out[0]
    enc.encode_into(arr, one)
    calls = 2000
    py = py_rec = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(calls):
            enc.encode_into(arr, one)
        py = min(py, (time.perf_counter() - t) / calls)
        t = time.perf_counter()
        for _ in range(calls):
            enc.encode(arr[0], one)
        py_rec = min(py_rec, (time.perf_counter() - t) / calls)
    return {"encoder": name, "board": n, "batch": batch, "compiled_us": best * 1e6,
            "python_call_us": py * 1e6, "python_record_call_us": py_rec * 1e6}


def bench_backend(be: TorchBackend, n: int, batches: list[int], seconds: float, max_call_s: float) -> list[dict]:
    rows = []
    enc = get_encoder(be.encoder)
    recs = random_positions(n, 64, seed=2)
    buf = be.alloc_input(max(batches), n)
    for i in range(buf.shape[0]):
        enc.encode(recs[i % len(recs)], buf[i])
    for b in batches:
        t0 = time.perf_counter()
        be.run(buf[:b])  # warm-up: compile, cudnn autotune, graph capture
        be.run(buf[:b])
        first = time.perf_counter() - t0
        iters = 0
        t = time.perf_counter()
        while True:
            be.run(buf[:b])
            iters += 1
            el = time.perf_counter() - t
            if el >= seconds:
                break
        rows.append({"batch": b, "evals_s": b * iters / el, "ms_per_batch": el / iters * 1e3, "iters": iters})
        print(f"  batch {b:5d}: {b * iters / el:10.0f} evals/s  {el / iters * 1e3:8.2f} ms/batch", flush=True)
        if first / 2 > max_call_s:
            print(f"  (one batch of {b} took {first / 2:.2f} s; skipping larger batches)")
            break
    return rows


def load_ceiling(path: Path, net: str, board: int) -> dict[tuple[str, int], float]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return {
        (r["mode"], int(r["batch"])): float(r["evals_s"])
        for r in doc.get("nets", [])
        if r.get("net") == net and int(r.get("board", 0)) == board
    }


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--blocks", type=int, default=6)
    ap.add_argument("--channels", type=int, default=96)
    ap.add_argument("--board", type=int, default=19)
    ap.add_argument("--block-kind", default="residual", choices=["residual", "nested-bottleneck"])
    ap.add_argument("--batches", default="1,8,32,64,128,256,512")
    ap.add_argument("--seconds", type=float, default=2.0, help="time per measured point")
    ap.add_argument("--max-call-s", type=float, default=1.0, help="skip larger batches once one call takes longer")
    ap.add_argument("--device", default="auto", help="cpu, cuda:K or auto")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    ap.add_argument("--dtype", default=None, help="bf16 (CUDA default), fp16, fp32")
    ap.add_argument("--encoder", default="simple-v1")
    ap.add_argument("--ceiling", type=Path, default=ROOT / "sayuri_async" / "net" / "device_tables" / "h200.json")
    ap.add_argument("--no-encoder", action="store_true", help="skip the encoder timing")
    args = ap.parse_args(argv)

    device = args.device
    if device == "auto":
        device = "cuda:0" if torch.cuda.is_available() else "cpu"
    batches = [int(x) for x in args.batches.split(",") if x]
    cfg = NetConfig(blocks=args.blocks, channels=args.channels, block_kind=args.block_kind, encoder=args.encoder,
                    input_planes=get_encoder(args.encoder).planes)
    net = init_weights(Net(cfg), seed=0).eval()
    name = cfg.short_name
    result: dict = {
        "net": name, "board": args.board, "device": device, "block_kind": args.block_kind,
        "torch": torch.__version__, "threads": torch.get_num_threads() if args.threads is None else args.threads,
        "params": net.num_parameters(), "modes": {},
    }
    if device.startswith("cuda"):
        result["gpu"] = torch.cuda.get_device_name(torch.device(device))
    print(f"{name} {args.block_kind} on {args.board}x{args.board}, device {device}, {net.num_parameters()} parameters")

    if not args.no_encoder:
        e = bench_encoder(args.encoder, args.board)
        result["encoder"] = e
        print(f"encoder {e['encoder']}: {e['compiled_us']:.3f} us/position compiled; from Python "
              f"{e['python_call_us']:.2f} us per encode_into(arr), {e['python_record_call_us']:.2f} us per encode(rec)")

    modes = ["eager", "graph"] if device.startswith("cuda") else ["eager"]
    for mode in modes:
        print(f"{mode}:")
        be = TorchBackend(net, device=device, dtype=args.dtype, max_batch=max(batches),
                          use_cuda_graphs=(mode == "graph"), threads=args.threads)
        result["dtype"] = str(be.dtype).replace("torch.", "")
        result["modes"][mode] = bench_backend(be, args.board, batches, args.seconds, args.max_call_s)
        be.close()

    if device.startswith("cuda"):
        ceil = load_ceiling(args.ceiling, name, args.board)
        if ceil:
            print(f"against {args.ceiling.name} (bf16graph forward pass):")
            for row in result["modes"].get("graph", []):
                ref = ceil.get(("bf16graph", row["batch"]))
                if ref:
                    row["ceiling_evals_s"] = ref
                    row["ceiling_pct"] = 100.0 * row["evals_s"] / ref
                    print(f"  batch {row['batch']:5d}: {row['ceiling_pct']:5.1f}% of {ref:.0f}")
        else:
            print(f"no ceiling figures for {name} on {args.board}x{args.board} in {args.ceiling}")
    print(json.dumps(result))
    return result


if __name__ == "__main__":
    main()
