"""``sayuri-async import-weights`` (and ``import-data``): bring Sayuri files in.

Vocabulary
----------
import-weights  ``sayuri-async import-weights FILE -o OUT``: read a Sayuri
                weights file (text or ``float32bin``), fold its batch norms,
                and save it in our safetensors format (``sayuri/weights.py``);
                ``--check`` also runs one forward pass on an empty board.
import-data     ``sayuri-async import-data FILE... -o DIR`` (``data_main``):
                convert Sayuri's training data (gzip text, record version 2)
                into our chunks under ``DIR`` for ``sayuri-async train``;
                ``--config FILE`` reads the options from its ``[import]``
                table (``data.ImportConfig``), the command line overriding.
                A damaged file, a line longer than ``data.MAX_LINE_BYTES``
                and an empty file each get a warning line naming the file;
                the other files are imported.
Exit codes (``usererror``): 0 done (records imported, warnings or not); 2 a
missing input file, nothing imported (every file empty or rejected: the line
``nothing imported`` says so), an output that cannot be written, a bad
option (the message says which); 1 a failure while writing.
"""
from __future__ import annotations

import argparse
import sys

from ..usererror import ArgumentParser, UserError, answered, input_file, output_file, output_folder


def _weights_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="sayuri-async import-weights",
                                description="Convert a Sayuri weights file (text or float32bin) to our format.")
    p.add_argument("file", help="Sayuri weights file (versions 3-5, 43 input planes)")
    p.add_argument("-o", "--out", required=True, help="output file (safetensors)")
    p.add_argument("--name", help="name stored in the file (default: the input's stem)")
    p.add_argument("--check", action="store_true", help="run one forward pass on an empty 19x19 board and print it")
    return p


@answered("import-weights")
def main(argv: list[str] | None = None) -> int:
    args = _weights_parser().parse_args(argv)
    from ..net.weights import WeightsError
    from .weights import import_sayuri, save_imported

    input_file(args.file, "", "Sayuri weights file")
    out = output_file(args.out, "-o", "net.safetensors", inputs=[args.file])
    try:
        net, meta = import_sayuri(args.file)
    except WeightsError as e:
        print(f"sayuri-async import-weights: {e}", file=sys.stderr)
        return 2
    if args.name:
        meta["name"] = args.name
    cfg = net.config
    kinds = ", ".join(sorted({b.kind + ("+SE" if b.se else "") for b in cfg.blocks})) or "no blocks"
    print(f"{args.file}: Sayuri weights version {cfg.version}, {cfg.short_name} ({kinds}), "
          f"policy head {cfg.policy_channels}, value head {cfg.value_channels}, {cfg.activation}, "
          f"{net.num_parameters():,} parameters, encoder {cfg.encoder}")
    if args.check:
        import torch

        from ..encoders import get_encoder
        from ..encoders.sayuri_v3 import NAME
        from ..go.board import new_board
        from ..go.coords import action_to_vertex

        x = torch.from_numpy(get_encoder(NAME)(new_board(19))).float()[None]
        with torch.no_grad():
            out = net(x)
        wdl = torch.softmax(out["wdl"], 1)[0].tolist()
        top = torch.softmax(out["policy"], 1)[0].topk(3)
        print(f"empty 19x19, black to move: wdl {[round(v, 3) for v in wdl]}, score {float(out['score'][0]):.2f}, "
              f"top policy {', '.join(f'{action_to_vertex(int(i), 19)} {float(v):.3f}' for v, i in zip(top.values, top.indices))}")
    try:
        save_imported(args.out, net, meta)
    except OSError as e:
        print(f"sayuri-async import-weights: cannot write {args.out}: {e.strerror or e}", file=sys.stderr)
        return 1
    print(f"wrote {args.out}")
    return 0


@answered("import-data")
def data_main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(prog="sayuri-async import-data",
                                description="Convert Sayuri training data (record version 2) into our chunks.")
    p.add_argument("files", nargs="+", help="Sayuri data files (.gz or plain text), taken in this order")
    p.add_argument("-o", "--out", help="folder for the chunks (e.g. <run>/data); required unless the "
                                        "--config file's [import] out gives it")
    p.add_argument("--config", help="TOML file whose [import] table gives these options "
                                    "(configs/sayuri-import.toml); options given here override it")
    p.add_argument("--generation", type=int, default=None, help="generation number in the chunk names; default 0")
    p.add_argument("--chunk-positions", type=int, default=None,
                   help="positions per chunk written (and the most held in memory per board size); "
                        "default 8192")
    p.add_argument("--jobs", type=int, default=None,
                   help="processes parsing records (the chunks are the same for any count); default 1")
    args = p.parse_args(argv)
    from ..configfile import from_options
    from .data import ImportConfig, convert, load_import_config

    cfg = load_import_config(str(input_file(args.config, "--config", "config file"))) if args.config else ImportConfig()
    cfg = from_options(ImportConfig, {"generation": args.generation, "chunk_positions": args.chunk_positions,
                                      "jobs": args.jobs}, base=cfg)  # the file's range checks, naming the option
    size, jobs, generation = cfg.chunk_positions, cfg.jobs, cfg.generation
    out = args.out or cfg.out
    for f in args.files:
        input_file(f, "", "Sayuri data file")
    if not out:
        raise UserError("-o: the folder for the chunks is required (or [import] out in the --config file)")
    output_folder(out, "-o", inputs=[*args.files, args.config])
    try:
        result = convert(args.files, out, generation, chunk_positions=size, jobs=jobs)
    except OSError as e:
        print(f"sayuri-async import-data: cannot write to {out}: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    for w in result.warnings:
        print(f"sayuri-async import-data: {w}", file=sys.stderr)
    if not result.written:  # every file empty or rejected: the inputs held no Sayuri data
        given = ", ".join(args.files) if len(args.files) <= 3 else f"the {len(args.files)} files given"
        print(f"sayuri-async import-data: nothing imported: no records read from {given}", file=sys.stderr)
        return 2
    print(f"wrote {len(result.written)} chunk(s), {result.positions} positions from {result.files} file(s) "
          f"to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
