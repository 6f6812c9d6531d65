"""Ratings with openskill's Plackett-Luce model: two players, three-player free-for-all and
two-player teams. The ranks rated are the engine's (``kozel.engine.match.MatchOutcome.ranks``):
fewest penalty points first (most chips in the money game), forfeited sides last, equal
standings share a rank."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from openskill.models import PlackettLuce

MODEL = PlackettLuce()


@dataclass(frozen=True, slots=True)
class Rating:
    mu: float = MODEL.mu
    sigma: float = MODEL.sigma

    @property
    def ordinal(self) -> float:
        """The conservative estimate the standings sort by: mu - 3 sigma."""
        return self.mu - 3 * self.sigma


def rate(teams: Sequence[Sequence[Rating]], ranks: Sequence[int]) -> list[list[Rating]]:
    """New ratings for every member of every team (a team is a side: one or two seats)."""
    model_teams = [[MODEL.rating(mu=r.mu, sigma=r.sigma) for r in team] for team in teams]
    rated = MODEL.rate(model_teams, ranks=list(ranks))
    return [[Rating(p.mu, p.sigma) for p in team] for team in rated]
