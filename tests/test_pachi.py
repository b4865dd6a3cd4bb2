"""Pachi as a rating opponent: the engine ``tools/get_pachi.sh`` builds plays
a short game through the referee and through ``tools/rate_gtp.py`` (whose
table is resumed and whose refusals are one line); ``sayuri_async.rating.engines``
starts it on one thread without pondering. Skipped when Pachi is not built."""
from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from sayuri_async.go.game import Game
from sayuri_async.rating.engines import pachi_binary, pachi_command
from sayuri_async.rating.match import match_openings, play_game
from sayuri_async.rating.referee import GtpPlayer, Player

PACHI = pachi_binary()
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(PACHI is None, reason="Pachi is not built (run tools/get_pachi.sh, or set PACHI)")]
TOOLS = Path(__file__).resolve().parents[1] / "tools"


class FirstLegal(Player):
    """Plays the first legal point that is not its own eye-like point, else passes."""

    name = "first-legal"

    def fork(self) -> "FirstLegal":
        return self

    async def genmove(self, game: Game) -> int:
        n = game.size
        stones = game.stones().reshape(-1)
        for a in range(n * n):
            if not game.is_legal(a):
                continue
            y, x = divmod(a, n)
            around = [stones[j * n + i] for j, i in ((y - 1, x), (y + 1, x), (y, x - 1), (y, x + 1))
                      if 0 <= j < n and 0 <= i < n]
            if all(s == game.to_move for s in around):
                continue
            return a
        return game.pass_action


def test_pachi_is_started_on_one_thread_without_pondering():
    command = pachi_command("=600")
    assert command.startswith(PACHI) and "-t =600 -r chinese" in command
    assert "threads=1" in command and "pondering=0" in command


def test_one_short_game_against_pachi():
    pachi = GtpPlayer(pachi_command("=600"))
    pachi.name = "pachi"
    opening = match_openings(1, 7, 2, seed=0)[0]
    g = asyncio.run(play_game(FirstLegal(), pachi, 1, opening, 7, 7.0))  # game 1: Pachi has black
    assert not g.a_black and g.b_moves > 0 and g.b_seconds > 0
    assert g.result == "L" and g.record.startswith("B+"), g  # Pachi beats a player of first legal points


def test_rate_gtp_against_pachi_writes_a_table_and_resumes(tmp_path, capsys):
    sys.path.insert(0, str(TOOLS))
    import rate_gtp

    out = tmp_path / "pachi"
    ours = ["--weights", "random", "--board", "7", "--komi", "7", "--playouts", "4", "--out", str(out)]
    base = ours + ["--pachi", "=600"]
    assert rate_gtp.main(base + ["--games", "1"]) == 0
    row = json.loads(out.with_suffix(".json").read_text())["opponents"][0]
    assert row["opponent"] == "pachi-600po" and row["games"] == 1 and row["command"].endswith("pass_all_alive")
    assert "| pachi-600po | 1 |" in out.with_suffix(".md").read_text()
    assert rate_gtp.main(base + ["--games", "2"]) == 0
    again = json.loads(out.with_suffix(".json").read_text())["opponents"][0]
    assert again["games"] == 2 and again["per_game"]["0"] == row["per_game"]["0"]
    capsys.readouterr()
    assert rate_gtp.main(base + ["--games", "2", "--engine", f"pachi-600po={PACHI} -t =600"]) == 2
    assert "rate_gtp: --engine: the name 'pachi-600po' is given twice" in capsys.readouterr().err
    assert rate_gtp.main(base + ["--games", "2", "--search", "gumbel"]) == 2
    assert "search differ" in capsys.readouterr().err
    assert rate_gtp.main(ours + ["--games", "2", "--engine", "pachi-600po=/no/such/pachi -t =600"]) == 2
    assert "cannot start" in capsys.readouterr().err
