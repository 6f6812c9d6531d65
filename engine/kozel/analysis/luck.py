"""Luck of a deal, AIVAT-style: the part of each side's card points that chance gave it, with
mean zero whatever the players do, so that ``points - luck`` is an unbiased estimate of what
play earned, with less variance (docs/luck.md says why; Burch et al., AAAI 2018).

A deal has chance events: the deal itself (every hand, and the trump indicator) and each draw
from the talon (the cards drawn, by seat; the indicator card, whose place everyone knows, is
not chance's when it is drawn). For each event and seat the correction is

    value(cards the seat received) - expectation of that value over every outcome of the event

under a **fixed value function**: the sum of a weight per card received, the weight given by
the card's class (the shokha; a trump or a plain card of each rank) and the event's kind (the
deal, or a draw), from :data:`WEIGHTS` for the table's size. The expectation is
exact, in closed form: a value that is a sum over cards has as its expectation the expected
number of cards of each class times their weights, and those counts come from the deck (the
deal: a uniform shuffle) or the talon's unseen cards (a draw: a uniform order). A side's luck
is the sum of its seats' corrections, minus the mean over the sides dealt in (card points add
up to the deck's, so luck adds up to zero too). The weights are frozen: changing them changes
:data:`LUCK_VERSION`. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from kozel.engine.cards import RANK_OF, SHOKHA, SUIT_OF, iter_cards
from kozel.engine.deal import Deal, Drawn
from kozel.engine.match import DealRecord
from kozel.engine.rules import Ruleset

LUCK_VERSION: Final = 1
"""Changes whenever the same deal could get another luck (the weights, the classes, the
events): figures of different versions are not comparable."""

N_CLASSES: Final = 19
"""Card classes: 0 the shokha, 1 + rank a trump, 10 + rank a plain card (rank by strength,
6 7 8 9 J Q K T A as 0 to 8)."""
DEAL, DRAW = 0, 1
"""The kinds of chance event; a feature vector holds :data:`N_CLASSES` counts per kind."""
N_FEATURES: Final = 2 * N_CLASSES

Weights = tuple[float, ...]  # N_FEATURES: by kind, then by class, in card points


def card_class(card: int, trump: int, shokha: bool) -> int:
    """The class of ``card`` when ``trump`` (a suit) is trump (see :data:`N_CLASSES`)."""
    if shokha and card == SHOKHA:
        return 0
    return (1 if SUIT_OF[card] == trump else 10) + RANK_OF[card]


def class_counts(cards: int, trump: int, shokha: bool) -> list[float]:
    """How many cards of the mask ``cards`` fall in each class."""
    out = [0.0] * N_CLASSES
    for c in iter_cards(cards):
        out[card_class(c, trump, shokha)] += 1.0
    return out


def draw_expectation(pool: int, drawn: int, trump: int, shokha: bool) -> list[float]:
    """Expected class counts of ``drawn`` cards taken at random from the mask ``pool``."""
    n = pool.bit_count()
    counts = class_counts(pool, trump, shokha)
    return [drawn * k / n for k in counts] if n else counts


@lru_cache(maxsize=64)
def deal_expectation(deck: int, hand: int, shokha: bool) -> tuple[float, ...]:
    """Expected class counts of one seat's ``hand`` cards when the deck (a mask) is shuffled
    uniformly: the indicator is any card alike, naming trump, and the hand any ``hand`` of the
    others alike."""
    cards = list(iter_cards(deck))
    out = [0.0] * N_CLASSES
    share = hand / (len(cards) * (len(cards) - 1))
    for indicator in cards:
        for c in cards:
            if c != indicator:
                out[card_class(c, SUIT_OF[indicator], shokha)] += share
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Event:
    """One chance event: its kind (:data:`DEAL` or :data:`DRAW`) and its class counts by
    seat, received minus expected (a seat that received nothing has zeros)."""

    kind: int
    excess: tuple[tuple[float, ...], ...]


@dataclass(frozen=True, slots=True)
class DealLuck:
    """A deal's luck by side (None for a side not dealt in), in card points."""

    events: tuple[Event, ...]
    features: tuple[tuple[float, ...] | None, ...]  # by side: N_FEATURES, centred on the sides
    luck: tuple[float | None, ...]
    points: tuple[int | None, ...]  # card points each side took
    penalties: tuple[int | None, ...]  # as the deal added them (None: not a penalty game)
    players: int = 2  # at the table (the weights' key)

    def penalty_luck(self, side: int) -> float | None:
        """The side's luck in penalty points (:data:`PENALTY_PER_POINT`)."""
        lk = self.luck[side]
        return None if lk is None else PENALTY_PER_POINT[_key(self.players)] * lk

    def score_luck(self, side: int) -> float:
        """The side's luck in match score (:data:`SCORE_PER_POINT`; 0 when not dealt in)."""
        lk = self.luck[side]
        return 0.0 if lk is None else SCORE_PER_POINT[_key(self.players)] * lk

    @property
    def corrected(self) -> tuple[float | None, ...]:
        """Each side's card points minus its luck."""
        return tuple(
            None if p is None or lk is None else p - lk for p, lk in zip(self.points, self.luck)
        )


