import asyncio
import math
import shutil
import sys
import types

import pytest

from sayuri_async.go.coords import vertex_to_action
from sayuri_async.rating.match import GtpPlayer, MatchResult, Player, elo_from_rate, make_player, ratings, run_match
from sayuri_async.rating.referee import referee_game

GNUGO = shutil.which("gnugo") or (shutil.which("/usr/games/gnugo"))


def args(**kw):
    base = dict(device="cpu", batch_size=4, playouts=8, gumbel=False, resign=0.0)
    base.update(kw)
    return types.SimpleNamespace(**base)


def test_elo_of_known_rates():
    assert elo_from_rate(0.5, 100)[0] == pytest.approx(0.0)
    # p = 10/11 is exactly +400 Elo (odds 10:1)
    assert elo_from_rate(10 / 11, 100)[0] == pytest.approx(400.0)
    assert elo_from_rate(1.0, 10)[0] == math.inf


def test_wilson_interval_contains_rate_and_shrinks():
    small = MatchResult("a", "b", wins=7, losses=3)
    big = MatchResult("a", "b", wins=70, losses=30)
    for r in (small, big):
        lo, hi = r.wilson()
        assert lo < 0.7 < hi
    assert (big.wilson()[1] - big.wilson()[0]) < (small.wilson()[1] - small.wilson()[0])
    # textbook value: 7/10 at 95% -> about [0.397, 0.892]
    lo, hi = small.wilson()
    assert lo == pytest.approx(0.3968, abs=1e-3) and hi == pytest.approx(0.8922, abs=1e-3)


def test_ratings_recover_a_consistent_ladder():
    # A beats B 3:1, B beats C 3:1, A beats C 9:1 -> about +191 Elo per step
    res = [MatchResult("A", "B", wins=750, losses=250), MatchResult("B", "C", wins=750, losses=250),
           MatchResult("A", "C", wins=900, losses=100)]
    r = ratings(["A", "B", "C"], res)
    step = 400 * math.log10(3)
    assert r["A"] == 0.0
    assert r["B"] == pytest.approx(-step, abs=15)
    assert r["C"] == pytest.approx(-2 * step, abs=25)


def test_network_match_alternates_colours_and_writes_sgf(tmp_path):
    a = make_player("random", args())
    b = make_player("random", args())
    b.name = "random-b"
    res = asyncio.run(run_match(a, b, games=4, size=7, komi=7.5, concurrency=4, sgf_dir=tmp_path))
    assert res.games == 4
    files = sorted(tmp_path.glob("*.sgf"))
    assert len(files) == 4
    from sgfmill import sgf

    blacks = [sgf.Sgf_game.from_bytes(f.read_bytes()).get_player_name("b") for f in files]
    assert blacks == ["random", "random-b", "random", "random-b"]


def test_players_play_one_match_after_another_each_under_its_own_event_loop(tmp_path):
    """The loop's gating plays its rounds as separate ``asyncio.run`` calls
    with the same players: a batcher made under an earlier (closed) event
    loop must not be used again."""
    a = make_player("random", args())
    b = make_player("random", args())
    b.name = "random-b"
    for r in range(2):
        res = asyncio.run(run_match(a, b, games=2, size=7, komi=7.5, concurrency=2, sgf_dir=tmp_path / str(r),
                                    seed=r))
        assert res.games == 2


@pytest.mark.slow
@pytest.mark.skipif(GNUGO is None, reason="GNU Go is not installed")
def test_match_against_gnugo(tmp_path):
    a = make_player("random", args(playouts=4))
    g = GtpPlayer(f"{GNUGO} --mode gtp --level 1 --chinese-rules")
    res = asyncio.run(run_match(a, g, games=2, size=7, komi=7.5, concurrency=2, sgf_dir=tmp_path))
    assert res.games == 2
    # a random network against GNU Go on 7x7: GNU Go should not lose both
    assert res.losses >= 1


def test_net_player_samples_only_its_opening_moves():
    from sayuri_async.go.game import Game

    p = make_player("random", args())
    p.opening_moves = 2
    seen = []

    async def fake_run(game, ev, playouts, **kw):
        seen.append((len(game.moves), kw.get("temperature")))
        raise StopAsyncIteration  # enough: we only record the call

    async def main():
        g = Game(7)
        await p.start(7, 7.5)
        p.search.run = fake_run
        for v in ["pass", "D4", "C3", "pass"]:
            try:
                await p.genmove(g)
            except StopAsyncIteration:
                pass
            g.play_vertex(v)
        await p.close()

    asyncio.run(main())
    assert seen == [(0, 1.0), (1, 1.0), (2, 0.0), (3, 0.0)]


class Scripted(Player):
    """Plays its vertices in order (``resign`` resigns), taking ``think[k]``
    seconds over its k-th move (none past the list); records the clock it is
    told."""

    def __init__(self, name: str, vertices: list[str], think: tuple[float, ...] = ()) -> None:
        self.name, self.vertices, self.think = name, list(vertices), list(think)
        self.heard: list[str] = []

    async def time_settings(self, main_time: float) -> None:
        self.heard.append(f"time_settings {main_time:g}")

    async def time_left(self, color: int, seconds: float) -> None:
        self.heard.append(f"time_left {seconds:.1f}")

    async def play(self, color: int, action: int, size: int) -> None:
        self.heard.append(f"play {action}")

    async def genmove(self, game) -> int:
        await asyncio.sleep(self.think.pop(0) if self.think else 0.0)
        v = self.vertices.pop(0)
        return -1 if v == "resign" else vertex_to_action(v, game.size)


