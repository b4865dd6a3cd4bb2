"""Rate a network against a ladder of GNU Go levels; a markdown and a JSON table.

Vocabulary
----------
ladder      GNU Go at each of ``--levels`` (default 1, 5, 10), started as
            ``gnugo --mode gtp --chinese-rules --capture-all-dead --level L``
            (``sayuri_async.rating.engines``; ``--capture-all-dead``: in
            play-on it removes our dead stones, see docs/rating.md), one
            process per game in progress.
match       ``--games`` games per level (``sayuri_async.rating.ladder``, as
            ``tools/rate_gtp.py`` plays any GTP engine): colours alternate,
            each pair of games opens with its own ``--random-opening``
            random moves (seeded by ``--seed`` plus the level, all
            distinct), two passes counted by the ``agreed`` rule. Our
            network searches a fixed ``--playouts`` per move (a playout
            budget, not a clock; the table gives the seconds per move this
            took on this machine).
table       per level: games, wins-losses-draws, win rate, its 95% Wilson
            interval, the Elo difference and its interval, our seconds per
            move, and how games ended. ``<out>.md`` and ``<out>.json`` are
            rewritten (atomically) after every game; a level still being
            played is marked so.
resume      run the same command again and the games ``<out>.json`` holds
            are counted, not played again. Other settings (network,
            playouts, seed, ...) over an existing ``<out>.json`` are refused
            unless ``--fresh`` is given.

Usage::

    python tools/rate_gnugo.py --weights weights/9x9/gnugo9c-4x48.safetensors \
        --levels 1,5,10 --games 100 --playouts 200 --out logs/strength/rating

The last line printed is the JSON of the whole table.
"""
from __future__ import annotations

import argparse
import os
import sys

from sayuri_async.rating.engines import gnugo_binary, gnugo_command
from sayuri_async.rating.ladder import Layout, Opponent, add_network_arguments, rate

LAYOUT = Layout(list_key="levels", row_key="level", column="GNU Go level", title="GNU Go",
                engines_note="GNU Go with `--chinese-rules --capture-all-dead`",
                settings=("network", "board", "komi", "playouts", "random_opening", "seed", "scoring"),
                row_command=False)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_network_arguments(p)
    p.add_argument("--levels", default="1,5,10", help="comma-separated GNU Go levels (default 1,5,10)")
    p.add_argument("--gnugo", default=gnugo_binary())
    args = p.parse_args(argv)
    if not os.access(args.gnugo, os.X_OK):
        print(f"rate_gnugo: GNU Go not found at {args.gnugo!r} (apt-get install gnugo)", file=sys.stderr)
        return 2
    try:
        levels = [int(x) for x in args.levels.split(",")]
    except ValueError:
        print(f"rate_gnugo: --levels {args.levels!r} is not a comma-separated list of levels", file=sys.stderr)
        return 2
    opponents = [Opponent(level, gnugo_command(level, args.gnugo), f"gnugo-l{level}", args.seed + level)
                 for level in levels]
    return rate(args, "rate_gnugo", opponents, LAYOUT)


if __name__ == "__main__":
    sys.exit(main())
