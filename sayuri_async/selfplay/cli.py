"""``sayuri-async selfplay``: command-line options over the config file.

Options given on the command line override the file's ``[selfplay]`` table,
with the same range checks (``SelfplayConfig.__post_init__``), an error
naming the option. Without ``--weights`` the random backend plays (no GPU
work). Ctrl-C or SIGTERM stops the run cleanly (the games in flight end,
every file is whole) and the command exits 130 or 143 (``usererror``'s
signal rule); ``q`` in the live view and ``--num-games`` reached exit 0.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..configfile import ConfigError
from ..usererror import ArgumentParser, UserError, answered, check_device, input_file, output_folder, stopped_by
from .config import add_device_model_options, device_model_overrides, load_selfplay_config

def int_or_auto(text: str) -> int | str:
    """An option's value: a whole number, or "auto"."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number or auto, not {text!r}") from None


DEFAULT_CONFIG = Path(__file__).resolve().parents[2] / "configs" / "selfplay-9x9.toml"


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="sayuri-async selfplay", description="Self-play games with a live view.")
    p.add_argument("--config", help="TOML config (default: configs/selfplay-9x9.toml when present)")
    p.add_argument("--weights", help="network weights (.safetensors); random network when absent")
    p.add_argument("--out", help="output folder (data/ and sgf/ go under it)")
    p.add_argument("--num-games", type=int, help="games to play (0: until Ctrl-C)")
    p.add_argument("--parallel-games", type=int, help="games in flight per process")
    p.add_argument("--batch-size", type=int_or_auto, help="network batch size per process, or auto (the smallest "
                                                        "bucket within 5%% of the device's best sustained rate)")
    p.add_argument("--max-batch-size", type=int, help="the largest batch the backend is built for, and the B key's "
                                                      "limit (default: max(4 x batch size, 256), at most 1024)")
    p.add_argument("--timeout-ms", type=float, help="flush a partial batch after this wait")
    p.add_argument("--playouts", type=int, help="playouts per full search")
    p.add_argument("--board-size", type=int, action="append", dest="board_sizes", help="board size (repeatable)")
    p.add_argument("--procs", type=int_or_auto, help="engine processes per device, or auto (on a CPU: processes "
                                                     "and torch threads from a short measurement)")
    p.add_argument("--device", help="cpu, cuda:0, a list like cuda:0,cuda:1, or model (the device model: a modeled "
                                    "GPU, see --device-model)")
    add_device_model_options(p)
    p.add_argument("--follow-weights", metavar="DIR",
                   help="play the newest network in DIR (*.safetensors, by modification time then name), "
                        "looking again every --follow-interval seconds and swapping it in between batches")
    p.add_argument("--follow-interval", type=float, metavar="S", help="seconds between looks into DIR (default 5)")
    p.add_argument("--seed", type=int, help="random seed (0: fresh)")
    p.add_argument("--no-tui", action="store_true", help="plain progress lines instead of the live view")
    return p


@answered("selfplay")
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    config = args.config or (str(DEFAULT_CONFIG) if DEFAULT_CONFIG.exists() else None)
    overrides = {
        "weights": args.weights, "out": args.out, "num_games": args.num_games,
        "parallel_games": args.parallel_games, "batch_size": args.batch_size, "timeout_ms": args.timeout_ms,
        "max_batch_size": args.max_batch_size,
        "playouts": args.playouts, "board_sizes": args.board_sizes, "procs": args.procs,
        "device": args.device, "seed": args.seed, **device_model_overrides(args),
        "follow_weights": args.follow_weights, "follow_interval_s": args.follow_interval,
    }
    try:
        cfg = load_selfplay_config(config, overrides)
    except ConfigError as e:
        print(f"sayuri-async selfplay: {e}", file=sys.stderr)
        return 2

    def named(key: str, given: object) -> str:  # the option, or the file's key it came from
        return f"--{key}" if given is not None or config is None else f"{config}: [selfplay] {key}"

    if cfg.weights:
        input_file(cfg.weights, named("weights", args.weights), "weights file")
        from ..net.weights import refuse_board_sizes

        sizes_from = "--board-size" if args.board_sizes else (f"{config}: [selfplay] board_sizes" if config
                                                                else "the default board size")
        refuse_board_sizes(cfg.weights, cfg.board_sizes, sizes_from)
    if cfg.follow_weights and Path(cfg.follow_weights).exists() and not Path(cfg.follow_weights).is_dir():
        where = "--follow-weights" if args.follow_weights is not None else f"{config}: [selfplay] follow_weights"
        raise UserError(f"{where} {cfg.follow_weights}: not a folder (it holds the networks to follow)")
    check_device(cfg.device, named("device", args.device), allow=(r"model(:\d+)?",))
    output_folder(cfg.out, named("out", args.out), inputs=[cfg.weights, config])
    from .auto import resolve
    from .report import PlainReporter
    from .runner import SelfplayError, run_selfplay

    choice = resolve(cfg)  # batch_size / procs = "auto": measured now, so the view starts with the values picked
    cfg = choice.cfg
    if choice.line:
        print(choice.line, file=sys.stderr, flush=True)

    reporter = None
    if not args.no_tui and sys.stdout.isatty():
        try:
            from .tui import TuiReporter
        except ImportError:
            TuiReporter = None
        if TuiReporter is not None:
            reporter = TuiReporter(cfg, note=choice.line)
    if reporter is None:
        devices = len([d for d in cfg.device.split(",") if d.strip()]) or 1
        reporter = PlainReporter(devices=devices, leaves_per_await=cfg.search.leaves_per_await)
        net = cfg.weights or ("random network (no weights: no device work)" if not cfg.device.startswith("model")
                              else f"device model {cfg.device_model}")
        if cfg.follow_weights:
            net = f"the newest network in {cfg.follow_weights} (looked for every {cfg.follow_interval_s:g}s)"
        print(f"self-play: {net} on {cfg.device}, boards {cfg.board_sizes}, {cfg.parallel_games} games x "
              f"{cfg.procs} proc(s), batch {cfg.batch_size}, playouts {cfg.playouts}, out {cfg.out}", flush=True)
    try:
        run_selfplay(cfg, reporter, on_signal=stopped_by, measured=choice.measured)
    except SelfplayError as e:  # a failure during the run (a full disk, a crashed engine)
        print(f"sayuri-async selfplay: {e}", file=sys.stderr)
        return 1
    return 0
