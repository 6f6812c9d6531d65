"""The crosstable of an event and its winners by each rule.

A cell (row bot, column bot) counts every played game in which both sat at the table: the row
bot scores 1 when its side ranked above the column bot's, 1/2 on the same rank, 0 below (at two
players, the game's points). Games of one seed group (one seed, every rotation) are not
independent, so each group is one observation: its share of the row bot. The 95 % interval
and P(row beats column) come from the Beta posterior of those observations with a uniform
prior (its normal approximation): a pair that met once is never certain.

Winners: ``standings`` (the top of the last stage: a knockout's champion), ``total_score``
(the best mean score per game over every game, as the ACPC's total bankroll), ``instant_runoff``
(the ACPC's: the bot with the lowest mean score against the bots still in is removed, again
and again), ``copeland`` (most opponents beaten in the crosstable minus those it lost to).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

from kozel.tournament.games import GameResult
from kozel.tournament.intervals import Z95


@dataclass(frozen=True, slots=True)
class Cell:
    """One ordered pair of the crosstable."""

    games: int
    groups: int
    score: float  # the row bot's mean over the games
    low: float
    high: float
    p_beats: float  # P(the row bot's true score against the column bot is above 1/2)
    # The same, corrected for luck, with its 95 % interval (kozel.tournament.luck): None
    # before a game of the pair has its luck.
    luck_corrected: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "games": self.games,
            "groups": self.groups,
            "score": self.score,
            "low": self.low,
            "high": self.high,
            "p_beats": self.p_beats,
            "luck_corrected": self.luck_corrected,
        }


def versus(result: GameResult, row: str, col: str) -> float:
    a, b = result.score_of(row), result.score_of(col)
    return 1.0 if a > b else 0.5 if a == b else 0.0


def group_of(key: str) -> str:
    """A game's seed group (its key without the rotation)."""
    return key.rsplit(".t", 1)[0]


def cell(shares: Sequence[float], games: int, score: float) -> Cell:
    """A cell from its groups' shares (each in [0, 1])."""
    a = 1.0 + sum(shares)
    b = 1.0 + len(shares) - sum(shares)
    mean = a / (a + b)
    sd = math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
    p = NormalDist(mean, sd).cdf(0.5)
    low, high = max(0.0, mean - Z95 * sd), min(1.0, mean + Z95 * sd)
    return Cell(games, len(shares), score, low, high, 1.0 - p)


def crosstable(names: Sequence[str], results: Sequence[GameResult]) -> dict[str, dict[str, Cell]]:
    """Cells by row and column name, for every pair that played."""
    per: dict[tuple[str, str], dict[str, list[float]]] = {}
    for r in results:
        if not r.played:
            continue
        for row in r.seats:
            for col in r.seats:
                if row != col:
                    groups = per.setdefault((row, col), {})
                    groups.setdefault(group_of(r.key), []).append(versus(r, row, col))
    out: dict[str, dict[str, Cell]] = {n: {} for n in names}
    for (row, col), groups in per.items():
        if row not in out:
            continue
        flat = [x for g in groups.values() for x in g]
        shares = [sum(g) / len(g) for g in groups.values()]
        out[row][col] = cell(shares, len(flat), sum(flat) / len(flat))
    return out


def mean_scores(names: Sequence[str], results: Sequence[GameResult]) -> dict[str, float | None]:
    """Each bot's mean points per played game."""
    tot: dict[str, list[float]] = {n: [] for n in names}
    for r in results:
        if r.played:
            for seat, name in enumerate(r.seats):
                if name in tot:
                    tot[name].append(r.points[seat])
    return {n: (sum(v) / len(v) if v else None) for n, v in tot.items()}


def winners(
    rules: Sequence[str],
    names: Sequence[str],
    results: Sequence[GameResult],
    table: Mapping[str, Mapping[str, Cell]],
    top: str | None,
) -> dict[str, str | None]:
    """The winner by each rule (``top``: the last stage's first; None while undecided)."""
    means = mean_scores(names, results)
    out: dict[str, str | None] = {}
    for rule in rules:
        if rule == "standings":
            out[rule] = top
        elif rule == "total_score":
            out[rule] = _best(names, {n: means[n] for n in names})
        elif rule == "instant_runoff":
            out[rule] = _runoff(names, table)
        elif rule == "copeland":
            marks = {
                n: sum((c.score > 0.5) - (c.score < 0.5) for c in table.get(n, {}).values())
                for n in names
            }
            out[rule] = _best(
                names, {n: marks[n] + (means[n] or 0.0) / 10 for n in names if means[n] is not None}
            )
    return out


def _best(names: Sequence[str], value: Mapping[str, float | None]) -> str | None:
    scored = [(v, -names.index(n), n) for n, v in value.items() if v is not None]
    return max(scored)[2] if scored else None


def _runoff(names: Sequence[str], table: Mapping[str, Mapping[str, Cell]]) -> str | None:
    alive = [n for n in names if table.get(n)]
    while len(alive) > 1:

        def against(n: str) -> float:
            cells = [c for m, c in table[n].items() if m in alive]
            games = sum(c.games for c in cells)
            return sum(c.score * c.games for c in cells) / games if games else 0.0

        worst = min(alive, key=lambda n: (against(n), -names.index(n)))
        alive.remove(worst)
    return alive[0] if alive else None
