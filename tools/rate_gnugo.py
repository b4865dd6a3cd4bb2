"""Rate a network against a ladder of GNU Go levels; a markdown and a JSON table.

Vocabulary
----------
ladder      GNU Go at each of ``--levels`` (default 1, 5, 10), started as
            ``gnugo --mode gtp --chinese-rules --capture-all-dead --level L``
            (``--capture-all-dead``: in play-on it removes our dead stones,
            see docs/rating.md), one process per game in progress.
match       ``--games`` games per level through ``sayuri_async.match.run_match``:
            colours alternate, each pair of games opens with its own
            ``--random-opening`` random moves (seeded, all distinct), two
            passes counted by the ``agreed`` rule (dead stones both sides
            name are removed; a disagreement is played on under
            Tromp-Taylor). Our network searches a fixed ``--playouts`` per
            move (a playout budget, not a clock; the table gives the
            seconds per move this took on this machine).
table       per level: games, wins-losses-draws, win rate, its 95% Wilson
            interval, the Elo difference and its interval (the Elo of the
            Wilson bounds), our seconds per move, and how games ended.
            ``<out>.md`` and ``<out>.json`` are rewritten (atomically) after
            every game; a level still being played is marked so.
resume      the JSON keeps every game's figures (``per_game``); run the same
            command again and the games it holds are counted, not played
            again (the openings are seeded, so game k is the same game).
            Other settings (network, playouts, seed, ...) over an existing
            ``<out>.json`` are refused unless ``--fresh`` is given.

Usage::

    python tools/rate_gnugo.py --weights weights/9x9/gnugo9c-4x48.safetensors \
        --levels 1,5,10 --games 100 --playouts 200 --out logs/strength/rating

The last line printed is the JSON of the whole table.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from sayuri_async.fileio import write_text_atomic
from sayuri_async.match import GtpPlayer, MatchResult, make_player, run_match

GNUGO = os.environ.get("GNUGO") or shutil.which("gnugo") or "/usr/games/gnugo"


def gnugo_command(level: int, binary: str = GNUGO) -> str:
    return f"{binary} --mode gtp --chinese-rules --capture-all-dead --level {level}"


def _elo(x: float | None, infinite: str) -> str:
    """An Elo figure; None (an infinite one, as the JSON holds it) prints as ``infinite``."""
    return infinite if x is None else f"{round(x) + 0:+d}"  # + 0: no "-0"


def markdown(rows: list[dict], header: dict) -> str:
    lines = [f"# {header['network']} against GNU Go ({header['board']}x{header['board']}, komi {header['komi']:g})",
             "",
             f"{header['playouts']} playouts a move, {header['random_opening']} random opening moves per game pair "
             f"(seed {header['seed']}), scoring `{header['scoring']}`, GNU Go with `--chinese-rules "
             f"--capture-all-dead`; {header['date']}.",
             "",
             "| GNU Go level | games | W-L-D | win rate | 95% interval (Wilson) | Elo | Elo 95% interval | s/move | ended by |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["games"] == 0:
            continue
        lo, hi = r["wilson95"]
        e_lo, e_hi = r["elo95"]
        ended = ", ".join(f"{k} {v}" for k, v in r["reasons"].items())
        level = f"{r['level']}" if r.get("complete", True) else f"{r['level']} (in progress)"
        lines.append(f"| {level} | {r['games']} | {r['wins']}-{r['losses']}-{r['draws']} | {r['win_rate']:.1%} "
                     f"| {lo:.1%} .. {hi:.1%} | {_elo(r['elo'], '-inf' if r['win_rate'] < 0.5 else '+inf')} "
                     f"| {_elo(e_lo, '-inf')} .. {_elo(e_hi, '+inf')} "
                     f"| {r['seconds_per_move'] if r['seconds_per_move'] is not None else '-'} | {ended} |")
    return "\n".join(lines) + "\n"


SETTINGS = ("network", "board", "komi", "playouts", "random_opening", "seed", "scoring")


@dataclass
class EarlierLevel:
    result: MatchResult  # its games (``per_game``), counted again on resume
    seconds: float  # wall time the earlier runs spent on the level


def earlier_games(path: Path, header: dict) -> dict[int, EarlierLevel]:
    """The games of an earlier run of the same settings written at ``path``,
    per level; none if there is no such file. ValueError (a one-line
    reason) if it holds another run's settings or is not the tool's JSON."""
    if not path.is_file():
        return {}
    try:
        old = json.loads(path.read_text())
        differ = [k for k in SETTINGS if old.get(k) != header[k]]
        levels = old["levels"]
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{path}: not a rating table of this tool ({e}); move it away or give --fresh") from None
    if differ:
        raise ValueError(f"{path} holds games of other settings ({', '.join(differ)} differ); "
                         f"use another --out or give --fresh to start over")
    out: dict[int, EarlierLevel] = {}
    for row in levels:
        out[int(row["level"])] = EarlierLevel(MatchResult.from_row(row), float(row.get("seconds", 0.0)))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--weights", required=True, help="weights file, or 'random'")
    p.add_argument("--levels", default="1,5,10", help="comma-separated GNU Go levels (default 1,5,10)")
    p.add_argument("--games", type=int, default=20, help="games per level")
    p.add_argument("--playouts", type=int, default=100, help="our playouts per move")
    p.add_argument("--board", type=int, default=9)
    p.add_argument("--komi", type=float, default=7.5)
    p.add_argument("--random-opening", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--scoring", default="agreed")
    p.add_argument("--concurrency", type=int, default=2, help="games at once")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--device", default="cpu")
    p.add_argument("--torch-threads", type=int, default=1,
                   help="torch threads for our network (default 1: on a shared or loaded CPU, more threads "
                        "than free cores made searches several times slower)")
    p.add_argument("--gnugo", default=GNUGO)
    p.add_argument("--sgf", default="", help="folder for the games (a subfolder per level)")
    p.add_argument("--out", required=True, help="table path without suffix: OUT.md and OUT.json")
    p.add_argument("--fresh", action="store_true", help="start over even if OUT.json holds games of other settings")
    args = p.parse_args(argv)
    if not os.access(args.gnugo, os.X_OK):
        print(f"rate_gnugo: GNU Go not found at {args.gnugo!r} (apt-get install gnugo)", file=sys.stderr)
        return 2
    if args.weights != "random" and not Path(args.weights).is_file():
        print(f"rate_gnugo: --weights {args.weights}: no such file", file=sys.stderr)
        return 2
    try:
        levels = [int(x) for x in args.levels.split(",")]
    except ValueError:
        print(f"rate_gnugo: --levels {args.levels!r} is not a comma-separated list of levels", file=sys.stderr)
        return 2
    if args.torch_threads >= 1:
        import torch

        torch.set_num_threads(args.torch_threads)
    player_args = argparse.Namespace(device=args.device, batch_size=args.batch_size, playouts=args.playouts,
                                     gumbel=False, resign=0.0, opening_moves=0)
    net = make_player(args.weights, player_args)
    header = {"network": args.weights, "board": args.board, "komi": args.komi, "playouts": args.playouts,
              "random_opening": args.random_opening, "seed": args.seed, "scoring": args.scoring,
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    out = Path(args.out)
    try:
        earlier = {} if args.fresh else earlier_games(out.with_suffix(".json"), header)
    except ValueError as e:
        print(f"rate_gnugo: {e}", file=sys.stderr)
        return 2
    rows: list[dict] = []
    out.parent.mkdir(parents=True, exist_ok=True)

    def write_tables(current: dict | None = None) -> None:
        shown = rows + ([current] if current is not None else [])
        write_text_atomic(out.with_suffix(".json"), json.dumps({**header, "levels": shown}, indent=1) + "\n")
        write_text_atomic(out.with_suffix(".md"), markdown(shown, header))

    async def ladder() -> None:
        for level in levels:
            gnugo = GtpPlayer(gnugo_command(level, args.gnugo))
            gnugo.name = f"gnugo-l{level}"
            sgf_dir = Path(args.sgf) / f"level-{level}" if args.sgf else None
            if sgf_dir is not None:
                sgf_dir.mkdir(parents=True, exist_ok=True)

            done = earlier.get(level)
            t0 = time.monotonic()
            seconds0 = done.seconds if done is not None else 0.0

            def level_row(res: MatchResult, complete: bool) -> dict:
                return {"level": level, **res.summary(per_game=True), "complete": complete,
                        "seconds": round(seconds0 + time.monotonic() - t0, 1)}

            def progress(k: int, res: MatchResult, level: int = level) -> None:
                print(f"  level {level}: game {res.games}/{args.games}  {res.wins}-{res.losses}-{res.draws}",
                      file=sys.stderr, flush=True)
                write_tables(level_row(res, False))

            res = await run_match(net, gnugo, args.games, args.board, args.komi, args.concurrency, sgf_dir,
                                  progress, scoring=args.scoring, random_opening=args.random_opening,
                                  seed=args.seed + level, done=done.result if done is not None else None)
            row = level_row(res, True)
            rows.append(row)
            write_tables()
            print(f"level {level}: {res.wins}-{res.losses}-{res.draws}, win rate {res.win_rate:.1%}, "
                  f"Elo {_elo(row['elo'], '-inf' if res.win_rate < 0.5 else '+inf')}", flush=True)

    asyncio.run(ladder())
    print(markdown(rows, header))
    print(json.dumps({**header, "levels": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
