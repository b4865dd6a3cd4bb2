"""``sayuri-async rate`` (``sayuri_async.rating``): the pool file, the
schedule, a pool stopped after k games that continues without playing them
again, refusals of a record of other settings, and the search settings a
player carries (tree reuse off starts every move from an empty tree), and
the games `--sgf` saves.

The pools are three random-network players on 7x7 at 4 playouts: a game
takes a fraction of a second.
"""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from sayuri_async import cli
from sayuri_async.configfile import ConfigError
from sayuri_async.go.game import Game
from sayuri_async.rating import cli as rate_cli
from sayuri_async.rating import pool as pool_mod
from sayuri_async.rating.match import make_player
from sayuri_async.rating.players import load_pool
from sayuri_async.rating.pool import schedule

ROOT = Path(__file__).resolve().parents[1]

POOL = """\
[pool]
board = 7
komi = 7
games = 2
concurrency = 1
{anchor}
[defaults]
weights = "random"
playouts = {playouts}

[[player]]
name = "puct"

[[player]]
name = "gumbel"
search = "gumbel"

[[player]]
name = "fresh"
reuse_tree = false
"""


def pool_file(tmp_path: Path, playouts: int = 4, anchor: str = "") -> Path:
    path = tmp_path / "pool.toml"
    path.write_text(POOL.format(playouts=playouts, anchor=f'anchor = "{anchor}"' if anchor else ""))
    return path


def test_the_shipped_pool_file_names_twelve_players():
    pf = load_pool(Path(__file__).resolve().parents[1] / "configs" / "rate-9x9-search.toml")
    assert len(pf.players) == 12 and pf.anchor == "mean" and pf.pool.komi == 7
    assert {(p.search, p.playouts, p.reuse_tree) for p in pf.players} == {
        (s, n, r) for s in ("puct", "gumbel") for n in (16, 64, 200) for r in (True, False)}
    assert all(Path(p.weights).name == "gnugo9c-reh2-4x48.safetensors" for p in pf.players)


@pytest.mark.parametrize("body, message", [
    ('[pool]\ngames = 0\n', r"\[pool\] games: must be"),
    ('[pool]\nbord = 9\n', r"\[pool\] bord: unknown key"),
    ('[pool]\nanchor = "nobody"\n', r"anchor: 'nobody' is neither 'mean' nor a player's name"),
    ('[[player]]\nname = "b"\nweights = "random"\ngtp = "x y"\n', r"\[player 3 \(b\)\] weights: give either"),
    ('[[player]]\nname = "a"\n', r"name 'a' is given twice"),
    ('[[player]]\nname = "c d"\n', r"\[player 3\ \(c d\)] name: must be"),
    ('[engines]\n', r"unknown section \[engines\]"),
    ('[[pair]]\nplayers = ["a", "zz"]\ngames = 4\n', r"\[pair 1\] players: 'zz' is not a \[\[player\]\] of the pool"),
    ('[[pair]]\nplayers = ["a", "a"]\n', r"\[pair 1\] players: must name two different players"),
    ('[[pair]]\nplayers = ["a", "b2"]\ngames = -1\n', r"\[pair 1\] games: must be"),
    ('[[pair]]\nplayers = ["a", "b2"]\n[[pair]]\nplayers = ["b2", "a"]\n', r"\[pair 2\] players: the pair a and b2 is given twice"),
])
def test_a_bad_pool_file_is_refused_naming_the_file_and_key(tmp_path, body, message):
    path = tmp_path / "bad.toml"
    path.write_text('[defaults]\nweights = "random"\n[[player]]\nname = "a"\n[[player]]\nname = "b2"\n' + body)
    with pytest.raises(ConfigError, match=message) as e:
        load_pool(path)
    assert str(e.value).startswith(str(path))


