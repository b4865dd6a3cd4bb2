"""Gating: when a newly trained network may become the self-play network.

Vocabulary
----------
candidate   the network a generation's training exported.
best        the network self-play uses now (the last promoted one).
score       the candidate's points per game against the best: a win 1, a
            draw 1/2, a loss 0; ``s`` is their mean.
Elo model   logistic: an Elo difference ``e`` expects the score
            ``1 / (1 + 10^(-e/400))``.
SPRT        Wald's sequential probability ratio test of H0 "the candidate is
            ``elo0`` Elo better" against H1 "it is ``elo1`` better"
            (``elo0 < elo1``). ``llr`` is the log-likelihood ratio of H1 over
            H0 after the games so far, by the normal approximation of the
            games' scores (the "GSPRT" of chess engine testing frameworks):

                llr = n (s1 - s0) (2 s - s0 - s1) / (2 var)

            with ``s0``, ``s1`` the scores the two hypotheses expect and
            ``var`` the variance of the observed per-game scores. The test
            accepts H1 when ``llr`` reaches ``log((1 - beta) / alpha)`` and H0
            when it falls to ``log(beta / (1 - alpha))``: a candidate that is
            no better than ``elo0`` is promoted with probability at most
            ``alpha``; one that is ``elo1`` better is refused with probability
            at most ``beta``.
rule        ``GateRule``: ``"sprt"`` (the test above, played in rounds of
            ``round_games`` games; a test still open after ``max_games``
            refuses the candidate: only evidence promotes), ``"win_rate"``
            (promote when the candidate scores at least ``win_rate`` of
            ``max_games`` games), or ``"none"`` (always promote; the games
            are only reported).
decision    ``"promote"``, ``"refuse"`` or ``"play"`` (more games needed).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Decision = Literal["promote", "refuse", "play"]


def expected_score(elo: float) -> float:
    """The score an Elo advantage ``elo`` expects (logistic model)."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def sprt_bounds(alpha: float, beta: float) -> tuple[float, float]:
    """(lower, upper) bounds of the log-likelihood ratio: H0 at or below the
    lower, H1 at or above the upper."""
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


def sprt_llr(wins: int, draws: int, losses: int, elo0: float, elo1: float) -> float:
    """The log-likelihood ratio of H1 (``elo1``) over H0 (``elo0``) after
    these games (see the vocabulary); 0 while the scores do not vary yet
    (no game, or every game the same result, which the normal approximation
    cannot weigh: at least one result of another kind is needed)."""
    n = wins + draws + losses
    if n == 0:
        return 0.0
    s = (wins + 0.5 * draws) / n
    var = (wins * (1.0 - s) ** 2 + draws * (0.5 - s) ** 2 + losses * s ** 2) / n
    if var <= 0.0:  # one kind of result only: weighed as if one more game had gone the other way
        if draws == n:
            return 0.0
        return sprt_llr(wins + (losses == n), draws, losses + (wins == n), elo0, elo1)
    s0, s1 = expected_score(elo0), expected_score(elo1)
    return n * (s1 - s0) * (2.0 * s - s0 - s1) / (2.0 * var)


@dataclass
class GateRule:
    """How a candidate earns promotion (see the vocabulary). Built from the
    loop's checked settings (``loop.LoopConfig.gate_rule``), which name the
    keys in their errors."""

    mode: Literal["sprt", "win_rate", "none"] = "sprt"
    elo0: float = 0.0
    elo1: float = 35.0
    alpha: float = 0.05
    beta: float = 0.10
    win_rate: float = 0.55
    round_games: int = 20  # games played between two looks at the test (even: colours alternate in pairs)
    max_games: int = 400

    def decide(self, wins: int, draws: int, losses: int) -> Decision:
        """The decision after these games of the candidate against the best."""
        n = wins + draws + losses
        if self.mode == "none":
            return "promote" if n >= self.max_games else "play"
        if self.mode == "win_rate":
            if n < self.max_games:
                return "play"
            return "promote" if (wins + 0.5 * draws) / n >= self.win_rate else "refuse"
        lower, upper = sprt_bounds(self.alpha, self.beta)
        llr = sprt_llr(wins, draws, losses, self.elo0, self.elo1)
        if llr >= upper:
            return "promote"
        if llr <= lower or n >= self.max_games:
            return "refuse"
        return "play"

    def next_round(self, games_so_far: int) -> int:
        """Games to play before the next look (0 when the budget is spent)."""
        return max(0, min(self.round_games, self.max_games - games_so_far))

    def describe(self) -> str:
        """The rule in one line, for logs and docs."""
        if self.mode == "sprt":
            return (f"SPRT elo0 {self.elo0:g} elo1 {self.elo1:g} alpha {self.alpha:g} beta {self.beta:g}, "
                    f"rounds of {self.round_games}, at most {self.max_games} games (refused if still open)")
        if self.mode == "win_rate":
            return f"at least {self.win_rate:.0%} of {self.max_games} games"
        return f"always promoted ({self.max_games} games reported)"
