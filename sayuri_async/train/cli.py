"""``sayuri-async train``: command-line options over a training TOML file.

Vocabulary: options given here override the file's values (``--data`` sets
``[data] dir``, ``--out`` sets ``[run] out``); ``--steps`` is the step count
to *reach* (a resumed run at step 3000 with ``--steps 5000`` does 2000 more).
``--nproc K`` starts ``K`` local ranks through torchrun; under torchrun itself
(``WORLD_SIZE`` set) the option is ignored. A run folder that already holds
a run is refused (exit 2) unless ``--resume`` or ``--auto-resume`` is given
(see ``trainer``'s "run folder").

Checked before anything is built: the numbers (``TrainOptions``, and the
file's sections for ``--workers``), the size of the ``[model]`` network
(``net.weights.MAX_BLOCKS``, ``MAX_WIDTH``), and that ``--init``'s network
reads the planes the newest chunks hold (``check_init_encoder``: a sayuri-v3
network on simple-v1 chunks is refused naming both encoders). Ctrl-C exits
130 and SIGTERM 143, the last checkpoint standing (``usererror``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from sayuri_async.configfile import CommandLine, between, from_options
from sayuri_async.train.config import ConfigError, load_config, override
from sayuri_async.usererror import (ArgumentParser, Terminated, UserError, answered, check_device, exit_status,
                                    input_file, output_folder)

PEEK_CHUNKS = 64  # chunks looked at (newest names first) to learn the data's encoder


@dataclass
class TrainOptions:
    """The command line's own numbers, range-checked as every setting is
    (``configfile``): an error names the option."""
    steps: int | None = None
    nproc: int = 1

    def __post_init__(self) -> None:
        if self.steps is not None:
            between(self, 0, 1_000_000_000_000, "steps")
        between(self, 1, 1024, "nproc")


def network_encoder(path: str) -> str | None:
    """The planes the network in ``path`` reads, from its header alone (None
    when the header does not say: the trainer's own checks then speak)."""
    from sayuri_async.net.weights import WeightsError, read_header
    from sayuri_async.encoders.sayuri_v3 import NAME as SAYURI_ENCODER
    from sayuri_async.sayuri.weights import is_sayuri_file

    if is_sayuri_file(path):
        return SAYURI_ENCODER
    try:
        md = read_header(path)
        return str(md.get("encoder") or json.loads(md.get("config", "{}")).get("encoder") or "") or None
    except (WeightsError, ValueError, AttributeError, RecursionError):
        return None


def chunk_encoders(folder: str, board_size: int) -> dict[str, int]:
    """The encoders of the newest chunks of ``board_size`` under ``folder``
    (by name, at most ``PEEK_CHUNKS`` looked at): encoder to count."""
    from sayuri_async.chunkfile import ChunkError, peek_chunk

    seen: dict[str, int] = {}
    names = sorted((p for p in Path(folder).rglob("*.npz") if not p.name.startswith(".")),
                   key=lambda p: p.name, reverse=True)
    for path in names[:PEEK_CHUNKS]:
        try:
            _, meta = peek_chunk(path)
        except (ChunkError, OSError):
            continue
        if meta.get("board_size") == board_size:
            enc = str(meta.get("encoder", ""))
            seen[enc] = seen.get(enc, 0) + 1
    return seen


def check_init_encoder(init: str, folder: str, board_size: int) -> None:
    """UserError when ``init``'s network reads other planes than every one
    of the newest chunks holds, naming both encoders."""
    want = network_encoder(init)
    found = chunk_encoders(folder, board_size)
    if want is None or not found or want in found:
        return
    held = ", ".join(f"{enc} ({n} chunk{'s' if n > 1 else ''})" for enc, n in sorted(found.items()))
    raise UserError(f"--init {init}: the network reads {want} planes, but the newest {board_size}x{board_size} "
                    f"chunks under {folder} hold {held}: the encoders differ; train it on {want} chunks "
                    f"(import-data or import-sgf --encoder {want}, or self-play with this network)")


def _parser() -> argparse.ArgumentParser:
    p = ArgumentParser(
        prog="sayuri-async train",
        description="Train a network on self-play chunks and export weights the engine loads.")
    p.add_argument("--config", required=True, help="training TOML file (see configs/train-9x9.toml)")
    p.add_argument("--data", help="folder of chunk files (searched recursively); overrides [data] dir")
    p.add_argument("--steps", type=int, help="step count to reach (default: the schedule's total)")
    p.add_argument("--out", help="run folder for checkpoints, weights and the log; overrides [run] out")
    p.add_argument("--init", metavar="WEIGHTS", help="start from these exported weights instead of [model]")
    p.add_argument("--resume", action="store_true", help="continue from the newest checkpoint in the run folder")
    p.add_argument("--auto-resume", action="store_true",
                   help="resume when the run folder has a checkpoint, else start afresh (for restarts)")
    p.add_argument("--refresh-window", action="store_true",
                   help="with --resume/--auto-resume: keep model, optimizer and step but take a new "
                        "data window from the chunks now on disk (the RL loop's next generation)")
    p.add_argument("--nproc", type=int, default=1, help="local processes (one per GPU) through torchrun")
    p.add_argument("--device", help="cpu, cuda or cuda:N; overrides [run] device")
    p.add_argument("--workers", type=int, help="data-loader processes per rank; overrides [data] workers")
    p.add_argument("--no-progress", action="store_true", help="plain log lines instead of the progress bar")
    return p


def _launch(nproc: int, argv: list[str]) -> int:
    rest = []
    skip = False
    for i, a in enumerate(argv):
        if skip:
            skip = False
            continue
        if a == "--nproc":
            skip = True
            continue
        if a.startswith("--nproc="):
            continue
        rest.append(a)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
           "-m", "sayuri_async.train", *rest]
    print("launching: " + " ".join(cmd), file=sys.stderr)
    return subprocess.call(cmd)


