"""Elo ratings of a pool of players by maximum likelihood (Bradley-Terry).

Vocabulary
----------
score table  ``scores[i, j]``: the points player i took from its games
             against j (a win 1, a draw half), ``games[i, j]`` how many
             they played; ``games`` is symmetric, ``scores + scores.T`` is
             ``games``.
model        Bradley-Terry in Elo units: i beats j with probability
             ``p_ij = 1 / (1 + 10 ** (-(r_i - r_j) / 400))``; a draw counts
             as half a win and half a loss (its likelihood
             ``sqrt(p_ij (1 - p_ij))``).
fit          the ratings that maximise the log-likelihood of every game,
             ``sum s_ij log p_ij + (g_ij - s_ij) log(1 - p_ij)``, by
             Newton's method on the concave log-likelihood. Only
             differences are determined: the ``anchor`` (a player, rated
             0, or ``"mean"``: the ratings average 0) fixes the origin.
virtual draws ``virtual_draws`` draws added to every pair that met (0:
             none, the plain maximum likelihood). Without them the fit is
             infinite when a group of players never lost (or never won)
             against the rest; ``fit`` then raises NoFiniteFit naming them.
intervals    95% intervals from the Fisher information: the covariance of
             the ratings is the inverse of minus the Hessian of the
             log-likelihood at the fit, with the anchor's row and column
             removed (a player anchor: its interval is 0) or its
             pseudo-inverse (the mean anchor). ``Fit.difference`` gives a
             pair's difference with its own interval (the covariance
             included). Large-sample intervals: their coverage is checked
             by simulation in the tests.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["ELO_SCALE", "Fit", "NoFiniteFit", "Z95", "expected_score", "fit", "score_tables"]

Z95 = 1.959964
ELO_SCALE = 400.0 / math.log(10.0)  # Elo per natural-log odds unit
MAX_ITERATIONS = 200


class NoFiniteFit(ValueError):
    """The maximum-likelihood ratings are infinite (the message names the players)."""


def expected_score(diff: np.ndarray | float) -> np.ndarray | float:
    """The expected score of a player rated ``diff`` Elo above its opponent."""
    return 1.0 / (1.0 + np.power(10.0, -np.asarray(diff, dtype=np.float64) / 400.0))


@dataclass
class Fit:
    names: list[str]
    ratings: np.ndarray  # [P] Elo, anchored
    covariance: np.ndarray  # [P, P] Elo^2
    anchor: str  # a player's name, or "mean"
    log_likelihood: float
    iterations: int

    def rating(self, name: str) -> float:
        return float(self.ratings[self.names.index(name)])

    def interval(self, name: str, z: float = Z95) -> tuple[float, float]:
        """The 95% interval (``z`` standard errors) of a player's rating."""
        i = self.names.index(name)
        half = z * math.sqrt(max(0.0, float(self.covariance[i, i])))
        return float(self.ratings[i]) - half, float(self.ratings[i]) + half

    def difference(self, a: str, b: str, z: float = Z95) -> tuple[float, float, float]:
        """(A's rating less B's, its interval's low and high end)."""
        i, j = self.names.index(a), self.names.index(b)
        c = self.covariance
        d = float(self.ratings[i] - self.ratings[j])
        half = z * math.sqrt(max(0.0, float(c[i, i] + c[j, j] - 2 * c[i, j])))
        return d, d - half, d + half


def score_tables(names: list[str], games: list[tuple[str, str, float]]) -> tuple[np.ndarray, np.ndarray]:
    """(scores, games) tables of ``names`` from ``(a, b, a's score)`` per
    game (1 a win, 0.5 a draw, 0 a loss); games of other players are left out."""
    idx = {n: i for i, n in enumerate(names)}
    scores = np.zeros((len(names), len(names)))
    played = np.zeros((len(names), len(names)))
    for a, b, s in games:
        if a in idx and b in idx and a != b:
            i, j = idx[a], idx[b]
            scores[i, j] += s
            scores[j, i] += 1.0 - s
            played[i, j] += 1
            played[j, i] += 1
    return scores, played


