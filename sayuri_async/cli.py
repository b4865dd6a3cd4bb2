"""The ``sayuri-async`` command: one entry point, one subcommand per job.

Each subcommand lives in the module that owns the job and exposes
``main(argv) -> int``; this file dispatches, so importing it is cheap, and
answers every error a user can cause in one place (``usererror``): one line
``sayuri-async <command>: <message>``, exit status 2 for a mistake, 1 for a
failure during a run, 128 + the signal's number when a signal ends it (130
for Ctrl-C, 143 for SIGTERM), never a traceback.
"""
from __future__ import annotations

import importlib
import sys
from importlib.metadata import PackageNotFoundError, version

from .usererror import answered

COMPILING = ("selfplay", "gtp", "loop", "match", "rate", "tune")  # commands whose first start may compile

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "selfplay": ("sayuri_async.selfplay.cli", "self-play games with the live TUI, writing training data and SGF"),
    "gtp": ("gtp.main", "speak GTP on stdin/stdout (Sabaki, Lizzie, match runners)"),
    "train": ("sayuri_async.train.cli", "train a network on self-play chunks"),
    "loop": ("sayuri_async.loop.driver", "the RL loop: self-play, train, export, repeat"),
    "match": ("sayuri_async.rating.match", "play networks or GTP engines against each other"),
    "rate": ("sayuri_async.rating.cli", "a round robin of networks (search settings) and GTP engines: Elo with intervals"),
    "tune": ("sayuri_async.selfplay.tune", "measure evals/s over a grid of batch settings"),
    "import-weights": ("sayuri_async.sayuri.cli", "convert a Sayuri weights file to ours"),
    "import-data": ("sayuri_async.sayuri.cli:data_main", "convert Sayuri training data to our chunks"),
    "export": ("sayuri_async.sayuri.export", "write a (trained) Sayuri network as a Sayuri weights file"),
    "import-sgf": ("sayuri_async.sgf_import", "turn SGF game records into training chunks"),
    "plot": ("sayuri_async.train.plot", "draw loss and learning-rate curves from a training log"),
    "cluster": ("sayuri_async.cluster.cli", "self-play on a Ray cluster feeding one trainer (needs the [cluster] extra)"),
}


def _usage() -> str:
    lines = ["usage: sayuri-async <command> [options]", "", "commands:"]
    for name, (_, text) in SUBCOMMANDS.items():
        lines.append(f"  {name:<15} {text}")
    lines.append("")
    lines.append("run `sayuri-async <command> --help` for a command's options; "
                 "`sayuri-async --version` for the version")
    return "\n".join(lines)


def package_version() -> str:
    try:
        return version("sayuri-async")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def main(argv: list[str] | None = None) -> int:
    program = argv is None  # the program's own run (not a caller's, such as a test's)
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    if argv[0] in ("-V", "--version", "version"):
        print(f"sayuri-async {package_version()}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in SUBCOMMANDS:
        print(f"sayuri-async: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module_name, _, function = SUBCOMMANDS[name][0].partition(":")  # "module" (its main) or "module:function"
    if name in COMPILING and not any(a in ("-h", "--help") for a in rest):
        from .compile_signals import end_on_signals_while_compiling
        from .numba_cache import compile_notice

        compile_notice()
        if program:  # a caller in its own process keeps its own handling: see compile_signals
            end_on_signals_while_compiling(name)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and module_name.startswith(e.name):
            print(f"sayuri-async: command {name!r} is not available in this version", file=sys.stderr)
            return 2
        raise
    command = getattr(module, function or "main")
    return int(answered(name)(command)(rest) or 0)  # a bug keeps its traceback


if __name__ == "__main__":
    sys.exit(main())