def replay_deal(rules: Ruleset, players: int, record: DealRecord) -> Deal:
    """The deal of ``record`` at its start (its actions not applied)."""
    return Deal.start(
        rules,
        players,
        record.deck,
        record.dealer,
        active=record.active,
        trump_index=record.trump_index,
        first_leader=record.first_leader,
    )


def chance_events(rules: Ruleset, players: int, record: DealRecord) -> list[Event]:
    """The deal's chance events in order, re-played from ``record``."""
    deal = replay_deal(rules, players, record)
    shokha = rules.shokha
    deck = 0
    for c in record.deck:
        deck |= 1 << c
    expected = deal_expectation(deck, 4, shokha)
    zeros = (0.0,) * N_CLASSES
    dealt = [
        _excess(deal.hands[s], expected, deal.trump, shokha) if s in deal.active else zeros
        for s in range(players)
    ]
    events = [Event(DEAL, tuple(dealt))]
    unseen = 0  # the talon's cards not drawn yet, the indicator aside
    for c in deal.talon:
        unseen |= 1 << c
    unseen &= ~(1 << deal.indicator)
    for seat, action in record.actions:
        before = len(deal.log)
        deal.apply(seat, action)
        for entry in deal.log[before:]:
            if isinstance(entry, Drawn):
                events.append(_draw_event(entry, unseen, deal.indicator, deal.trump, shokha))
                for m in entry.cards:
                    unseen &= ~m
    return events


def _excess(cards: int, expected: Sequence[float], trump: int, shokha: bool) -> tuple[float, ...]:
    got = class_counts(cards, trump, shokha)
    return tuple(g - e for g, e in zip(got, expected))


def _draw_event(drawn: Drawn, unseen: int, indicator: int, trump: int, shokha: bool) -> Event:
    """A draw: each seat's chance cards (the indicator is no chance card) against the
    expectation of as many from the unseen talon."""
    out = []
    for cards in drawn.cards:
        chance = cards & ~(1 << indicator)
        expected = draw_expectation(unseen, chance.bit_count(), trump, shokha)
        out.append(_excess(chance, expected, trump, shokha))
    return Event(DRAW, tuple(out))


def side_features(
    events: Sequence[Event], side_of: Sequence[int], active: Sequence[int]
) -> list[tuple[float, ...] | None]:
    """By side: the events' excess counts of its seats, by kind then class, minus the mean
    over the sides dealt in (None for a side not dealt in)."""
    n_sides = max(side_of) + 1
    sides = sorted({side_of[s] for s in active})
    sums = [[0.0] * N_FEATURES for _ in range(n_sides)]
    for ev in events:
        base = ev.kind * N_CLASSES
        for seat in active:
            row = sums[side_of[seat]]
            for k, x in enumerate(ev.excess[seat]):
                row[base + k] += x
    mean = [sum(sums[s][k] for s in sides) / len(sides) for k in range(N_FEATURES)]
    return [
        tuple(x - m for x, m in zip(sums[s], mean)) if s in sides else None for s in range(n_sides)
    ]


def _key(players: int) -> int:
    return min(max(players, 2), 4)


def weights_for(players: int) -> Weights:
    """The frozen weights for a table of ``players`` (five use four's; a deal after an
    elimination keeps its table's)."""
    return WEIGHTS[_key(players)]