def test_the_schedule_plays_in_rounds_whatever_the_order_of_the_file():
    s = schedule(["puct", "gumbel", "fresh"], 2)
    assert s == [("fresh", "gumbel", 0), ("fresh", "puct", 0), ("gumbel", "puct", 0),
                 ("fresh", "gumbel", 1), ("fresh", "puct", 1), ("gumbel", "puct", 1)]
    assert schedule(["fresh", "puct", "gumbel"], 2) == s


def test_a_pair_of_its_own_plays_its_own_games_after_the_others_rounds_and_0_leaves_it_out():
    own = {("fresh", "gumbel"): 4, ("gumbel", "puct"): 0}
    s = schedule(["puct", "gumbel", "fresh"], 2, own)
    assert s == [("fresh", "gumbel", 0), ("fresh", "puct", 0), ("fresh", "gumbel", 1), ("fresh", "puct", 1),
                 ("fresh", "gumbel", 2), ("fresh", "gumbel", 3)]
    assert schedule(["puct", "gumbel", "fresh"], 2, {}) == schedule(["puct", "gumbel", "fresh"], 2)


def test_a_pool_with_pair_tables_plays_and_reports_their_games(tmp_path):
    path = pool_file(tmp_path)
    path.write_text(path.read_text() + '\n[[pair]]\nplayers = ["puct", "fresh"]\ngames = 3\n'
                                       '\n[[pair]]\nplayers = ["gumbel", "puct"]\ngames = 0\n')
    out = tmp_path / "pool"
    assert rate_cli.main([str(path), "--out", str(out)]) == 0
    done = json.loads(Path(f"{out}.json").read_text())
    pairs = {(p["a"], p["b"]): p["games"] for p in done["pairs"]}
    assert pairs == {("fresh", "gumbel"): 2, ("fresh", "puct"): 3}
    assert done["progress"]["scheduled"] == 5 and done["progress"]["pair_games"] == [
        {"players": ["fresh", "puct"], "games": 3}, {"players": ["gumbel", "puct"], "games": 0}]
    md = Path(f"{out}.md").read_text()
    assert "5 of 5 games (complete; 2 a pair; fresh and puct 3, gumbel and puct none," in md


def test_the_equal_time_pool_file_names_its_players_and_pairs():
    pf = load_pool(Path(__file__).resolve().parents[1] / "configs" / "rate-9x9-equal-time.toml")
    assert [p.name for p in pf.players] == ["net-4x48-1s", "net-6b96c-1s", "gnugo-l10", "pachi-1s"]
    assert pf.pair_games == {("net-4x48-1s", "net-6b96c-1s"): 200, ("gnugo-l10", "pachi-1s"): 0}
    assert len(schedule([p.name for p in pf.players], pf.pool.games, pf.pair_games)) == 600


def test_a_pool_stopped_after_k_games_continues_without_playing_them_again(tmp_path, monkeypatch, capsys):
    path = pool_file(tmp_path)
    out = tmp_path / "out" / "pool"
    real = pool_mod.play_game
    played: list[tuple[str, str, int]] = []

    def stopping_after(k: int):
        async def play(a, b, game, *rest):
            if len(played) == k:
                raise KeyboardInterrupt  # Ctrl-C during game k + 1
            played.append((a.name, b.name, game))
            return await real(a, b, game, *rest)
        return play

    monkeypatch.setattr(pool_mod, "play_game", stopping_after(1))
    assert rate_cli.main([str(path), "--out", str(out)]) == 130
    first = json.loads(Path(f"{out}.json").read_text())
    assert len(first["games"]) == 1 and first["progress"] == {"games": 1, "scheduled": 6, "games_per_pair": 2}
    md = Path(f"{out}.md").read_text()
    assert "1 of 6 games (in progress" in md and "No ratings yet: no games yet for puct." in md

    monkeypatch.setattr(pool_mod, "play_game", stopping_after(10 ** 6))
    assert rate_cli.main([str(path), "--out", str(out)]) == 0
    assert len(played) == 6 and len(set(played)) == 6  # the recorded game was not played again
    done = json.loads(Path(f"{out}.json").read_text())
    assert len(done["games"]) == 6 and [g for g in done["games"] if (g["x"], g["y"], g["k"]) in
                                        {(x["x"], x["y"], x["k"]) for x in first["games"]}] == first["games"]
    assert {r["name"] for r in done["standings"]} == {"puct", "gumbel", "fresh"}
    assert sum(r["score"] for r in done["standings"]) == 6 and all(r["games"] == 4 for r in done["standings"])
    md = Path(f"{out}.md").read_text()
    assert "6 of 6 games (complete" in md and "| fresh | gumbel | 2 |" in md

    # more games a pair only adds games; the same command again plays nothing
    assert rate_cli.main([str(path), "--out", str(out), "--games", "3"]) == 0
    assert len(played) == 9
    assert rate_cli.main([str(path), "--out", str(out), "--games", "3"]) == 0
    assert len(played) == 9


