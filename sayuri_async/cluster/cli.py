"""``sayuri-async cluster``: self-play on a Ray cluster feeding one trainer.

Commands
--------
head        start this machine as the cluster's head (``nodes.py``'s defaults).
join        join a head and stay in the cluster until the node leaves.
stop        end the nodes ``head`` and ``join`` started on this machine, and
            no other Ray process (``noderecord``).
run         the fleet driver (``fleet.py``) on a machine of the cluster,
            normally the head: engines on every node, chunks into
            ``--workspace``, the trainer, the live view (rich on a
            terminal, plain blocks of lines otherwise). Ctrl-C, SIGTERM or
            ``<workspace>/STOP`` stops it with whole files only.

Every command but ``stop`` needs Ray (``pip install 'sayuri-async[cluster]'``);
without it each says so in one line (exit 2). Options and addresses are
checked before any Ray process starts (``addresses``): a mistake is one
line, within seconds. Ray's own lines go to a log file that the command
names at start: the node's ``ray.log`` (``noderecord``), the driver's
``<workspace>/logs/ray.log`` (``raystart``).
"""
from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
from pathlib import Path

from dataclasses import dataclass

from ..configfile import ConfigError, between, from_options
from ..usererror import ArgumentParser, UserError, answered, input_file, output_folder, stopped_by
from . import NAMESPACE, import_ray
from .addresses import check_head
from .nodes import DEFAULT_PORT, mismatch_line, start_head, start_join, stop_nodes, use_one_auth_mode
from .raystart import connect_driver

DRIVER_LOG = "logs/ray.log"  # Ray's own lines in the driver, under the workspace


@dataclass
class NodeOptions:
    """``head`` and ``join``'s numbers, range-checked as every setting is
    (``configfile``): an error names the option."""
    port: int = DEFAULT_PORT
    num_cpus: int | None = None
    num_gpus: int | None = None

    def __post_init__(self) -> None:
        between(self, 1, 65_535, "port")
        for key in ("num_cpus", "num_gpus"):
            if getattr(self, key) is not None:
                between(self, 0, 100_000, key)


@dataclass
class RunOptions:
    """``run``'s numbers (see NodeOptions)."""
    cpu_engines: int = 1
    poll: float = 5.0
    view_every: float = 5.0

    def __post_init__(self) -> None:
        between(self, 0, 1024, "cpu_engines")
        between(self, 0.1, 3600, "poll", "view_every")


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="sayuri-async cluster", description="Self-play on a Ray cluster feeding one trainer.")
    sub = p.add_subparsers(dest="action", required=True, metavar="{head,join,run,stop}")
    h = sub.add_parser("head", help="start this machine as the head node")
    h.add_argument("--bind", required=True, metavar="ADDR",
                   help="this machine's address on the trusted network (Ray listens there; it has no authentication)")
    h.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"the head's port (default {DEFAULT_PORT})")
    h.add_argument("--block", action="store_true", help="stay in the foreground until the node stops")
    j = sub.add_parser("join", help="join a head; runs until this node leaves")
    j.add_argument("address", metavar="HEAD:PORT", help="the head's address, as `cluster head` printed it")
    j.add_argument("--bind", required=True, metavar="ADDR", help="this machine's address on the trusted network")
    for q in (h, j):
        q.add_argument("--num-cpus", type=int, help="logical CPUs this node offers (default: its cores)")
        q.add_argument("--num-gpus", type=int, help="GPUs this node offers (default: those Ray finds)")
    sub.add_parser("stop", help="end the nodes `head` and `join` started on this machine (no other Ray process)")
    r = sub.add_parser("run", help="run the fleet: engines on every node, the trainer, the live view")
    r.add_argument("--address", required=True, help="the cluster's address (HEAD:PORT, or auto on a node of it)")
    r.add_argument("--config", required=True, help="self-play TOML ([selfplay], [search]) for every engine")
    r.add_argument("--workspace", required=True, help="folder of data/, weights/, train/ on this machine")
    r.add_argument("--train-config", help="training TOML: run `train --follow` here (without it, only the "
                                          "networks that appear in <workspace>/weights are published)")
    r.add_argument("--train-args", default="", metavar="ARGS",
                   help="more options for the trainer, in one string, e.g. \"--steps 100000 --follow-reuse 2 "
                        "--nproc 8\" (the fleet sets --config, --data, --out, --follow, --auto-resume, --publish)")
    r.add_argument("--spool", help="each node's local folder for finished files (default: sayuri-async-spool in the "
                                   "temporary folder of each node: its RAY_TMPDIR, else TMPDIR, else /tmp)")
    r.add_argument("--cpu-engines", type=int, default=1, help="engines on a node without GPUs (default 1)")
    r.add_argument("--poll", type=float, default=5.0, help="seconds between engines' looks for a new network")
    r.add_argument("--view-every", type=float, default=5.0, help="seconds between blocks of the plain view")
    r.add_argument("--no-tui", action="store_true", help="plain blocks of lines instead of the live view")
    return p


