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


@dataclass(frozen=True, slots=True)
class RatedMatch:
    """A finished match as ratings take it: the bots of each side, in side order, and each
    side's rank."""

    id: str
    sides: tuple[tuple[int, ...], ...]
    ranks: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Reset:
    """An operator started ``bot_id`` again from the default rating."""

    bot_id: int


@dataclass(frozen=True, slots=True)
class Standing:
    """A bot's rating and how many rated matches it has (its ``rating_seq`` so far)."""

    rating: Rating = Rating()
    seq: int = 0


@dataclass(frozen=True, slots=True)
class Change:
    """What one match did to one bot's rating."""

    before: Rating
    after: Rating
    seq: int  # this is the bot's seq-th rated match


def replay(
    start: dict[int, Standing], events: Sequence[RatedMatch | Reset]
) -> tuple[dict[str, dict[int, Change]], dict[int, Standing]]:
    """Rate ``events`` in their order from ``start`` (a bot absent from it starts from the
    default rating): every match's change per bot, and where each bot ends. Ratings depend
    only on the results and their order, so the same events from the same start give the same
    numbers to the last digit, whenever and wherever they were committed."""
    now = dict(start)
    changes: dict[str, dict[int, Change]] = {}
    for event in events:
        if isinstance(event, Reset):
            now[event.bot_id] = Standing(Rating(), now.get(event.bot_id, Standing()).seq)
            continue
        before = [[now.get(bot, Standing()) for bot in side] for side in event.sides]
        rated = rate([[s.rating for s in side] for side in before], event.ranks)
        out: dict[int, Change] = {}
        for side, olds, news in zip(event.sides, before, rated):
            for bot, old, new in zip(side, olds, news):
                out[bot] = Change(old.rating, new, old.seq + 1)
                now[bot] = Standing(new, old.seq + 1)
        changes[event.id] = out
    return changes, now