def test_sgf_saves_every_game_of_a_pool_with_its_players_and_result(tmp_path, capsys):
    path = pool_file(tmp_path)
    out, games = tmp_path / "pool", tmp_path / "games"
    games.write_text("a file")
    assert rate_cli.main([str(path), "--out", str(out), "--games", "1", "--sgf", str(games)]) == 2
    assert capsys.readouterr().err.strip() == f"sayuri-async rate: --sgf {games}: not a folder"
    games.unlink()
    assert rate_cli.main([str(path), "--out", str(out), "--games", "1", "--sgf", str(games)]) == 0
    done = json.loads(Path(f"{out}.json").read_text())
    names = sorted(p.name for p in games.iterdir())
    assert names == sorted(f"{g['x']}-vs-{g['y']}-{g['k']:04d}.sgf" for g in done["games"]) and len(names) == 3
    for g in done["games"]:
        text = (games / f"{g['x']}-vs-{g['y']}-{g['k']:04d}.sgf").read_text()
        assert f"PB[{g['x']}]" in text and f"PW[{g['y']}]" in text and f"RE[{g['result']}]" in text


def test_the_tables_hold_ratings_intervals_and_pairs(tmp_path):
    path = pool_file(tmp_path, anchor="mean")
    path.write_text(path.read_text().replace('anchor = "mean"', 'anchor = "mean"\nvirtual_draws = 1'))
    out = tmp_path / "pool"
    assert rate_cli.main([str(path), "--out", str(out)]) == 0
    fig = json.loads(Path(f"{out}.json").read_text())
    assert fig["fit"]["anchor"] == "mean" and len(fig["fit"]["covariance"]) == 3
    assert abs(sum(r["elo"] for r in fig["standings"])) < 0.5
    assert [r["elo"] for r in fig["standings"]] == sorted((r["elo"] for r in fig["standings"]), reverse=True)
    assert all(r["elo95"][0] < r["elo"] < r["elo95"][1] for r in fig["standings"])
    assert all(p["elo_difference95"][0] < p["elo_difference"] < p["elo_difference95"][1] for p in fig["pairs"])
    md = Path(f"{out}.md").read_text()
    assert "the mean at 0" in md and "1 virtual draw a pair" in md and "| Elo A - B | 95% interval |" in md


