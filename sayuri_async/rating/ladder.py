"""One network against a list of GTP opponents: a resumable markdown and JSON table.

Vocabulary
----------
opponent    a GTP engine command line with its row's key (GNU Go: its
            level; others: a name) and the seed of its openings; one process
            per game in progress.
match       ``games`` games against each opponent in turn through
            ``sayuri_async.rating.match.run_match``: colours alternating, each pair
            of games opening with its own random moves (seeded, all
            distinct), two passes counted by the ``scoring`` rule
            (docs/rating.md). The network searches a fixed number of
            playouts a move (a budget, not a clock; the table gives the
            seconds a move this took).
table       per opponent: games, wins-losses-draws, win rate, its 95%
            Wilson interval, the Elo difference and its interval (the Elo of
            the Wilson bounds), our seconds per move, how games ended.
            ``OUT.md`` and ``OUT.json`` are rewritten (atomically) after
            every game; an opponent still being played is marked so.
Layout      what a tool's table is called: the JSON's list of rows
            (``levels`` / ``opponents``), each row's key field (``level`` /
            ``opponent``), the markdown's title and the settings an earlier
            table must share to be continued.
resume      the JSON keeps every game's figures (``per_game``): the same
            command run again counts the games it holds and plays the rest
            (the openings are seeded, so game k is the same game). A table
            of other settings, or a row of another opponent command, is
            refused in one line (``ValueError``) unless the tool is told to
            start afresh.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..fileio import write_text_atomic
from .match import MatchResult, Player, run_match
from .referee import GtpPlayer
from ..usererror import UserError

__all__ = ["EarlierRow", "Layout", "Opponent", "add_network_arguments", "earlier_games", "elo_text", "markdown",
           "play_ladder", "rate"]


@dataclass
class Opponent:
    key: int | str  # the row's key: GNU Go's level, or a name
    command: str  # the GTP command line
    name: str  # its name in the games (the match's B)
    seed: int  # the seed of its openings


@dataclass
class Layout:
    list_key: str  # the JSON's list of rows
    row_key: str  # each row's key field
    column: str  # the markdown's first column
    title: str  # "# {network} against {title} ..."
    engines_note: str  # how the opponents were started, for the line under the title
    settings: tuple[str, ...]  # header keys an earlier table must share
    row_command: bool  # rows hold their opponent's command (a changed command is refused)


@dataclass
class EarlierRow:
    result: MatchResult  # its games (``per_game``), counted again on resume
    seconds: float  # wall time the earlier runs spent on the opponent


def elo_text(x: float | None, infinite: str) -> str:
    """An Elo figure; None (an infinite one, as the JSON holds it) prints as ``infinite``."""
    return infinite if x is None else f"{round(x) + 0:+d}"  # + 0: no "-0"


def search_note(header: dict) -> str:
    """`` (PUCT, tree reuse on)`` when the table says how our side searched."""
    if "search" not in header:
        return ""
    search = "Gumbel" if header["search"] == "gumbel" else "PUCT"
    return f" ({search}, tree reuse {'on' if header.get('reuse_tree', True) else 'off'})"


def markdown(rows: list[dict], header: dict, layout: Layout) -> str:
    lines = [f"# {header['network']} against {layout.title} ({header['board']}x{header['board']}, "
             f"komi {header['komi']:g})",
             "",
             f"{header['playouts']} playouts a move{search_note(header)}, {header['random_opening']} random "
             f"opening moves per game pair (seed {header['seed']}), scoring `{header['scoring']}`, "
             f"{layout.engines_note}; {header['date']}.",
             "",
             f"| {layout.column} | games | W-L-D | win rate | 95% interval (Wilson) | Elo | Elo 95% interval "
             f"| s/move | ended by |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["games"] == 0:
            continue
        lo, hi = r["wilson95"]
        e_lo, e_hi = r["elo95"]
        ended = ", ".join(f"{k} {v}" for k, v in r["reasons"].items())
        key = f"{r[layout.row_key]}" if r.get("complete", True) else f"{r[layout.row_key]} (in progress)"
        lines.append(f"| {key} | {r['games']} | {r['wins']}-{r['losses']}-{r['draws']} | {r['win_rate']:.1%} "
                     f"| {lo:.1%} .. {hi:.1%} | {elo_text(r['elo'], '-inf' if r['win_rate'] < 0.5 else '+inf')} "
                     f"| {elo_text(e_lo, '-inf')} .. {elo_text(e_hi, '+inf')} "
                     f"| {r['seconds_per_move'] if r['seconds_per_move'] is not None else '-'} | {ended} |")
    if layout.row_command:
        lines += ["", "Opponents:", ""]
        lines += [f"- {r[layout.row_key]}: `{r['command']}`" for r in rows if "command" in r]
    return "\n".join(lines) + "\n"


def earlier_games(path: Path, header: dict, layout: Layout, opponents: list[Opponent]) -> dict[int | str, EarlierRow]:
    """The games of an earlier run of the same settings written at ``path``,
    per row key; none if there is no such file. ValueError (a one-line
    reason) if it holds another run's settings, another command for an
    opponent, or is not such a table."""
    if not path.is_file():
        return {}
    try:
        old = json.loads(path.read_text())
        differ = [k for k in layout.settings if old.get(k) != header[k]]
        rows = old[layout.list_key]
        keyed = {row[layout.row_key]: row for row in rows}
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"{path}: not a rating table of this tool ({e}); move it away or give --fresh") from None
    if differ:
        raise ValueError(f"{path} holds games of other settings ({', '.join(differ)} differ); "
                         f"use another --out or give --fresh to start over")
    out: dict[int | str, EarlierRow] = {}
    for opp in opponents:
        row = keyed.get(opp.key)
        if row is None:
            continue
        if layout.row_command and row.get("command") != opp.command:
            raise ValueError(f"{path} holds games of {opp.key} started as {row.get('command')!r}, not "
                             f"{opp.command!r}; use another --out or give --fresh to start over")
        out[opp.key] = EarlierRow(MatchResult.from_row(row), float(row.get("seconds", 0.0)))
    return out


async def play_ladder(net: Player, opponents: list[Opponent], games: int, header: dict, layout: Layout,
                      out: Path, earlier: dict[int | str, EarlierRow], *, concurrency: int, sgf: str = "",
                      report: Callable[[str], None] = print) -> list[dict]:
    """Play ``games`` games against each opponent in turn (the games
    ``earlier`` holds are counted, not played), rewriting ``OUT.md`` and
    ``OUT.json`` after every game; the rows of the finished table."""
    rows: list[dict] = []
    out.parent.mkdir(parents=True, exist_ok=True)

    def write_tables(current: dict | None = None) -> None:
        shown = rows + ([current] if current is not None else [])
        write_text_atomic(out.with_suffix(".json"), json.dumps({**header, layout.list_key: shown}, indent=1) + "\n")
        write_text_atomic(out.with_suffix(".md"), markdown(shown, header, layout))

    for opp in opponents:
        engine = GtpPlayer(opp.command)
        engine.name = opp.name
        sgf_dir = Path(sgf) / f"{layout.row_key}-{opp.key}" if sgf else None
        if sgf_dir is not None:
            sgf_dir.mkdir(parents=True, exist_ok=True)
        done = earlier.get(opp.key)
        t0 = time.monotonic()
        seconds0 = done.seconds if done is not None else 0.0

        def row_of(res: MatchResult, complete: bool, opp: Opponent = opp, seconds0: float = seconds0,
                   t0: float = t0) -> dict:
            command = {"command": opp.command} if layout.row_command else {}
            return {layout.row_key: opp.key, **command, **res.summary(per_game=True), "complete": complete,
                    "seconds": round(seconds0 + time.monotonic() - t0, 1)}

        def progress(k: int, res: MatchResult, opp: Opponent = opp, row_of=row_of) -> None:
            print(f"  {layout.row_key} {opp.key}: game {res.games}/{games}  {res.wins}-{res.losses}-{res.draws}",
                  file=sys.stderr, flush=True)
            write_tables(row_of(res, False))

        res = await run_match(net, engine, games, header["board"], header["komi"], concurrency, sgf_dir, progress,
                              scoring=header["scoring"], random_opening=header["random_opening"], seed=opp.seed,
                              done=done.result if done is not None else None)
        row = row_of(res, True)
        rows.append(row)
        write_tables()
        report(f"{layout.row_key} {opp.key}: {res.wins}-{res.losses}-{res.draws}, win rate {res.win_rate:.1%}, "
               f"Elo {elo_text(row['elo'], '-inf' if res.win_rate < 0.5 else '+inf')}")
    return rows


def add_network_arguments(p) -> None:
    """The options every ladder tool shares: our network, its budget, the games and the table."""
    p.add_argument("--weights", required=True, help="weights file, or 'random'")
    p.add_argument("--games", type=int, default=20, help="games per opponent")
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
    p.add_argument("--sgf", default="", help="folder for the games (a subfolder per opponent)")
    p.add_argument("--out", required=True, help="table path without suffix: OUT.md and OUT.json")
    p.add_argument("--fresh", action="store_true", help="start over even if OUT.json holds games of other settings")


def rate(args, prog: str, opponents: list[Opponent], layout: Layout, extra_header: dict | None = None,
         gumbel: bool = False, reuse_tree: bool = True) -> int:
    """Rate ``args.weights`` against ``opponents`` (``add_network_arguments``'s
    options); prints each opponent's result, then the markdown and the JSON of
    the whole table (its last line). Exit status 2 with one line for bad input."""
    from .match import make_player

    if args.weights != "random" and not Path(args.weights).is_file():
        print(f"{prog}: --weights {args.weights}: no such file", file=sys.stderr)
        return 2
    if args.torch_threads >= 1:
        import torch

        torch.set_num_threads(args.torch_threads)
    player_args = argparse.Namespace(device=args.device, batch_size=args.batch_size, playouts=args.playouts,
                                     gumbel=gumbel, resign=0.0, opening_moves=0, reuse_tree=reuse_tree,
                                     board=args.board)
    try:
        net = make_player(args.weights, player_args)
    except UserError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    header = {"network": args.weights, "board": args.board, "komi": args.komi, "playouts": args.playouts,
              "random_opening": args.random_opening, "seed": args.seed, "scoring": args.scoring,
              **(extra_header or {}), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    out = Path(args.out)
    try:
        earlier = {} if args.fresh else earlier_games(out.with_suffix(".json"), header, layout, opponents)
    except ValueError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    rows = asyncio.run(play_ladder(net, opponents, args.games, header, layout, out, earlier,
                                   concurrency=args.concurrency, sgf=args.sgf))
    print(markdown(rows, header, layout))
    print(json.dumps({**header, layout.list_key: rows}))
    return 0
