import asyncio
import math
import shutil
import types

import pytest

from sayuri_async.match import GtpPlayer, MatchResult, elo_from_rate, make_player, ratings, run_match

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