def deal_luck(rules: Ruleset, players: int, record: DealRecord) -> DealLuck:
    """The luck of a finished deal (see the module docstring); a voided deal has none."""
    side_of = rules.side_of(players)
    n_sides = max(side_of) + 1
    if record.voided:
        none: tuple[None, ...] = (None,) * n_sides
        return DealLuck((), none, none, none, none, players)
    events = chance_events(rules, players, record)
    feats = side_features(events, side_of, record.active)
    w = weights_for(players)
    luck = tuple(None if f is None else sum(a * b for a, b in zip(w, f)) for f in feats)
    points = tuple(None if f is None else record.card_points[s] for s, f in enumerate(feats))
    pens = record.penalties or (None,) * n_sides
    return DealLuck(tuple(events), tuple(feats), luck, points, tuple(pens), players)


def match_luck(rules: Ruleset, players: int, records: Sequence[DealRecord]) -> list[DealLuck]:
    """The luck of every deal of a match, from its records (``Match.records``)."""
    return [deal_luck(rules, players, r) for r in records]


# fmt: off
WEIGHTS: Final[dict[int, Weights]] = {
    2: (
        # deal: shokha; trumps 6 7 8 9 J Q K T A; plain 6 7 8 9 J Q K T A
        8.59,
        -0.31, -0.63, -0.08, -1.18, 1.02, 0.16, 0.35, 8.19, 8.74,
        -3.76, -3.81, -3.42, -3.69, -3.60, -3.63, -2.83, -0.63, 0.50,
        # draw: shokha; trumps 6 7 8 9 J Q K T A; plain 6 7 8 9 J Q K T A
        10.60,
        0.12, -0.43, 0.01, 0.22, 0.83, 0.95, 1.87, 8.28, 9.31,
        -3.47, -3.55, -3.50, -3.65, -4.32, -4.27, -3.70, -3.34, -1.96,
    ),
    3: (
        # deal: shokha; trumps 6 7 8 9 J Q K T A; plain 6 7 8 9 J Q K T A
        11.72,
        -0.27, -1.11, -0.57, -0.03, 0.15, -0.08, 0.68, 8.42, 10.54,
        -4.87, -4.18, -4.38, -3.88, -3.88, -3.87, -3.10, -1.61, 0.33,
        # draw: shokha; trumps 6 7 8 9 J Q K T A; plain 6 7 8 9 J Q K T A
        12.61,
        -0.30, -1.01, 0.74, -0.34, 0.97, 1.63, 2.50, 9.52, 10.83,
        -4.62, -4.18, -4.24, -4.00, -4.70, -4.36, -4.66, -3.75, -2.64,
    ),
    4: (
        # deal: shokha; trumps 6 7 8 9 J Q K T A; plain 6 7 8 9 J Q K T A
        15.81,
        -2.12, -0.63, -0.10, -1.13, 1.18, 2.37, 4.51, 10.61, 13.34,
        -6.66, -6.03, -5.81, -5.20, -6.11, -4.44, -5.11, -2.46, -2.03,
        # draw: shokha; trumps 6 7 8 9 J Q K T A; plain 6 7 8 9 J Q K T A
        16.88,
        -2.21, -0.09, 0.28, 0.64, 1.42, 3.21, 5.78, 12.35, 13.99,
        -6.44, -6.44, -6.21, -5.82, -6.54, -6.04, -6.10, -4.24, -4.39,
    ),
}
"""By table size: the weight of a card received, in card points of the deal, by event kind
(deal, draw) then class. Fitted once by least squares on greedy-vs-greedy self-play of the
``classic`` preset (:mod:`kozel.tools.luck_fit`, seeds apart from every benchmark's), then
frozen: any change is a new :data:`LUCK_VERSION`."""
# fmt: on

PENALTY_PER_POINT: Final[dict[int, float]] = {2: -0.04076, 3: -0.05205, 4: -0.04997}
"""By table size: a deal's penalty per card point of luck (least squares on the same
calibration deals), so that a penalty's luck is this times the deal's."""
SCORE_PER_POINT: Final[dict[int, float]] = {2: 0.00545, 3: 0.00607, 4: 0.00597}
"""By table size: match score per card point of a deal's luck (least squares of the
centred match score on the match's summed luck, on the same calibration matches)."""
