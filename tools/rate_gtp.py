"""Rate a network against any GTP engines, each with its own time settings; a markdown and a JSON table.

Vocabulary
----------
opponent    ``--engine [NAME=]COMMAND`` (repeatable): a GTP engine command
            line, its own time settings on it (GNU Go's ``--level``,
            Pachi's ``-t``), named NAME or after its program;
            ``--pachi T`` (repeatable) adds the Pachi that
            ``tools/get_pachi.sh`` built, ``-t T -r chinese
            threads=1,pondering=0,pass_all_alive``, named ``pachi-Ns`` (``-t N``) or ``pachi-Npo`` (``-t =N``)
            (``sayuri_async.rating.engines``: ``-t =N`` is N playouts a
            move, ``-t 2`` about one second of wall time a move, ``-t 1``
            only about 0.1 s). One engine process per game in progress.
our side    the network searches a fixed ``--playouts`` a move (a budget,
            not a clock: docs/strength.md, "The budget: one second a move,
            as a playout count"), PUCT or ``--search gumbel``, keeping its
            tree between moves unless ``--no-reuse-tree``.
match       ``--games`` games against each opponent in turn
            (``sayuri_async.rating.ladder``, as ``tools/rate_gnugo.py``
            plays GNU Go): colours alternate, each pair of games opens with
            its own ``--random-opening`` random moves, the same openings
            for every opponent (``--seed``); two passes are counted by the
            ``agreed`` rule (docs/rating.md: the dead stones both sides
            name, GTP ``final_status_list dead``, are removed; a
            disagreement is played on under Tromp-Taylor).
table       per opponent: games, W-L-D, win rate with its 95% Wilson
            interval, Elo with its interval, our seconds a move, how games
            ended, and its command. ``OUT.md`` and ``OUT.json`` are
            rewritten (atomically) after every game.
resume      the same command run again counts the games ``OUT.json`` holds
            and plays the rest; other settings, or another command under an
            opponent's name, are refused unless ``--fresh`` is given.

Usage::

    tools/get_pachi.sh
    OMP_NUM_THREADS=1 python tools/rate_gtp.py --weights weights/9x9/gnugo9c-reh2-4x48.safetensors \
        --playouts 750 --komi 7 --pachi 2 --games 100 --out logs/strength/pachi-p750

The last line printed is the JSON of the whole table.
"""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from sayuri_async.rating.gtpclient import probe_engine
from sayuri_async.rating.engines import pachi_binary, pachi_command
from sayuri_async.rating.ladder import Layout, Opponent, add_network_arguments, rate
from sayuri_async.usererror import UserError

LAYOUT = Layout(list_key="opponents", row_key="opponent", column="opponent", title="GTP engines",
                engines_note="each engine with the command below",
                settings=("network", "board", "komi", "playouts", "search", "reuse_tree", "random_opening", "seed",
                          "scoring"),
                row_command=True)


def opponents_of(engines: list[str], pachi: list[str], seed: int) -> list[Opponent]:
    """The opponents the options name; ValueError (one line) for a bad one."""
    out: list[Opponent] = []
    for spec in engines:
        name, sep, command = spec.partition("=")
        if not sep or " " in name or not name:  # no NAME= prefix: a command line named after its program
            name, command = "", spec
        try:
            argv = shlex.split(command)
        except ValueError as e:
            raise ValueError(f"--engine {spec!r}: not a command line ({e})") from None
        if not argv:
            raise ValueError(f"--engine {spec!r}: an empty command line")
        out.append(Opponent(name or Path(argv[0]).name, command, name or Path(argv[0]).name, seed))
    for t in pachi:
        if pachi_binary() is None:
            raise ValueError("--pachi: Pachi is not built (run tools/get_pachi.sh, or set PACHI)")
        name = f"pachi-{t[1:]}po" if t.startswith("=") else f"pachi-{t}s"
        out.append(Opponent(name, pachi_command(t), name, seed))
    names = [o.name for o in out]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"--engine: the name {twice[0]!r} is given twice (name them: --engine NAME=COMMAND)")
    if not out:
        raise ValueError("give at least one opponent (--engine COMMAND or --pachi T)")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_network_arguments(p)
    p.add_argument("--engine", action="append", default=[], metavar="[NAME=]COMMAND",
                   help="an opponent: a GTP command line with its own time settings (repeatable)")
    p.add_argument("--pachi", action="append", default=[], metavar="T",
                   help="an opponent: the built Pachi with time setting -t T ('=N': N playouts a move; "
                        "'2': one second a move) (repeatable)")
    p.add_argument("--search", choices=("puct", "gumbel"), default="puct", help="our root search")
    p.add_argument("--no-reuse-tree", action="store_true", help="our search starts every move from a fresh tree")
    args = p.parse_args(argv)
    try:
        opponents = opponents_of(args.engine, args.pachi, args.seed)
        for o in opponents:
            probe_engine(o.command)
    except (ValueError, UserError) as e:
        print(f"rate_gtp: {e}", file=sys.stderr)
        return 2
    reuse = not args.no_reuse_tree
    extra = {"search": args.search, "reuse_tree": reuse}
    return rate(args, "rate_gtp", opponents, LAYOUT, extra, gumbel=args.search == "gumbel", reuse_tree=reuse)


if __name__ == "__main__":
    sys.exit(main())
