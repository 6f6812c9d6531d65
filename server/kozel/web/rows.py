"""The web's rows: what its queries and sources return and what the JSON API serves, each
declared once here (the API's OpenAPI schema is theirs). A rating's figures come from the
store's own :class:`kozel.ladder.store.Standing`, by field name."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Self

from pydantic import BaseModel, ConfigDict


class Row(BaseModel):
    model_config = ConfigDict(frozen=True)


class Ladder(Row):
    name: str
    bots: int
    matches: dict[str, int]  # by status: running, finished, aborted
    last_match_at: datetime | None = None  # when its latest finished match ended
    # As the referees publish it in the store (None: no live referee serves it): running or
    # stopped, bots connected and waiting for a match, and why they get none ("" if they do).
    state: str | None = None
    waiting_bots: int | None = None
    stalled: str = ""
    capped_groups: int | None = None  # groups of the waiting bots at their meeting cap
    groups: int | None = None  # groups the waiting bots could form


class RatingFigures(Row):
    """A bot's rating on one ladder and its record there (the store's ``Standing`` fields
    but its name)."""

    ordinal: float  # mu - 3 sigma: what standings sort by
    mu: float
    sigma: float
    matches: int
    wins: int
    avg_penalty: float
    timeouts: int
    forfeits: int

    @classmethod
    def figures(cls, standing: Any) -> dict[str, Any]:
        """The figures of a store ``Standing`` (or anything with these attributes)."""
        return {k: getattr(standing, k) for k in RatingFigures.model_fields}


class LuckEstimate(Row):
    """A luck-corrected mean match score with its 95 % interval (null bounds: too few
    independent groups), over ``matches`` matches in ``groups`` duplicate groups, and the
    plain mean score of the same matches."""

    value: float
    low: float | None
    high: float | None
    matches: int
    groups: int
    plain: float


class Standing(RatingFigures):
    rank: int
    bot: str
    luck: LuckEstimate | None = None  # the luck-corrected match score (docs/luck.md)

    @classmethod
    def of(cls, rank: int, standing: Any, luck: LuckEstimate | None = None) -> Self:
        return cls(rank=rank, bot=standing.name, luck=luck, **cls.figures(standing))


class LadderRating(RatingFigures):
    ladder: str


class SeatSummary(Row):
    seat: int
    side: int
    bot: str
    rank: int | None = None  # None: not rated (a replay folder, a running match)
    penalty: int | None = None
    mu_before: float | None = None
    mu_after: float | None = None


class MatchSummary(Row):
    match_id: str
    ladder: str
    status: str
    reason: str | None
    players: int
    started_at: datetime
    ended_at: datetime | None
    seats: list[SeatSummary]


class Opponent(Row):
    opponent: str
    matches: int
    wins: int
    losses: int
    draws: int


class BotInfo(Row):
    name: str
    status: str
    created_at: datetime | None
    ladders: list[LadderRating]
    plays_people: bool = False  # its author lets people play it while it is connected


class RatingPoint(Row):
    match_id: str
    at: datetime | None
    mu: float
    sigma: float


class RunningMatch(Row):
    match_id: str
    ladder: str
    table_id: str
    players: int
    seats: list[str]
    started_at: datetime
    deal: int | None  # the deal in play, from 0 (unknown on a standalone web server)
