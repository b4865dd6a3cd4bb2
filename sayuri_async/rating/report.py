"""The rating pool's table (markdown) and JSON, from its record of games.

Vocabulary
----------
standings   per player of the pool: its Elo (``elo.fit`` over every game
            between the pool's players: maximum likelihood, Bradley-Terry,
            draws as half), the 95% interval from the Fisher information,
            games, score, the median over its games of the seconds a move
            it spent (openings excluded; a median, so that one game slowed by
            a stopped or starved process does not move it)
            and its settings; best first.
pairs       per pair: games, the first player's wins-losses-draws and
            score, and the fitted Elo difference with its own 95% interval
            (the covariance of the two ratings included).
no fit      while the games leave the maximum likelihood infinite (a player
            that has lost, or won, every game so far) or the players
            unconnected, the table says why in place of the ratings.
JSON        ``{"settings", "players", "games", "fit", "pairs",
            "progress"}``: the record (what a resume reads) and the figures.
"""
from __future__ import annotations

import statistics
import time

from .elo import Fit, NoFiniteFit, fit, score_tables
from .players import PoolFile
from .pool import Record, schedule

__all__ = ["figures", "markdown"]


def _fit(pf: PoolFile, record: Record) -> tuple[Fit | None, str]:
    names = [p.name for p in pf.players]
    games = [(g.x, g.y, g.score) for g in record.games.values()]
    scores, played = score_tables(names, games)
    try:
        return fit(names, scores, played, anchor=pf.anchor, virtual_draws=pf.pool.virtual_draws), ""
    except (NoFiniteFit, ValueError) as e:
        return None, str(e)


def figures(pf: PoolFile, record: Record) -> dict:
    """The pool's figures: the fit (or why there is none), each player's and each pair's."""
    names = [p.name for p in pf.players]
    in_pool = set(names)
    games = [g for g in record.games.values() if g.x in in_pool and g.y in in_pool]
    f, why = _fit(pf, record)
    per: dict[str, dict] = {n: {"games": 0, "score": 0.0, "per_move": []} for n in names}
    pairs: dict[tuple[str, str], dict] = {}
    for g in games:
        for name, score, moves, secs in ((g.x, g.score, g.x_moves, g.x_seconds),
                                         (g.y, 1.0 - g.score, g.y_moves, g.y_seconds)):
            p = per[name]
            p["games"] += 1
            p["score"] += score
            if moves:
                p["per_move"].append(secs / moves)
        pr = pairs.setdefault((g.x, g.y), {"a": g.x, "b": g.y, "games": 0, "wins": 0, "losses": 0, "draws": 0})
        pr["games"] += 1
        pr["wins" if g.score == 1.0 else "losses" if g.score == 0.0 else "draws"] += 1
    players = []
    for spec in pf.players:
        p = per[spec.name]
        row = {"name": spec.name, "settings": spec.describe(), "games": p["games"], "score": p["score"],
               "seconds_per_move": round(statistics.median(p["per_move"]), 4) if p["per_move"] else None}
        if f is not None:
            lo, hi = f.interval(spec.name)
            row.update(elo=round(f.rating(spec.name), 1), elo95=[round(lo, 1), round(hi, 1)])
        players.append(row)
    if f is not None:
        players.sort(key=lambda r: -r["elo"])
    pair_rows = []
    for (x, y), pr in sorted(pairs.items()):
        pr["score"] = round((pr["wins"] + 0.5 * pr["draws"]) / pr["games"], 4)
        if f is not None:
            d, lo, hi = f.difference(x, y)
            pr.update(elo_difference=round(d, 1), elo_difference95=[round(lo, 1), round(hi, 1)])
        pair_rows.append(pr)
    total = len(schedule(names, pf.pool.games, pf.pair_games))
    return {"fit": ({"method": "maximum likelihood (Bradley-Terry, draws as half)",
                     "intervals": "95%, from the Fisher information (the Hessian of the log-likelihood)",
                     "anchor": f.anchor, "virtual_draws": pf.pool.virtual_draws,
                     "log_likelihood": round(f.log_likelihood, 4), "names": f.names,
                     "covariance": [[round(float(c), 3) for c in row] for row in f.covariance]}
                    if f is not None else {"error": why}),
            "standings": players, "pairs": pair_rows,
            "progress": {"games": len(games), "scheduled": total, "games_per_pair": pf.pool.games,
                         **({"pair_games": [{"players": list(k), "games": n} for k, n in sorted(pf.pair_games.items())]}
                            if pf.pairs else {})}}


def _elo(x: float) -> str:
    return f"{round(x) + 0:+d}"  # + 0: no "-0"


def _own_pairs(pf: PoolFile) -> str:
    """``, a and b 200, c and d none``: the pairs ``[[pair]]`` tables set."""
    own = [f"{x} and {y} {n if n else 'none'}" for (x, y), n in sorted(pf.pair_games.items())]
    return f"; {', '.join(own)}" if own else ""


def markdown(pf: PoolFile, fig: dict) -> str:
    c = pf.pool
    prog = fig["progress"]
    state = "complete" if prog["games"] >= prog["scheduled"] else "in progress"
    anchor = "the mean at 0" if pf.anchor == "mean" else f"{pf.anchor} at 0"
    plural = "" if c.virtual_draws == 1 else "s"
    draws = f", {c.virtual_draws:g} virtual draw{plural} a pair" if c.virtual_draws else ""
    lines = [f"# Rating pool `{pf.path}` ({c.board}x{c.board}, komi {c.komi:g})",
             "",
             f"{prog['games']} of {prog['scheduled']} games ({state}; {c.games} a pair{_own_pairs(pf)}, "
             f"colours alternating), "
             f"{c.random_opening} random opening moves per game pair (seed {c.seed}), scoring `{c.scoring}`. "
             f"Elo by maximum likelihood over all games (Bradley-Terry, draws as half{draws}), {anchor}; "
             f"95% intervals from the Fisher information; "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
             ""]
    if "error" in fig["fit"]:
        lines += [f"No ratings yet: {fig['fit']['error']}.", ""]
    lines += ["| player | Elo | 95% interval | games | score | s/move | settings |",
              "|---|---|---|---|---|---|---|"]
    for r in fig["standings"]:
        elo = _elo(r["elo"]) if "elo" in r else "-"
        iv = f"{_elo(r['elo95'][0])} .. {_elo(r['elo95'][1])}" if "elo95" in r else "-"
        share = f"{r['score'] / r['games']:.1%}" if r["games"] else "-"
        spm = f"{r['seconds_per_move']}" if r["seconds_per_move"] is not None else "-"
        lines.append(f"| {r['name']} | {elo} | {iv} | {r['games']} | {share} | {spm} | {r['settings']} |")
    lines += ["", "| A | B | games | A's W-L-D | A's score | Elo A - B | 95% interval |", "|---|---|---|---|---|---|---|"]
    for p in fig["pairs"]:
        d = _elo(p["elo_difference"]) if "elo_difference" in p else "-"
        iv = (f"{_elo(p['elo_difference95'][0])} .. {_elo(p['elo_difference95'][1])}"
              if "elo_difference95" in p else "-")
        lines.append(f"| {p['a']} | {p['b']} | {p['games']} | {p['wins']}-{p['losses']}-{p['draws']} "
                     f"| {p['score']:.1%} | {d} | {iv} |")
    return "\n".join(lines) + "\n"

