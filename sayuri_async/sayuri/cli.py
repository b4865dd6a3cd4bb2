"""``sayuri-async import-weights`` (and ``import-data``): bring Sayuri files in.

Vocabulary
----------
import-weights  ``sayuri-async import-weights FILE -o OUT``: read a Sayuri
                weights file (text or ``float32bin``), fold its batch norms,
                and save it in our safetensors format (``sayuri/weights.py``);
                ``--check`` also runs one forward pass on an empty board.
import-data     ``sayuri-async import-data FILE... -o DIR`` (``data_main``):
                convert Sayuri's training data (gzip text, record version 2)
                into our chunks under ``DIR`` for ``sayuri-async train``.
Exit codes: 0 done, 1 the input was rejected (the message says why), 2 usage.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _weights_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sayuri-async import-weights",
                                description="Convert a Sayuri weights file (text or float32bin) to our format.")
    p.add_argument("file", help="Sayuri weights file (versions 3-5, 43 input planes)")
    p.add_argument("-o", "--out", required=True, help="output file (safetensors)")
    p.add_argument("--name", help="name stored in the file (default: the input's stem)")
    p.add_argument("--check", action="store_true", help="run one forward pass on an empty 19x19 board and print it")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _weights_parser().parse_args(argv)
    from ..net.weights import WeightsError
    from .weights import import_sayuri, save_imported

    try:
        net, meta = import_sayuri(args.file)
    except WeightsError as e:
        print(f"import-weights: {e}", file=sys.stderr)
        return 1
    if args.name:
        meta["name"] = args.name
    cfg = net.config
    kinds = ", ".join(sorted({b.kind + ("+SE" if b.se else "") for b in cfg.blocks})) or "no blocks"
    print(f"{args.file}: Sayuri weights version {cfg.version}, {cfg.short_name} ({kinds}), "
          f"policy head {cfg.policy_channels}, value head {cfg.value_channels}, {cfg.activation}, "
          f"{net.num_parameters():,} parameters, encoder {cfg.encoder}")
    if args.check:
        import torch

        from .encoder import ENCODER
        from ..go.board import new_board

        x = torch.from_numpy(ENCODER(new_board(19))).float()[None]
        with torch.no_grad():
            out = net(x)
        wdl = torch.softmax(out["wdl"], 1)[0].tolist()
        top = torch.softmax(out["policy"], 1)[0].topk(3)
        print(f"empty 19x19, black to move: wdl {[round(v, 3) for v in wdl]}, score {float(out['score'][0]):.2f}, "
              f"top policy {[(int(i), round(float(v), 3)) for v, i in zip(top.values, top.indices)]}")
    try:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        save_imported(args.out, net, meta)
    except OSError as e:
        print(f"import-weights: cannot write {args.out}: {e}", file=sys.stderr)
        return 1
    print(f"wrote {args.out}")
    return 0


def data_main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="sayuri-async import-data",
                                description="Convert Sayuri training data (record version 2) into our chunks.")
    p.add_argument("files", nargs="+", help="Sayuri data files (.gz or plain text), taken in this order")
    p.add_argument("-o", "--out", required=True, help="folder for the chunks (e.g. <run>/data)")
    p.add_argument("--generation", type=int, default=0, help="generation number in the chunk names")
    p.add_argument("--chunk-positions", type=int, default=None,
                   help="positions per chunk written (and the most held in memory per board size); "
                        "default 8192")
    p.add_argument("--jobs", type=int, default=1,
                   help="processes parsing records (the chunks are the same for any count); default 1")
    args = p.parse_args(argv)
    from .data import DEFAULT_CHUNK_POSITIONS, convert

    size = DEFAULT_CHUNK_POSITIONS if args.chunk_positions is None else args.chunk_positions
    if size < 1:
        print(f"import-data: --chunk-positions {size}: must be at least 1", file=sys.stderr)
        return 2
    if args.jobs < 1:
        print(f"import-data: --jobs {args.jobs}: must be at least 1", file=sys.stderr)
        return 2
    try:
        result = convert(args.files, args.out, args.generation, chunk_positions=size, jobs=args.jobs)
    except OSError as e:
        print(f"import-data: cannot write to {args.out}: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    for w in result.warnings:
        print(f"import-data: {w}", file=sys.stderr)
    print(f"wrote {len(result.written)} chunk(s), {result.positions} positions from {result.files} file(s) "
          f"to {args.out}")
    return 0 if result.written or not result.warnings else 1


if __name__ == "__main__":
    sys.exit(main())
