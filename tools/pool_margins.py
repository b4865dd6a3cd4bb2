#!/usr/bin/env python3
"""How one player's games of a rating pool ended: by resignation or by the
count, and by how many points, from the pool's ``OUT.json``
(``sayuri-async rate``).

Vocabulary
----------
game      a row of the JSON's ``games``: ``x`` and ``y`` the pair, ``score``
          x's (1 won, 0.5 drawn, 0 lost), ``result`` the SGF result string
          (``B+2``, ``W+R``), ``reason`` how it ended (``two passes``,
          ``resignation``, ...).
margin    the points of a counted result (``B+2`` is 2), komi included: on
          a 9x9 board with no neutral point left, komi 7 gives even
          margins, 2 the smallest (one point in territory terms).
close     a counted game decided by at most ``--close`` points (default 4).

    python tools/pool_margins.py logs/strength/distil-continue/pachi-gen3.json gen3-6b96c-1s
    python tools/pool_margins.py logs/strength/equal-time/rate-9x9-equal-time.json net-6b96c-1s --against pachi-1s

prints the player's wins and losses by how they ended, the losses' margins
(sorted), and, last, a JSON object of the same figures.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from sayuri_async.sgf_import import parse_result


def player_games(games: list[dict], player: str, against: str | None = None) -> list[tuple[float, dict]]:
    """``(the player's score, game)`` for each game it played (against
    ``against`` only, when given)."""
    out = []
    for g in games:
        if g["x"] == player and against in (None, g["y"]):
            out.append((g["score"], g))
        elif g["y"] == player and against in (None, g["x"]):
            out.append((1.0 - g["score"], g))
    return out


def margin(result: str) -> float | None:
    """The points of a counted result (``0``, a draw, is 0), None for a
    resignation, time or forfeit (``sgf_import.parse_result``)."""
    parsed = parse_result(result)
    return None if parsed is None else parsed.margin


def endings(games: list[dict], player: str, against: str | None = None, close: float = 4.0) -> dict:
    """The figures ``main`` prints (see the vocabulary)."""
    played = player_games(games, player, against)
    outcome = {1.0: "wins", 0.5: "draws", 0.0: "losses"}
    ended: Counter = Counter()
    loss_margins: list[float] = []
    win_margins: list[float] = []
    for score, g in played:
        kind = outcome.get(score, "draws")
        m = margin(g["result"])
        ended[f"{kind} by {'count' if m is not None else g['reason']}"] += 1
        if m is not None and kind == "losses":
            loss_margins.append(m)
        elif m is not None and kind == "wins":
            win_margins.append(m)
    loss_margins.sort()
    win_margins.sort()
    return {"player": player, "against": against, "games": len(played), "ended": dict(sorted(ended.items())),
            "loss_margins": loss_margins, "win_margins": win_margins, "close": close,
            "close_losses": sum(1 for m in loss_margins if m <= close),
            "close_wins": sum(1 for m in win_margins if m <= close)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("pool_json", help="a rating pool's OUT.json")
    p.add_argument("player", help="a player's name in it")
    p.add_argument("--against", default=None, help="only the games against this player")
    p.add_argument("--close", type=float, default=4.0, help="a close game's largest margin (points)")
    args = p.parse_args(argv)
    try:
        games = json.loads(Path(args.pool_json).read_text())["games"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"pool_margins: {args.pool_json}: not a rating pool's JSON ({e})", file=sys.stderr)
        return 2
    fig = endings(games, args.player, args.against, args.close)
    if not fig["games"]:
        print(f"pool_margins: {args.pool_json}: no games of {args.player!r}"
              + (f" against {args.against!r}" if args.against else ""), file=sys.stderr)
        return 2
    print(f"{args.player}: {fig['games']} games" + (f" against {args.against}" if args.against else ""))
    for kind, n in fig["ended"].items():
        print(f"  {kind}: {n}")
    print(f"  losses by the count, margins: {' '.join(f'{m:g}' for m in fig['loss_margins']) or 'none'}")
    print(f"  close (<= {args.close:g} points): {fig['close_losses']} losses, {fig['close_wins']} wins")
    print(json.dumps(fig))
    return 0


if __name__ == "__main__":
    sys.exit(main())
