"""Standings of a stage: scores, tie-breaks in the order the stage names them, then the seed.

A pairing's games give each bot game points (1 for the best side of a game, 0 for the worst,
shared on ties; its sum over the pairing). The pairing itself gives pairing points: 1 to the
bot with the most game points, 1/2 each on equal game points (at three or four: the share of
its table mates it outscored, a tie counting half). A stage scores ``pairings`` (Swiss by
default: its score groups) or ``games`` (round robin and gauntlet by default).

Tie-breaks (docs/tournaments.md): ``buchholz`` (the sum of the scores of the bots it met),
``buchholz_cut1`` (without the lowest of them), ``median_buchholz`` (without the highest and
the lowest), ``sonneborn_berger`` (each met bot's score times the pairing points taken from
it), ``head_to_head`` (points taken from the bots on the same score), ``wins`` (pairings
won), ``game_points``, ``penalties`` (fewer penalty points is better). Byes count in the
score, not in Buchholz (a bye has no opponent).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kozel.tournament.games import GameResult


@dataclass(frozen=True, slots=True)
class PairingOutcome:
    """A finished pairing: per bot, its game points, games, pairing points, forfeits and
    penalty points."""

    key: str
    order: tuple[str, ...]
    game_points: dict[str, float]
    games: dict[str, int]
    points: dict[str, float]  # pairing points
    forfeits: dict[str, int]
    penalties: dict[str, int]

    def versus(self, name: str, other: str) -> float:
        """The pairing points ``name`` took from ``other`` (1, 1/2 or 0)."""
        a, b = self.game_points[name], self.game_points[other]
        return 1.0 if a > b else 0.5 if a == b else 0.0


def outcome(key: str, order: Sequence[str], results: Sequence[GameResult]) -> PairingOutcome:
    gp = dict.fromkeys(order, 0.0)
    games = dict.fromkeys(order, 0)
    forfeits = dict.fromkeys(order, 0)
    penalties = dict.fromkeys(order, 0)
    for r in results:
        for seat, name in enumerate(r.seats):
            gp[name] += r.points[seat]
            games[name] += 1
            forfeits[name] += int(bool(r.forfeited) and r.forfeited[seat])
            penalties[name] += r.penalties[seat] if r.penalties else 0
    k = len(order)
    pts = {
        n: sum(1.0 if gp[n] > gp[m] else 0.5 if gp[n] == gp[m] else 0.0 for m in order if m != n)
        / (k - 1)
        for n in order
    }
    return PairingOutcome(key, tuple(order), gp, games, pts, forfeits, penalties)


@dataclass
class Row:
    """One bot's line in a stage's standings."""

    name: str
    seed: int  # 1-based place in the stage's seeding
    score: float = 0.0
    pairings: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0
    byes: int = 0
    game_points: float = 0.0
    games: int = 0
    forfeits: int = 0
    penalties: int = 0
    withdrawn: bool = False
    tie_breaks: dict[str, float] = field(default_factory=dict)
    rank: int = 0
    place: int = 0  # knockouts: the place (bots out in the same round share it)
    # Its luck-corrected game points per game with their 95 % interval, over its games
    # whose luck is known (kozel.tournament.luck.by_bot); None before any.
    luck_corrected: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "rank": self.rank,
            "name": self.name,
            "seed": self.seed,
            "score": self.score,
            "pairings": self.pairings,
            "wins": self.wins,
            "draws": self.draws,
            "losses": self.losses,
            "byes": self.byes,
            "game_points": self.game_points,
            "games": self.games,
            "forfeits": self.forfeits,
            "penalties": self.penalties,
            "withdrawn": self.withdrawn,
            "tie_breaks": dict(self.tie_breaks),
            "place": self.place,
            "luck_corrected": self.luck_corrected,
        }


def standings(
    entrants: Sequence[str],
    outcomes: Sequence[PairingOutcome],
    byes: Mapping[str, int],
    *,
    score: str,
    bye_points: float,
    tie_breaks: Sequence[str],
    withdrawn: set[str] | frozenset[str] = frozenset(),
) -> list[Row]:
    """The stage's standings, best first (``entrants`` in seed order)."""
    rows = {n: Row(n, i + 1, withdrawn=n in withdrawn) for i, n in enumerate(entrants)}
    for o in outcomes:
        for n in o.order:
            _add(rows[n], o, n)
    for n, count in byes.items():
        rows[n].byes = count
    games_per_pairing = max((o.games[n] for o in outcomes for n in o.order), default=1)
    for row in rows.values():
        pairing_score = row.wins + 0.5 * row.draws + _partial(row, outcomes)
        bye = bye_points * row.byes
        row.score = (
            pairing_score + bye
            if score == "pairings"
            else row.game_points + bye * games_per_pairing
        )
    met = _met(outcomes)
    for name in tie_breaks:
        for row in rows.values():
            row.tie_breaks[name] = _tie_break(name, row, rows, outcomes, met)
    ordered = sorted(
        rows.values(),
        key=lambda r: (-r.score, *(-r.tie_breaks[t] for t in tie_breaks), r.seed),
    )
    for i, row in enumerate(ordered):
        row.rank = i + 1
    return ordered


def _add(row: Row, o: PairingOutcome, n: str) -> None:
    row.pairings += 1
    pts = o.points[n]
    if len(o.order) == 2:
        row.wins += pts == 1.0
        row.draws += pts == 0.5
        row.losses += pts == 0.0
    else:  # at a bigger table a win is outscoring every table mate
        row.wins += pts == 1.0
        row.losses += pts == 0.0
        row.draws += 0.0 < pts < 1.0
    row.game_points += o.game_points[n]
    row.games += o.games[n]
    row.forfeits += o.forfeits[n]
    row.penalties += o.penalties[n]


def _partial(row: Row, outcomes: Sequence[PairingOutcome]) -> float:
    """At three or four a table, the pairing points of tables neither won nor lost outright
    (counted as draws above) beyond one half each."""
    extra = 0.0
    for o in outcomes:
        if row.name in o.order and len(o.order) > 2:
            pts = o.points[row.name]
            if 0.0 < pts < 1.0:
                extra += pts - 0.5
    return extra


def _met(outcomes: Sequence[PairingOutcome]) -> dict[str, list[tuple[str, PairingOutcome]]]:
    out: dict[str, list[tuple[str, PairingOutcome]]] = {}
    for o in outcomes:
        for a, b in itertools.permutations(o.order, 2):
            out.setdefault(a, []).append((b, o))
    return out


def _tie_break(
    name: str,
    row: Row,
    rows: Mapping[str, Row],
    outcomes: Sequence[PairingOutcome],
    met: Mapping[str, list[tuple[str, PairingOutcome]]],
) -> float:
    opponents = met.get(row.name, [])
    scores = sorted(rows[m].score for m, _ in opponents)
    if name == "buchholz":
        return sum(scores)
    if name == "buchholz_cut1":
        return sum(scores[1:])
    if name == "median_buchholz":
        return sum(scores[1:-1])
    if name == "sonneborn_berger":
        return sum(o.versus(row.name, m) * rows[m].score for m, o in opponents)
    if name == "head_to_head":
        return sum(o.versus(row.name, m) for m, o in opponents if rows[m].score == row.score)
    if name == "wins":
        return row.wins
    if name == "game_points":
        return row.game_points
    if name == "penalties":
        return -row.penalties
    raise ValueError(f"unknown tie-break {name!r}")