def referee(black, white, **kw):
    return asyncio.run(referee_game(black, white, 5, 0.5, **kw))


def test_referee_counts_the_board_after_two_passes():
    rec = referee(Scripted("a", ["C3", "pass"]), Scripted("b", ["pass", "pass"]))
    assert (rec.result, rec.reason, rec.score) == ("B+24.5", "two passes", 24.5)
    assert rec.moves == [(1, 12), (2, 25), (1, 25)]
    assert "PB[a]" in rec.sgf and "RE[B+24.5]" in rec.sgf


def test_referee_resignation_and_move_limit():
    rec = referee(Scripted("a", ["C3", "resign"]), Scripted("b", ["pass"]))
    assert (rec.result, rec.reason, rec.score) == ("W+R", "resignation", -1.0)
    rec = referee(Scripted("a", ["C3", "A1"]), Scripted("b", ["B2", "E5"]), max_moves=3)
    assert rec.reason == "move limit" and len(rec.moves) == 3


def test_referee_illegal_moves_raise_or_forfeit():
    with pytest.raises(RuntimeError, match="illegal move C3"):
        referee(Scripted("a", ["C3"]), Scripted("b", ["C3"]))
    rec = referee(Scripted("a", ["C3"]), Scripted("b", ["C3"]), forfeit=True)
    assert (rec.result, rec.reason, rec.score) == ("B+F", "illegal move C3: occupied", 1.0)
    rec = referee(Scripted("a", ["Z9"]), Scripted("b", []), forfeit=True)
    assert rec.result == "W+F" and rec.reason.startswith("illegal move: ")
    rec = referee(Scripted("a", ["C3"]), Scripted("b", ["C3"]), forfeit={2})  # only white's are forfeits
    assert rec.result == "B+F"
    with pytest.raises(RuntimeError, match="illegal move C3"):
        referee(Scripted("a", ["C3", "C3"]), Scripted("b", ["D4"]), forfeit={2})


@pytest.mark.slow
def test_match_forfeits_an_illegal_move_of_a_gtp_engine(tmp_path):
    # a GTP engine that answers every genmove with C3: its second C3 is
    # illegal, and the match counts a loss for it instead of stopping
    script = tmp_path / "c3.py"
    script.write_text(
        "import sys\n"
        "for line in sys.stdin:\n"
        "    cmd = line.split()\n"
        "    cid = cmd.pop(0) if cmd and cmd[0].isdigit() else ''\n"
        "    out = 'C3' if cmd and cmd[0] == 'genmove' else ''\n"
        "    print(f'={cid} {out}', end='\\n\\n', flush=True)\n"
        "    if cmd and cmd[0] == 'quit':\n"
        "        break\n")
    g = GtpPlayer(f"{sys.executable} {script}")
    a = make_player("random", args(playouts=4))
    res = asyncio.run(run_match(a, g, games=2, size=7, komi=7.5, concurrency=2, sgf_dir=None))
    assert res.games == 2
    assert any(r.startswith("illegal move C3") for r in res.reasons), res.reasons


def test_referee_clock_loses_on_time_and_tells_the_time_left():
    slow = Scripted("slow", ["C3", "D4", "B2"], think=(0.0, 0.6))
    fast = Scripted("fast", ["A1", "E5"])
    rec = referee(slow, fast, main_time={1: 0.5})
    assert (rec.result, rec.reason, rec.score) == ("W+T", "time", -1.0)
    assert rec.moves == [(1, 12), (2, 0)]  # the move that ran out is not played
    # asyncio may wake a sleep up to its clock resolution early: allow 10 ms
    assert rec.time_used[1] > 0.5 and rec.max_move_time[1] >= 0.59
    assert slow.heard[:2] == ["time_settings 0.5", "time_left 0.5"] and slow.heard[3].startswith("time_left")
    assert not any(h.startswith("time") for h in fast.heard)  # white is untimed


def test_match_json_is_written_after_every_game_and_the_same_command_plays_only_the_missing_games(tmp_path, capsys):
    import json

    from sayuri_async.rating.match import main

    out = tmp_path / "m.json"
    cmd = ["random", "random", "--games", "4", "--board", "7", "--playouts", "4", "--concurrency", "1",
           "--json", str(out)]
    assert main(cmd) == 0
    full = json.loads(out.read_text())
    row = full["results"][0]
    assert sorted(row["per_game"]) == ["0", "1", "2", "3"] and full["settings"]["games"] == 4
    # a run stopped after two games: the file holds games 0 and 1
    row["per_game"] = {k: g for k, g in row["per_game"].items() if k in ("0", "1")}
    out.write_text(json.dumps(full))
    capsys.readouterr()
    assert main(cmd) == 0
    said = capsys.readouterr().err
    assert "game 3/4" in said and "game 4/4" in said and "game 1/4" not in said and "game 2/4" not in said
    again = json.loads(out.read_text())["results"][0]
    assert again["games"] == 4 and sorted(again["per_game"]) == ["0", "1", "2", "3"]
    for k in ("0", "1"):
        assert again["per_game"][k] == row["per_game"][k]
    # other settings over the file: refused in one line naming it; --fresh starts over
    assert main(cmd[:-2] + ["--playouts", "5", "--json", str(out)]) == 2
    err = capsys.readouterr().err
    assert str(out) in err and "playouts" in err and len(err.strip().splitlines()) == 1
    assert main(cmd[:-2] + ["--playouts", "5", "--json", str(out), "--fresh"]) == 0
    assert json.loads(out.read_text())["settings"]["playouts"] == 5
    out.write_text("{not json")
    assert main(cmd) == 2 and "not a match file" in capsys.readouterr().err
