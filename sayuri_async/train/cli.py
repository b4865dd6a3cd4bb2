"""``sayuri-async train``: command-line options over a training TOML file.

Vocabulary: options given here override the file's values (``--data`` sets
``[data] dir``, ``--out`` sets ``[run] out``); ``--steps`` is the step count
to *reach* (a resumed run at step 3000 with ``--steps 5000`` does 2000 more).
``--nproc K`` starts ``K`` local ranks through torchrun (``launch.train``);
under torchrun itself (``WORLD_SIZE`` set) the option is ignored. ``--nnodes
N --rdzv-endpoint HOST:PORT`` makes this machine one of N in a static job
(the same command on each), started again whole from the last checkpoint
when a machine or a connection fails (``--restarts``, ``launch.Nodes``); such
a job resumes whenever its run folder holds a checkpoint (``--auto-resume``),
so that one command starts it and starts it again. A run folder that already holds
a run is refused (exit 2) unless ``--resume`` or ``--auto-resume`` is given
(see ``trainer``'s "run folder").

``--follow`` trains without end while self-play adds chunks (``follow.py``):
rounds of ``--follow-export-every`` steps, each started once the data on
disk allows it (``--follow-reuse`` samples a position), each export
published into ``--publish`` for ``selfplay --follow-weights``. With
``--nproc K`` each round runs under torchrun (``launch.py``); ``--follow``
under torchrun itself is refused: the rounds start the ranks.

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
    nnodes: int = 1
    restarts: int = 3
    follow_reuse: float = 4.0
    follow_export_every: int | None = None
    follow_poll: float = 10.0

    def __post_init__(self) -> None:
        if self.steps is not None:
            between(self, 0, 1_000_000_000_000, "steps")
        between(self, 1, 1024, "nproc")
        between(self, 1, 4096, "nnodes")
        between(self, 0, 1000, "restarts")
        between(self, 0.001, 10_000, "follow_reuse")
        between(self, 0.01, 86_400, "follow_poll")
        if self.follow_export_every is not None:
            between(self, 1, 1_000_000_000, "follow_export_every")


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


def build_parser() -> argparse.ArgumentParser:
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
    p.add_argument("--nnodes", type=int, default=1,
                   help="machines in the job: run the same command on each, with the same --rdzv-endpoint")
    p.add_argument("--rdzv-endpoint", metavar="HOST:PORT",
                   help="with --nnodes: where the machines meet (one of them, reachable from all)")
    p.add_argument("--rdzv-id", metavar="NAME", help="with --nnodes: the job's name (default: the run folder's name)")
    p.add_argument("--restarts", type=int, default=3,
                   help="with --nnodes: whole-job restarts after a machine or connection fails, each "
                        "from the last checkpoint (default 3)")
    p.add_argument("--device", help="cpu, cuda or cuda:N; overrides [run] device")
    p.add_argument("--workers", type=int, help="data-loader processes per rank; overrides [data] workers")
    p.add_argument("--no-progress", action="store_true", help="plain log lines instead of the progress bar")
    p.add_argument("--follow", action="store_true",
                   help="train without end while self-play adds data, paced by --follow-reuse, publishing "
                        "a network every --follow-export-every steps into --publish")
    p.add_argument("--follow-reuse", type=float, default=4.0, metavar="R",
                   help="--follow: training samples per position on disk; waits when ahead (default 4)")
    p.add_argument("--follow-export-every", type=int, metavar="N",
                   help="--follow: steps between published networks (default: [run] export_every)")
    p.add_argument("--follow-poll", type=float, default=10.0, metavar="S",
                   help="--follow: seconds between looks at the data while waiting (default 10)")
    p.add_argument("--publish", metavar="DIR",
                   help="--follow: the folder selfplay --follow-weights reads (default: <out>/published)")
    return p


def nodes_of(args: argparse.Namespace, out: str):
    """The ``launch.Nodes`` of ``--nnodes`` and its rendezvous options (None
    for one machine); UserError naming the option that is missing or wrong."""
    from sayuri_async.train.launch import Nodes

    if args.nnodes == 1:
        for option, value in (("--rdzv-endpoint", args.rdzv_endpoint), ("--rdzv-id", args.rdzv_id)):
            if value is not None:
                raise UserError(f"{option}: only with --nnodes 2 or more (several machines in one job)")
        return None
    if args.rdzv_endpoint is None:
        raise UserError(f"--nnodes {args.nnodes}: give --rdzv-endpoint HOST:PORT, one machine's address that "
                        "every machine reaches (the same on all of them)")
    host, _, port = args.rdzv_endpoint.rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise UserError(f"--rdzv-endpoint {args.rdzv_endpoint!r}: expected HOST:PORT with a port 1..65535")
    job_id = args.rdzv_id or Path(out).resolve().name
    if not job_id.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise UserError(f"--rdzv-id {job_id!r}: letters, digits, '-', '_' and '.' only")
    return Nodes(count=args.nnodes, endpoint=args.rdzv_endpoint, job_id=job_id, restarts=args.restarts)


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
    args = build_parser().parse_args(argv)
    from_options(TrainOptions, {"steps": args.steps, "nproc": args.nproc, "nnodes": args.nnodes,
                                "restarts": args.restarts, "follow_reuse": args.follow_reuse,
                                "follow_export_every": args.follow_export_every, "follow_poll": args.follow_poll})
    if args.follow and "WORLD_SIZE" in os.environ:
        raise UserError("--follow under torchrun: run it alone, with --nproc K for K ranks (each round starts them)")
    if not args.follow:
        for option, given in (("--follow-export-every", args.follow_export_every), ("--publish", args.publish)):
            if given is not None:
                raise UserError(f"{option} goes with --follow")
    if args.follow and args.nnodes > 1:
        raise UserError("--follow runs on one machine (--nproc K for K ranks); --nnodes is for a fixed run")
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
        if "WORLD_SIZE" not in os.environ:  # --nproc, not the file's processes (the loop's setting)
            override(cfg, "run", "processes", args.nproc, CommandLine({"processes": "--nproc"}))
    except ConfigError as e:
        print(f"sayuri-async train: {e}", file=sys.stderr)
        return 2

    def named(option: str, section: str, key: str, given: object) -> str:  # the option, or the file's key
        return option if given is not None else f"{args.config}: [{section}] {key}"

    if not os.path.isdir(cfg.data.dir) and not args.follow:  # --follow waits for self-play to make it
        raise UserError(f"{named('--data', 'data', 'dir', args.data)} {cfg.data.dir}: no such folder "
                        f"(self-play writes its chunks under <out>/data)")
    if args.init is not None:
        input_file(args.init, "--init", "weights file")
        check_init_encoder(args.init, cfg.data.dir, cfg.data.board_size)
    elif not args.resume and not args.auto_resume:
        _check_model_size(cfg, args.config)
    if cfg.run.device != "auto":
        check_device(cfg.run.device, named("--device", "run", "device", args.device))
    nodes = nodes_of(args, cfg.run.out)
    if int(os.environ.get("RANK", "0")) == 0:
        output_folder(cfg.run.out, named("--out", "run", "out", args.out), inputs=[args.init, args.config])
    from sayuri_async.train.errors import TrainError
    from sayuri_async.train.launch import train

    resume: bool | str = True if args.resume else ("auto" if args.auto_resume or nodes else False)
    progress = False if args.no_progress else None
    try:
        if args.follow:
            from sayuri_async.train.follow import FollowSettings, follow

            settings = FollowSettings(reuse=args.follow_reuse, poll_s=args.follow_poll, publish=args.publish or "",
                                      export_every=args.follow_export_every or cfg.run.export_every,
                                      steps=args.steps)
            followed = follow(cfg, settings, init=args.init, resume=resume, progress=progress)
            print(f"done: step {followed.steps} in {followed.rounds} round(s); {len(followed.published)} "
                  f"network(s) published", file=sys.stderr)
            return 0
        result = train(cfg, steps=args.steps, init=args.init, resume=resume,
                       refresh_window=args.refresh_window, progress=progress, nodes=nodes)
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
    if result is None:
        print("done: this machine's ranks finished (rank 0, on another machine, writes the exports)",
              file=sys.stderr)
    elif int(os.environ.get("RANK", "0")) == 0:
        done = f"done: step {result.steps}, {result.samples} samples"
        if result.export:
            done += f"; weights {result.export}"
        print(done, file=sys.stderr)
    return 0

