"""Games and their results: what one match of a pairing is (its key, seats and seed), and the
points a finished match gives each seat.

A pairing is played as seed groups: each group is one seed dealt ``players`` times, the bots
rotated one seat each time, so every bot plays every seat of the same deals (duplicate). Each
pairing has seeds of its own (from the event's seed and the pairing's key): a game's deals
are known to nobody outside its pairing, and its replay stays sealed until every game of its
seed is over.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Game:
    """One match to play: ``seats`` holds entrant names by seat."""

    key: str  # unique in the event: "<pairing key>.g<group>.t<turn>"
    pairing: str  # the pairing's key
    group: int
    turn: int  # the rotation: the pairing's first bot sits at seat ``(players - turn) % players``
    seats: tuple[str, ...]
    seed: bytes


@dataclass(frozen=True, slots=True)
class GameResult:
    """A finished game: what each seat scored (1 for the best side, 0 for the worst, shared
    on ties; see :func:`points_from_ranks`)."""

    key: str
    seats: tuple[str, ...]
    points: tuple[float, ...]
    forfeited: tuple[bool, ...] = ()  # by seat
    penalties: tuple[int, ...] = ()  # by seat: its side's penalty total (penalty game)
    played: bool = True  # False: decided without play (a withdrawn bot)
    match_id: str = ""
    reason: str = ""
    # By seat: its points minus its side's luck (docs/luck.md), once the referee's luck worker
    # computed it from the replay.
    luck_corrected: tuple[float, ...] | None = None

    def score_of(self, name: str) -> float:
        return self.points[self.seats.index(name)]

    def forfeits_of(self, name: str) -> bool:
        return bool(self.forfeited) and self.forfeited[self.seats.index(name)]


@dataclass(frozen=True, slots=True)
class Pairing:
    """Bots that meet: ``order`` is the seat order of the first game."""

    key: str  # "s<stage>.r<round>.p<index>" (knockouts: "s<stage>.<bracket match id>")
    stage: int
    round: int
    order: tuple[str, ...]
    groups: int  # seed groups played (knockouts: more when tied)
    label: str = ""  # a knockout's bracket match id


def group_seed(event_seed: bytes, pairing: str, group: int) -> bytes:
    """The 32-byte seed of one seed group of a pairing (by its key)."""
    material = b"kozel-tournament/v1" + event_seed + pairing.encode() + group.to_bytes(4, "big")
    return hashlib.sha256(material).digest()


def rotated(order: Sequence[str], turn: int) -> tuple[str, ...]:
    """Seats for rotation ``turn``: each bot moves ``turn`` seats on (every bot plays every
    seat once over ``len(order)`` turns; partners at four stay partners)."""
    k = len(order)
    return tuple(order[(seat + turn) % k] for seat in range(k))


def games_of(pairing: Pairing, event_seed: bytes) -> list[Game]:
    """Every game of a pairing: each seed group once per rotation."""
    out: list[Game] = []
    for group in range(pairing.groups):
        seed = group_seed(event_seed, pairing.key, group)
        out.extend(
            Game(
                f"{pairing.key}.g{group}.t{turn}",
                pairing.key,
                group,
                turn,
                rotated(pairing.order, turn),
                seed,
            )
            for turn in range(len(pairing.order))
        )
    return out


def points_from_ranks(side_of: Sequence[int], ranks: Sequence[int]) -> tuple[float, ...]:
    """Points per seat from its side's rank (1 is best): the share of the other sides it
    beat, a tie counting half. Two sides: a win 1, a draw 1/2, a loss 0."""
    sides = len(ranks)
    if sides < 2:
        return tuple(0.5 for _ in side_of)
    out = []
    for side in side_of:
        mine = ranks[side]
        beaten = sum(1 for r in ranks if r > mine) + 0.5 * (sum(1 for r in ranks if r == mine) - 1)
        out.append(beaten / (sides - 1))
    return tuple(out)


def forfeit_result(game: Game, gone: set[str], side_of: Sequence[int]) -> GameResult:
    """A game decided without play: the sides of ``gone`` (withdrawn bots) lose it."""
    lost = {side_of[s] for s, name in enumerate(game.seats) if name in gone}
    n_sides = max(side_of) + 1
    ranks = [2 if side in lost else 1 for side in range(n_sides)]
    return GameResult(
        game.key,
        game.seats,
        points_from_ranks(side_of, ranks),
        forfeited=tuple(name in gone for name in game.seats),
        played=False,
        reason="withdrawn",
    )
