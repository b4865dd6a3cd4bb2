"""The rating pool's Elo fit (``sayuri_async.rating.elo``): maximum likelihood
recovers known ratings from synthetic games, its 95% intervals cover the
truth about 95% of the time and narrow as games are added, the anchor only
moves the origin, and a table with no finite fit says which players make it so."""
from __future__ import annotations

import numpy as np
import pytest

from sayuri_async.rating.elo import NoFiniteFit, expected_score, fit, score_tables

TRUE = np.array([0.0, 120.0, -80.0, 260.0, 40.0, -200.0])  # Elo of six players
NAMES = [f"p{i}" for i in range(len(TRUE))]


def tournament(true: np.ndarray, games: int, rng: np.random.Generator, draw: float = 0.0):
    """Score and games tables of a round robin of ``games`` games a pair drawn
    from the Bradley-Terry model (a share ``draw`` of each pair's games drawn)."""
    n = len(true)
    scores, played = np.zeros((n, n)), np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            draws = int(round(draw * games))
            wins = rng.binomial(games - draws, expected_score(true[i] - true[j]))
            scores[i, j] = wins + 0.5 * draws
            scores[j, i] = games - scores[i, j]
            played[i, j] = played[j, i] = games
    return scores, played


def test_the_fit_recovers_known_ratings_within_its_intervals():
    scores, played = tournament(TRUE, 300, np.random.default_rng(7))
    f = fit(NAMES, scores, played, anchor="p0")
    assert f.rating("p0") == 0.0 and f.interval("p0") == (0.0, 0.0)
    for name, true in zip(NAMES, TRUE):
        lo, hi = f.interval(name)
        half = (hi - lo) / 2
        assert abs(f.rating(name) - true) <= 1.5 * half, (name, f.rating(name), true, half)
        assert name == "p0" or 20 < half < 60
    # the maximum-likelihood condition: each player's expected score equals its score
    p = expected_score(f.ratings[:, None] - f.ratings[None, :])
    np.testing.assert_allclose((played * p).sum(axis=1), scores.sum(axis=1), atol=1e-6)


def test_the_anchor_moves_only_the_origin():
    scores, played = tournament(TRUE, 100, np.random.default_rng(1))
    first = fit(NAMES, scores, played, anchor="p0")
    mean = fit(NAMES, scores, played, anchor="mean")
    third = fit(NAMES, scores, played, anchor="p2")
    assert abs(mean.ratings.sum()) < 1e-6 and third.rating("p2") == 0.0
    for a, b in (("p1", "p3"), ("p0", "p5"), ("p2", "p4")):
        d = [g.difference(a, b) for g in (first, mean, third)]
        np.testing.assert_allclose(d[0], d[1], atol=1e-6)
        np.testing.assert_allclose(d[0], d[2], atol=1e-6)
    # the mean anchor's intervals are those of the ratings less their mean: none is 0
    assert all(mean.interval(n)[1] - mean.interval(n)[0] > 0 for n in NAMES)


def test_95_percent_intervals_cover_the_truth_about_95_percent_of_the_time():
    rng = np.random.default_rng(2026)
    true = TRUE[:4]
    names = NAMES[:4]
    covered = total = 0
    for _ in range(300):
        scores, played = tournament(true, 40, rng)
        f = fit(names, scores, played, anchor="p0")
        for a, b in (("p1", "p0"), ("p2", "p3"), ("p3", "p1")):
            _, lo, hi = f.difference(a, b)
            covered += lo <= true[names.index(a)] - true[names.index(b)] <= hi
            total += 1
    assert 0.92 <= covered / total <= 0.98, covered / total


def test_intervals_narrow_as_one_over_the_root_of_the_games():
    rng = np.random.default_rng(3)
    widths = []
    for games in (50, 200, 800):
        scores, played = tournament(TRUE, games, rng)
        f = fit(NAMES, scores, played, anchor="p0")
        lo, hi = f.interval("p3")
        widths.append(hi - lo)
    assert 1.7 < widths[0] / widths[1] < 2.3 and 1.7 < widths[1] / widths[2] < 2.3, widths


def test_draws_count_half():
    names = ["a", "b", "c"]
    games = [("a", "b", 0.5)] * 10 + [("b", "c", 1.0), ("b", "c", 0.0)] * 5 + [("a", "c", 0.5)] * 4
    scores, played = score_tables(names, games)
    assert scores[0, 1] == 5.0 and played[0, 1] == 10 and scores[2, 1] == 5.0
    f = fit(names, scores, played, anchor="a")
    np.testing.assert_allclose(f.ratings, 0.0, atol=1e-6)


def test_a_player_that_lost_every_game_has_no_finite_fit_unless_virtual_draws():
    names = ["a", "b", "c"]
    games = [("a", "b", 1.0), ("a", "b", 0.0), ("a", "c", 1.0), ("b", "c", 1.0), ("b", "c", 1.0)]
    scores, played = score_tables(names, games)
    with pytest.raises(NoFiniteFit, match=r"c scored no point against a, b"):
        fit(names, scores, played)
    f = fit(names, scores, played, anchor="a", virtual_draws=1.0)
    assert f.rating("c") < min(0.0, f.rating("b")) and np.isfinite(f.covariance).all()


def test_players_not_connected_by_games_are_refused():
    names = ["a", "b", "c", "d"]
    scores, played = score_tables(names, [("a", "b", 1.0), ("a", "b", 0.0), ("c", "d", 1.0), ("c", "d", 0.0)])
    with pytest.raises(ValueError, match="do not connect c, d"):
        fit(names, scores, played)
    with pytest.raises(ValueError, match="no games yet for d"):
        fit(names, *score_tables(names, [("a", "b", 1.0), ("b", "c", 0.5), ("a", "c", 0.0)]))