def _unbounded(names: list[str], scores: np.ndarray, games: np.ndarray) -> str | None:
    """Why the maximum likelihood is infinite: a group of players that
    scored no point against the rest (then the rest's ratings run off above
    theirs); None when the graph "i took points from j" is strongly
    connected (the fit is finite). The players are connected by games."""
    n = len(names)
    took = (scores > 0) & (games > 0)  # took[i, j]: i took points from j

    def reach(edges: np.ndarray) -> set[int]:
        seen, todo = {0}, [0]
        while todo:
            i = todo.pop()
            for j in np.flatnonzero(edges[i]):
                if int(j) not in seen:
                    seen.add(int(j))
                    todo.append(int(j))
        return seen

    everyone = set(range(n))
    for group in (everyone - reach(took.T), reach(took)):  # nobody of it took a point from the rest
        rest = everyone - group
        if group and rest:
            return (f"{', '.join(names[i] for i in sorted(group))} scored no point against "
                    f"{', '.join(names[i] for i in sorted(rest))}")
    return None


def fit(names: list[str], scores: np.ndarray, games: np.ndarray, anchor: str = "mean",
        virtual_draws: float = 0.0) -> Fit:
    """The maximum-likelihood Elo ratings of ``names`` (module docstring).
    ``anchor``: a player rated 0, or "mean". ValueError for a pool that is
    not connected or a player without games; NoFiniteFit when the fit is
    infinite."""
    n = len(names)
    if n < 2:
        raise ValueError("a rating needs at least two players")
    if anchor != "mean" and anchor not in names:
        raise ValueError(f"anchor {anchor!r} is neither 'mean' nor one of the players")
    scores = np.array(scores, dtype=np.float64)
    games = np.array(games, dtype=np.float64)
    if virtual_draws > 0:
        met = games > 0
        scores = scores + 0.5 * virtual_draws * met
        games = games + virtual_draws * met
    idle = [names[i] for i in range(n) if games[i].sum() == 0]
    if idle:
        raise ValueError(f"no games yet for {', '.join(idle)}")
    lonely = set(range(n)) - _component(games)
    if lonely:
        raise ValueError(f"the games do not connect {', '.join(names[i] for i in sorted(lonely))} "
                         f"with {names[0]}: their ratings are not comparable")
    why = _unbounded(names, scores, games)
    if why is not None:
        raise NoFiniteFit(f"no finite maximum-likelihood ratings: {why} (more games, or virtual draws, "
                          f"give a finite fit)")
    k = 1.0 / ELO_SCALE
    r = np.zeros(n)
    keep = [i for i in range(n) if anchor == "mean" or names[i] != anchor]  # free ratings (a player anchor: 0)
    it = 0
    for it in range(1, MAX_ITERATIONS + 1):
        grad, hess = _derivatives(r, scores, games, k)
        if anchor == "mean":  # Newton step in the space of sums 0 (the Hessian's null space is the constant)
            step = -np.linalg.pinv(hess) @ grad
        else:
            step = np.zeros(n)
            step[keep] = -np.linalg.solve(hess[np.ix_(keep, keep)], grad[keep])
        step = np.clip(step, -400.0, 400.0)  # a damped first step from far away
        r = r + step
        if anchor == "mean":
            r -= r.mean()
        if np.max(np.abs(step)) < 1e-9:
            break
    _, hess = _derivatives(r, scores, games, k)
    cov = np.zeros((n, n))
    if anchor == "mean":
        cov = np.linalg.pinv(-hess)
    else:
        cov[np.ix_(keep, keep)] = np.linalg.inv(-hess[np.ix_(keep, keep)])
    return Fit(list(names), r, cov, anchor, _log_likelihood(r, scores, games), it)


def _component(games: np.ndarray) -> set[int]:
    """The players connected to player 0 by games."""
    seen, todo = {0}, [0]
    while todo:
        i = todo.pop()
        for j in np.flatnonzero(games[i] > 0):
            if int(j) not in seen:
                seen.add(int(j))
                todo.append(int(j))
    return seen


def _derivatives(r: np.ndarray, scores: np.ndarray, games: np.ndarray, k: float) -> tuple[np.ndarray, np.ndarray]:
    """Gradient [P] and Hessian [P, P] of the log-likelihood in Elo."""
    p = expected_score(r[:, None] - r[None, :])  # [P, P]
    grad = k * (scores - games * p).sum(axis=1)
    w = k * k * games * p * (1.0 - p)
    hess = w - np.diag(w.sum(axis=1))
    return grad, hess


def _log_likelihood(r: np.ndarray, scores: np.ndarray, games: np.ndarray) -> float:
    p = np.clip(expected_score(r[:, None] - r[None, :]), 1e-300, 1.0)
    return float(0.5 * (scores * np.log(p)).sum() + 0.5 * ((games - scores) * np.log(np.clip(1 - p, 1e-300, 1))).sum())
