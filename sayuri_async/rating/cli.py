"""``sayuri-async rate``: a round robin between the players of a pool file, rated by maximum likelihood.

Vocabulary
----------
pool file   the TOML file naming the players (networks with their search
            settings, GTP engines) and the pool's settings
            (``rating.players``; configs/rate-9x9-search.toml is the
            example, docs/rating.md the manual).
run         every pair plays ``games`` games (``--games`` overrides the
            file), ``concurrency`` at once, in rounds (``rating.pool``);
            ``OUT.json`` (the record of every game and the figures) and
            ``OUT.md`` (the table, ``rating.report``) are rewritten,
            atomically, after every game.
resume      the same command run again plays only the games ``OUT.json``
            lacks; more ``--games``, or a player added to the file, adds
            games. A record of other settings, or a player whose settings
            changed under its name, is refused in one line unless
            ``--fresh``. Ctrl-C (SIGINT) or SIGTERM stops it with the tables
            of the finished games written, also when a script started it in
            the background with SIGINT ignored
            (``lifetime.ctrl_c_interrupts``).
games       with ``--sgf FOLDER`` every game played is also saved there,
            ``X-vs-Y-K.sgf`` (X has black when K is even), with its result.
"""
from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from ..configfile import from_options
from ..fileio import write_text_atomic
from ..lifetime import ctrl_c_interrupts
from ..usererror import ArgumentParser, answered, check_device, output_file, output_folder
from .players import PoolConfig, build_players, load_pool, spec_record
from .pool import GameResult, Record, play_pool
from .report import figures, markdown

__all__ = ["build_parser", "main"]


def build_parser() -> ArgumentParser:
    p = ArgumentParser(prog="sayuri-async rate",
                       description="Play a round robin between networks (with search settings) and GTP engines, "
                                   "and fit their Elo by maximum likelihood.")
    p.add_argument("pool", help="the pool file (TOML; configs/rate-9x9-search.toml is an example)")
    p.add_argument("--out", required=True, help="the tables' path without suffix: OUT.md and OUT.json")
    p.add_argument("--games", type=int, default=None, help="games a pair (default: the file's [pool] games)")
    p.add_argument("--concurrency", type=int, default=None, help="games at once (default: the file's)")
    p.add_argument("--fresh", action="store_true", help="start over even if OUT.json holds games of other settings")
    p.add_argument("--sgf", default="", help="a folder for the games, one SGF each (X-vs-Y-K.sgf)")
    return p


def out_paths(out: str) -> tuple[Path, Path]:
    """``OUT.json`` and ``OUT.md`` (suffixes added, never replacing a dot in OUT)."""
    return Path(out + ".json"), Path(out + ".md")


@answered("rate")
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    pf = load_pool(args.pool)
    pf.pool = from_options(PoolConfig, {"games": args.games, "concurrency": args.concurrency}, base=pf.pool)
    check_device(pf.pool.device, "[pool] device")
    json_path, md_path = out_paths(args.out)
    output_file(json_path, "--out", "logs/strength/pool", inputs=[args.pool])
    output_file(md_path, "--out", "logs/strength/pool", inputs=[args.pool])
    sgf_dir = output_folder(args.sgf, "--sgf", inputs=[args.pool]) if args.sgf else None
    identities = {p.name: spec_record(p) for p in pf.players}
    settings = pf.pool.game_settings()
    record = Record(settings, identities) if args.fresh else Record.load(json_path, settings, identities)
    import torch

    torch.set_num_threads(pf.pool.torch_threads)
    players = build_players(pf)

    def write() -> dict:
        fig = figures(pf, record)
        write_text_atomic(json_path, json.dumps({**record.to_json(), **fig}, indent=1) + "\n")
        write_text_atomic(md_path, markdown(pf, fig))
        return fig

    fig = write()
    print(f"rate: {fig['progress']['games']} of {fig['progress']['scheduled']} games recorded in {json_path}",
          file=sys.stderr, flush=True)

    def on_game(g: GameResult) -> None:
        f = write()
        print(f"  {g.x} vs {g.y} game {g.k}: {g.result} ({g.reason}); "
              f"{f['progress']['games']}/{f['progress']['scheduled']}", file=sys.stderr, flush=True)

    with ctrl_c_interrupts():  # also when started in the background by a script, with SIGINT ignored
        asyncio.run(play_pool(players, record, pf.pool.games, pf.pool.concurrency, on_game,
                              pair_games=pf.pair_games, sgf_dir=sgf_dir))
    fig = write()
    print(markdown(pf, fig))
    return 0


if __name__ == "__main__":
    sys.exit(main())
