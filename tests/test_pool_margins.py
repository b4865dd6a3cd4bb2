"""``tools/pool_margins.py``: one player's games of a rating pool by how they
ended, from either side of the pair, filtered by opponent; a file that is not
a pool's JSON is one line."""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import pool_margins  # noqa: E402

GAMES = [
    {"x": "net", "y": "pachi", "k": 0, "score": 0.0, "result": "W+2", "reason": "two passes"},
    {"x": "net", "y": "pachi", "k": 1, "score": 1.0, "result": "W+R", "reason": "resignation"},
    {"x": "net", "y": "pachi", "k": 2, "score": 0.0, "result": "W+12", "reason": "two passes"},
    {"x": "gnugo", "y": "net", "k": 0, "score": 0.0, "result": "W+4", "reason": "two passes"},  # net won
    {"x": "gnugo", "y": "net", "k": 1, "score": 0.5, "result": "0", "reason": "two passes"},
    {"x": "gnugo", "y": "pachi", "k": 0, "score": 1.0, "result": "B+3", "reason": "two passes"},
]


def test_a_players_games_are_counted_from_its_side_and_by_opponent():
    fig = pool_margins.endings(GAMES, "net")
    assert fig["games"] == 5
    assert fig["ended"] == {"draws by count": 1, "losses by count": 2, "wins by count": 1, "wins by resignation": 1}
    assert fig["loss_margins"] == [2.0, 12.0] and fig["win_margins"] == [4.0]
    assert fig["close_losses"] == 1 and fig["close_wins"] == 1
    vs = pool_margins.endings(GAMES, "net", against="pachi", close=12)
    assert vs["games"] == 3 and vs["close_losses"] == 2 and vs["win_margins"] == []


def test_the_tool_prints_the_figures_and_refuses_bad_input_in_one_line(tmp_path, capsys):
    path = tmp_path / "pool.json"
    path.write_text(json.dumps({"games": GAMES}))
    assert pool_margins.main([str(path), "net", "--against", "pachi"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "net: 3 games against pachi" and json.loads(out[-1])["loss_margins"] == [2.0, 12.0]
    assert pool_margins.main([str(path), "nobody"]) == 2
    assert capsys.readouterr().err.strip() == f"pool_margins: {path}: no games of 'nobody'"
    path.write_text("{not json")
    assert pool_margins.main([str(path), "net"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "not a rating pool's JSON" in err