FLEET_SETS = ("--config", "--data", "--out", "--follow", "--auto-resume", "--resume", "--publish", "--init",
              "--nnodes", "--no-progress")


def train_args(args) -> list[str]:
    """``--train-args`` as the trainer's arguments, checked by ``train``'s own
    parser, so that a mistake is one line before anything starts."""
    if not args.train_args:
        return []
    if args.train_config is None:
        raise UserError("--train-args goes with --train-config")
    try:
        extra = shlex.split(args.train_args)
    except ValueError as e:
        raise UserError(f"--train-args: {e}") from None
    taken = [a.split("=")[0] for a in extra if a.split("=")[0] in FLEET_SETS]
    if taken:
        raise UserError(f"--train-args: {taken[0]} is the fleet's to set")
    from ..train.cli import build_parser as train_parser

    try:
        train_parser().parse_args(["--config", args.train_config, *extra])
    except UserError as e:
        raise UserError(f"--train-args: {e}") from None
    return extra


def _check_run(args) -> None:
    from_options(RunOptions, {"cpu_engines": args.cpu_engines, "poll": args.poll, "view_every": args.view_every})
    input_file(args.config, "--config", "self-play config")
    if args.train_config is not None:
        input_file(args.train_config, "--train-config", "training config")
    train_args(args)
    output_folder(args.workspace, "--workspace", inputs=[args.config, args.train_config])


@answered("cluster")
def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        parser.error(f"unrecognized arguments: {argv[0]} (the first argument is head, join, run or stop)")
    args = parser.parse_args(argv)
    if args.action == "run":
        return run(args)
    if args.action == "stop":
        return stop_nodes()
    from_options(NodeOptions, {"port": getattr(args, "port", None), "num_cpus": args.num_cpus,
                               "num_gpus": args.num_gpus})
    import_ray()  # one line saying what to install, before ray start's own error
    if args.action == "head":
        return start_head(args.bind, args.port, args.num_cpus, args.num_gpus, args.block)
    return start_join(args.address, args.bind, args.num_cpus, args.num_gpus)


def run(args) -> int:
    from ..selfplay.config import load_selfplay_config

    _check_run(args)
    try:
        cfg = load_selfplay_config(args.config)
    except ConfigError as e:
        raise UserError(str(e)) from None
    ray = import_ray()
    from .fleet import Fleet, FleetSettings
    from .view import ClusterView

    settings = FleetSettings(workspace=Path(args.workspace), selfplay=cfg, spool=args.spool,
                             train_config=args.train_config, train_args=train_args(args),
                             cpu_engines=args.cpu_engines, poll_s=args.poll)
    if not args.no_tui and sys.stdout.isatty():
        from .tui import ClusterTui

        view: ClusterView = ClusterTui(leaves_per_await=cfg.search.leaves_per_await)
    else:
        view = ClusterView(every=args.view_every, leaves_per_await=cfg.search.leaves_per_await)
    if args.address != "auto":
        check_head(args.address, "--address")
    use_one_auth_mode()
    ray_log = Path(args.workspace) / DRIVER_LOG
    try:
        connect_driver(ray, args.address, NAMESPACE, ray_log)
    except (ConnectionError, RuntimeError, ValueError) as e:
        why = mismatch_line(str(e)) or " ".join(str(e).split())[:300]
        raise UserError(f"--address {args.address}: cannot join the cluster: {why} (Ray's lines are in "
                        f"{ray_log})") from None
    view.event(f"Ray's own lines go to {ray_log}")
    fleet = Fleet(settings, ray, view, say=lambda text: print(text, file=sys.stderr, flush=True))

    def on_signal(signum: int, _frame) -> None:
        stopped_by(signum)
        fleet.stop_reason = signal.Signals(signum).name

    old = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        end = fleet.run()
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        ray.shutdown()
    if end.error is not None:
        print(f"sayuri-async cluster run: {end.error}", file=sys.stderr)
        return 1
    return 0