def test_a_record_of_other_settings_or_players_is_refused_in_one_line(tmp_path, capsys):
    path = pool_file(tmp_path)
    out = tmp_path / "pool"
    assert rate_cli.main([str(path), "--out", str(out), "--games", "1"]) == 0
    capsys.readouterr()
    (tmp_path / "other").mkdir()
    changed = pool_file(tmp_path / "other", playouts=5)
    assert rate_cli.main([str(changed), "--out", str(out), "--games", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "player 'puct' played its games there as PUCT, 4 playouts" in err
    # --fresh starts over
    assert rate_cli.main([str(changed), "--out", str(out), "--games", "1", "--fresh"]) == 0
    Path(f"{out}.json").write_text("{not json")
    capsys.readouterr()
    assert rate_cli.main([str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "not a rating pool's JSON" in err


def test_rate_is_a_subcommand():
    assert "rate" in cli.SUBCOMMANDS
    with pytest.raises(SystemExit) as e:
        cli.main(["rate", "--help"])
    assert e.value.code == 0


def root_visits_after_our_move(reuse_tree: bool) -> int:
    """Visits under the root when our search meets the position after its own move."""
    p = make_player("random", SimpleNamespace(device="cpu", batch_size=4, playouts=300, gumbel=False, resign=0.0,
                                              reuse_tree=reuse_tree)).fork()

    async def go() -> int:
        await p.start(5, 0.0)
        game = Game(5, 0.0)
        game.play(await p.genmove(game))
        p.search.sync(game)
        visits = int(p.search.stats(5)[0].sum())
        await p.close()
        return visits

    return asyncio.run(go())


def test_tree_reuse_off_starts_every_move_from_an_empty_tree():
    assert root_visits_after_our_move(True) > 0
    assert root_visits_after_our_move(False) == 0


def test_the_ladder_tools_load_a_shipped_network_and_refuse_it_another_board(tmp_path, capsys):
    import argparse

    from sayuri_async.rating.ladder import Layout, add_network_arguments, rate

    shipped = str(Path(__file__).resolve().parents[1] / "weights" / "9x9" / "gnugo9c-reh2-4x48.safetensors")
    layout = Layout("opponents", "opponent", "opponent", "nobody", "", ("network", "board"), True)
    p = argparse.ArgumentParser()
    add_network_arguments(p)
    out = tmp_path / "t"
    assert rate(p.parse_args(["--weights", shipped, "--out", str(out), "--board", "9"]), "tool", [], layout) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["opponents"] == []
    assert rate(p.parse_args(["--weights", shipped, "--out", str(out), "--board", "21"]), "tool", [], layout) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("tool: ") and "cannot play --board 21" in err


def test_a_pool_refuses_a_network_for_another_board_in_one_line(tmp_path, capsys):
    shipped = Path(__file__).resolve().parents[1] / "weights" / "9x9" / "gnugo9c-reh2-4x48.safetensors"
    path = tmp_path / "pool.toml"
    path.write_text(POOL.format(playouts=4, anchor="").replace("board = 7", "board = 21")
                    .replace('weights = "random"', f'weights = "{shipped}"'))
    assert rate_cli.main([str(path), "--out", str(tmp_path / "pool")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "cannot play [pool] board 21" in err


def test_bench_move_time_times_a_network_on_the_ratings_path(capsys):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import bench_move_time

    shipped = str(Path(__file__).resolve().parents[1] / "weights" / "9x9" / "gnugo9c-reh2-4x48.safetensors")
    assert bench_move_time.main(["--weights", shipped, "--playouts", "4", "--games", "1", "--komi", "7"]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["rows"][0]["moves"] > 0 and out["one_second"] > 0 and out["pachi_rows"] == []


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="a child started with SIGINT ignored, as a script's background job")
def test_ctrl_c_stops_a_pool_started_in_the_background_with_sigint_ignored(tmp_path):
    path = pool_file(tmp_path, playouts=64)
    path.write_text(path.read_text().replace("games = 2", "games = 1000"))
    out = tmp_path / "pool"
    log = tmp_path / "log.txt"
    with open(log, "wb") as f:
        proc = subprocess.Popen([sys.executable, "-m", "sayuri_async.cli", "rate", str(path), "--out", str(out)],
                                cwd=ROOT, env=dict(os.environ, OMP_NUM_THREADS="1"), stdout=f,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        end = time.monotonic() + 300
        while " game 0: " not in log.read_text() and time.monotonic() < end:  # a game recorded
            assert proc.poll() is None, log.read_text()
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 130, log.read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = log.read_text()
    assert text.rstrip().endswith("sayuri-async rate: interrupted") and "Traceback" not in text, text
    games = json.loads(Path(f"{out}.json").read_text())["games"]
    assert 1 <= len(games) < 3000