def _check_model_size(cfg, source: str) -> None:
    """ConfigError when ``[model]`` describes a network over the size limits
    (checked before the network is allocated)."""
    from sayuri_async.net.model import NetConfig
    from sayuri_async.net.weights import net_size_problem
    from sayuri_async.sayuri.weights import config_from_dict, sayuri_size_problem

    try:
        net = config_from_dict(cfg.model)
    except (TypeError, ValueError):
        return  # the trainer's own checks name the key
    problem = net_size_problem(net) if isinstance(net, NetConfig) else sayuri_size_problem(net)
    if problem:
        raise ConfigError(f"{source}: [model] describes a network of {problem}")


@answered("train")
def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    from_options(TrainOptions, {"steps": args.steps, "nproc": args.nproc})
    if args.nproc > 1 and "WORLD_SIZE" not in os.environ:
        return _launch(args.nproc, argv)
    try:
        cfg = load_config(args.config)
        if args.data is not None:
            override(cfg, "data", "dir", args.data, CommandLine({"dir": "--data"}))
        if args.workers is not None:
            override(cfg, "data", "workers", args.workers)
        if args.out is not None:
            override(cfg, "run", "out", args.out)
        if args.device is not None:
            override(cfg, "run", "device", args.device)
    except ConfigError as e:
        print(f"sayuri-async train: {e}", file=sys.stderr)
        return 2

    def named(option: str, section: str, key: str, given: object) -> str:  # the option, or the file's key
        return option if given is not None else f"{args.config}: [{section}] {key}"

    if not os.path.isdir(cfg.data.dir):
        raise UserError(f"{named('--data', 'data', 'dir', args.data)} {cfg.data.dir}: no such folder "
                        f"(self-play writes its chunks under <out>/data)")
    if args.init is not None:
        input_file(args.init, "--init", "weights file")
        check_init_encoder(args.init, cfg.data.dir, cfg.data.board_size)
    elif not args.resume and not args.auto_resume:
        _check_model_size(cfg, args.config)
    if cfg.run.device != "auto":
        check_device(cfg.run.device, named("--device", "run", "device", args.device))
    if int(os.environ.get("RANK", "0")) == 0:
        output_folder(cfg.run.out, named("--out", "run", "out", args.out), inputs=[args.init, args.config])
    from sayuri_async.train.errors import TrainError
    from sayuri_async.train.trainer import train

    resume: bool | str = True if args.resume else ("auto" if args.auto_resume else False)
    try:
        result = train(cfg, steps=args.steps, init=args.init, resume=resume,
                       refresh_window=args.refresh_window,
                       progress=False if args.no_progress else None)
    except TrainError as e:  # RunFolderInUse and NoTrainingData are usage errors (2), the rest failures (1)
        print(f"sayuri-async train: {e}", file=sys.stderr)
        return exit_status(e) or 1
    except OSError as e:  # a failing disk while writing checkpoints or exports
        print(f"sayuri-async train: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("sayuri-async train: interrupted (the last checkpoint stands)", file=sys.stderr)
        return 130
    except Terminated:
        print("sayuri-async train: terminated by SIGTERM (the last checkpoint stands)", file=sys.stderr)
        return Terminated.exit_status
    if int(os.environ.get("RANK", "0")) == 0:
        done = f"done: step {result.steps}, {result.samples} samples"
        if result.export:
            done += f"; weights {result.export}"
        print(done, file=sys.stderr)
    return 0
