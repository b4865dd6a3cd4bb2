"""The ``sayuri-async`` command: one entry point, one subcommand per job.

Each subcommand lives in the module that owns the job and exposes
``main(argv) -> int``; this file only dispatches, so importing it is cheap.
"""
from __future__ import annotations

import importlib
import sys

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "selfplay": ("sayuri_async.selfplay.cli", "self-play games with the live TUI, writing training data and SGF"),
    "gtp": ("gtp.main", "speak GTP on stdin/stdout (Sabaki, Lizzie, match runners)"),
    "train": ("sayuri_async.train.cli", "train a network on self-play chunks"),
    "loop": ("sayuri_async.loop", "the RL loop: self-play, train, export, repeat"),
    "match": ("sayuri_async.match", "play networks or GTP engines against each other"),
    "tune": ("sayuri_async.selfplay.tune", "measure evals/s over a grid of batch settings"),
    "bench": ("sayuri_async.bench", "print the engine's performance figures"),
    "import-weights": ("sayuri_async.sayuri.cli", "convert a Sayuri weights file to ours"),
    "import-data": ("sayuri_async.sayuri.data", "convert Sayuri training data to our chunks"),
    "import-sgf": ("sayuri_async.sgf_import", "turn SGF game records into training chunks"),
    "plot": ("sayuri_async.train.plot", "draw loss and learning-rate curves from a training log"),
}


def _usage() -> str:
    lines = ["usage: sayuri-async <command> [options]", "", "commands:"]
    for name, (_, text) in SUBCOMMANDS.items():
        lines.append(f"  {name:<15} {text}")
    lines.append("")
    lines.append("run `sayuri-async <command> --help` for a command's options")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        print(f"sayuri-async: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module_name = SUBCOMMANDS[name][0]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and module_name.startswith(e.name):
            print(f"sayuri-async: command {name!r} is not available in this version", file=sys.stderr)
            return 2
        raise
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
