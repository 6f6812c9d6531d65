"""Deals consistent with what one seat saw: the determinizations of the information-set
evaluator and of the ``ismcts`` house bot.

A :class:`Worlds` is built from one seat's :class:`~kozel.engine.observation.Observation`
(from the engine's observer, the one filter of hidden information), the seat's start hand and,
under ``first_lead: prev_last_trick``, the previous deal's last trick winner. Every card the
seat saw (its hand, its start hand, face-up plays, publicly known cards, the trump card at the
bottom of the talon) stays where it was seen; the cards it never saw are shuffled into the
other hands, the face-down discards and the talon. A drawn deal is replayed from its start
through the public engine API (:meth:`Deal.start`, :meth:`Deal.apply`) and kept only if it
reproduces the seat's position (the seat is asked again), so every card a seat was seen to
hold is placed where it could have been drawn, and face-down discards come from cards it still
had. A ``random_middle`` trump (its place in the talon) and mid-trick interruptions (returned
tricks) are outside the model: :class:`Unmodelled`.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence

from kozel.engine.actions import Action, ActionKind, Combo, Decision
from kozel.engine.cards import CARD_OF
from kozel.engine.deal import Deal
from kozel.engine.observation import Observation, TrickView
from kozel.engine.rules import DrawMode, FirstLead, Ruleset, TrumpMode

_KIND = {"lead": ActionKind.LEAD, "beat": ActionKind.BEAT, "discard": ActionKind.DISCARD}

Reader = Callable[[Deal, int, random.Random], Action]
"""A model of another seat's answer (``deal``, its seat, the dice): see :meth:`Worlds.sample`."""


class Unmodelled(ValueError):
    """A ruleset or observation the model of the hidden cards does not cover."""


class Inconsistent(Exception):
    """This drawn deal does not reproduce the observation (draw another)."""


class Unlikely(Exception):
    """This drawn deal reproduces the observation, but another seat's answers in it are not
    the ones its model would give (a drawn deal dropped, not a failure of the model)."""


def mask(codes: Sequence[str]) -> int:
    m = 0
    for c in codes:
        m |= 1 << CARD_OF[c]
    return m


def bits(m: int) -> list[int]:
    return [c for c in range(36) if m >> c & 1]


def clockwise(active: Sequence[int], start: int, n: int) -> list[int]:
    return [s for k in range(n) if (s := (start + k) % n) in active]


class Worlds:
    """What one observation fixes: the deal's set-up, the plays in order, and which cards
    each seat must have held by when (see the module docstring)."""

    def __init__(
        self,
        rules: Ruleset,
        obs: Observation,
        start_hand: int,
        prev_last_winner: int | None = None,
    ) -> None:
        if rules.trump_mode == TrumpMode.RANDOM_MIDDLE or rules.midtrick_interrupt:
            raise Unmodelled(
                "the hidden cards are not modelled under a random_middle trump or "
                "mid-trick interruptions"
            )
        self.rules = rules
        self.me = obs.seat
        self.players = n = obs.players
        self.active = active = tuple(s.seat for s in obs.seats if s.active)
        self.dealer = obs.dealer
        deck = [c for c in range(36) if rules.deck >> c & 1]
        self.deck = deck
        if not obs.trump_card:
            raise Inconsistent
        self.indicator = CARD_OF[obs.trump_card]
        self.first_leader: int | None = None
        if rules.first_lead == FirstLead.PREV_LAST_TRICK and prev_last_winner is not None:
            self.first_leader = next(
                s for k in range(n) if (s := (prev_last_winner + k) % n) in active
            )
        tricks = list(obs.tricks) + ([obs.trick] if obs.trick and obs.trick.plays else [])
        self.tricks = tricks
        self._slots(obs)
        self._demands(obs, tricks, start_hand)

    def _slots(self, obs: Observation) -> None:
        """Deck positions by seat, with the trick after which each was drawn: the deal goes
        clockwise from the dealer's left, four rounds; then the trump card, which lies under
        the talon."""
        active, n, deck = self.active, self.players, self.deck
        na = len(active)
        order = clockwise(active, obs.dealer, n)
        deal_order = order[1:] + order[:1]
        slots: dict[int, list[tuple[int, int]]] = {s: [] for s in active}  # (time, position)
        for p in range(4 * na):
            slots[deal_order[p % na]].append((0, p))
        talon = list(range(4 * na + 1, len(deck))) + [4 * na]  # positions, top first
        self.indicator_pos = 4 * na
        held = dict.fromkeys(active, 4)
        tpos = 0
        round_robin = self.rules.draw_mode == DrawMode.ROUND_ROBIN
        for t, trick in enumerate(obs.tricks):  # completed tricks: then the draw
            for play in trick.plays:
                held[play.seat] -= play.count
            order = clockwise(active, trick.winner, n)
            tpos = _draw(slots, held, talon, tpos, order, round_robin, t + 1)
        if len(deck) - 4 * na - tpos != obs.talon:
            raise Inconsistent  # the draw model does not match what the seat saw
        self.slots = slots
        self.undrawn = talon[tpos:]

    def _demands(self, obs: Observation, tricks: list[TrickView], start_hand: int) -> None:
        """Cards a seat must have held by a trick (its slot's time <= the trick)."""
        me = self.me
        now = len(obs.tricks)
        demands: dict[int, list[tuple[int, int]]] = {s: [] for s in self.active}
        seen = 0
        for t, trick in enumerate(tricks):
            for play in trick.plays:  # the cards this seat saw played (all of its own)
                if play.cards:
                    m = mask(play.cards)
                    seen |= m
                    demands[play.seat] += [(c, t) for c in bits(m)]
        hand = mask(obs.hand)
        seen |= hand
        demands[me] += [(c, now) for c in bits(hand)]
        for sv in obs.seats:
            if sv.seat != me and sv.known_cards and sv.seat in demands:
                m = mask(sv.known_cards)
                seen |= m
                demands[sv.seat] += [(c, now) for c in bits(m)]
        start = start_hand
        if start and (start & seen) == start:
            got = {c for c, _ in demands[me]}
            demands[me] = [(c, 0 if start >> c & 1 else d) for c, d in demands[me]]
            if not all(c in got for c in bits(start)):
                raise Inconsistent
        # The trump card, once drawn, is known to be in its drawer's hand; if it is known
        # nowhere now and was never played face up, it went in a face-down discard.
        self.shed_indicator = obs.trump_card_drawn and not seen >> self.indicator & 1
        seen |= 1 << self.indicator
        self.keep = {s: {c for c, _ in ds} for s, ds in demands.items()}  # never discarded
        self.demands = {
            s: [(c, d) for c, d in ds if c != self.indicator] for s, ds in demands.items()
        }
        self.unseen = [c for c in self.deck if not seen >> c & 1]

    # -- drawing deals ---------------------------------------------------------------------

    def _placed(self) -> tuple[list[int | None], list[int]]:
        """The deck with the seen cards in place (each demand in the latest slot it allows)
        and the free positions, in order."""
        deck: list[int | None] = [None] * len(self.deck)
        deck[self.indicator_pos] = self.indicator
        free: list[int] = []
        for s, slots in self.slots.items():
            open_slots = sorted((tm, p) for tm, p in slots if p != self.indicator_pos)
            taken = [False] * len(open_slots)
            for card, due in sorted(self.demands[s], key=lambda cd: -cd[1]):
                for i in range(len(open_slots) - 1, -1, -1):
                    if not taken[i] and open_slots[i][0] <= due:
                        taken[i] = True
                        deck[open_slots[i][1]] = card
                        break
                else:
                    raise Inconsistent
            free += [p for (tm, p), used in zip(open_slots, taken) if not used]
        free += [p for p in self.undrawn if p != self.indicator_pos]
        if len(self.unseen) != len(free):
            raise Inconsistent
        return deck, free

    def sample(
        self, rng: random.Random, slack: float | None = None, reader: Reader | None = None
    ) -> Deal:
        """A deal drawn at random from the ones consistent with the observation, replayed up
        to now (or :class:`Inconsistent`). With ``slack`` and a ``reader`` (a model of how
        another seat answers), a deal in which another seat would have answered otherwise is
        dropped (:class:`Unlikely`) but with chance ``slack`` for each such answer."""
        deck, free = self._placed()
        pool = self.unseen[:]
        rng.shuffle(pool)
        for p, c in zip(free, pool):
            deck[p] = c
        return self.replay(deck, rng, slack, reader)

    def replay(
        self,
        deck: list[int | None],
        rng: random.Random,
        slack: float | None = None,
        reader: Reader | None = None,
    ) -> Deal:
        """The deal of ``deck`` replayed up to now; another seat's face-down discards are drawn
        from the cards it held and need not keep."""
        deal = Deal.start(
            self.rules,
            self.players,
            deck,  # type: ignore[arg-type]  # every slot holds a card by now
            self.dealer,
            active=self.active,
            first_leader=self.first_leader,
        )
        shed = self.shed_indicator
        for trick in self.tricks:
            for play in trick.plays:
                _answer_windows(deal, trick)
                if play.forced:
                    continue
                if deal.to_act != (play.seat,):
                    raise Inconsistent
                read = None
                if (
                    slack is not None
                    and reader is not None
                    and play.seat != self.me
                    and deal.decision is Decision.RESPOND
                    and not trick.combo
                ):
                    read = reader(deal, play.seat, rng)
                    if (
                        read.kind is ActionKind.BEAT
                        if not play.cards
                        else read.cards != mask(play.cards)
                    ) and rng.random() >= slack:
                        raise Unlikely
                if play.cards:
                    cards = mask(play.cards)
                else:
                    cards, shed = self._discard(deal, play.seat, play.count, read, shed, rng)
                if play is trick.plays[0] and trick.combo:
                    continue  # led by the declaration window
                deal.apply(play.seat, Action(_KIND[play.kind], cards))
        _answer_windows(deal, None)
        if self.me not in deal.to_act:
            raise Inconsistent
        return deal

    def _discard(
        self,
        deal: Deal,
        seat: int,
        count: int,
        read: Action | None,
        shed: bool,
        rng: random.Random,
    ) -> tuple[int, bool]:
        """Another seat's face-down discard of ``count`` cards: cards it had and need not
        keep (the known trump card first, when it went in a discard); whether the trump card
        is still to be shed."""
        hand = [c for c in bits(deal.hands[seat]) if c not in self.keep[seat]]
        if len(hand) < count:
            raise Inconsistent
        indicator = self.indicator
        if (
            read is not None
            and read.kind is ActionKind.DISCARD
            and not read.cards & ~sum(1 << c for c in hand)
            and (not shed or read.cards >> indicator & 1 or indicator not in hand)
        ):
            picked = bits(read.cards)  # the discard the model would make
            if shed and indicator in picked:
                shed = False
        elif shed and indicator in hand:  # the known trump card goes first
            hand.remove(indicator)
            picked = [indicator, *rng.sample(hand, count - 1)]
            shed = False
        else:
            picked = rng.sample(hand, count)
        return sum(1 << c for c in picked), shed

    # -- every deal --------------------------------------------------------------------------

    def count(self) -> int:
        """How many arrangements of the unseen cards :meth:`every` would try."""
        free = len(self.unseen)
        total = 1
        for k in range(2, free + 1):
            total *= k
        return total

    def every(self, rng: random.Random) -> list[tuple[Deal, int]]:
        """Every consistent deal with its weight: every order of the unseen cards in the free
        places (only sensible when they are few: see :meth:`count`), replayed, those giving
        the same hands and talon (they differ only in cards gone face down) counted as one
        deal weighing as many orders; face-down discards of other seats drawn with ``rng``."""
        deck0, free = self._placed()
        found: dict[tuple[int, ...], Deal] = {}
        weight: dict[tuple[int, ...], int] = {}
        for perm in itertools.permutations(self.unseen):
            deck = deck0[:]
            for p, c in zip(free, perm):
                deck[p] = c
            try:
                deal = self.replay(deck, rng)
            except Inconsistent:
                continue
            key = (*deal.hands, *deal.talon[deal.talon_pos :])
            found.setdefault(key, deal)
            weight[key] = weight.get(key, 0) + 1
        return [(deal, weight[key]) for key, deal in found.items()]


def _answer_windows(deal: Deal, trick: TrickView | None) -> None:
    """Answer declaration windows as the observed trick shows: its leader declared its combo."""
    while deal.decision is Decision.DECLARE:
        for s in deal.to_act:
            if trick is not None and trick.combo and trick.leader == s:
                deal.apply(s, Action(ActionKind.DECLARE, 0, Combo(trick.combo)))
            else:
                deal.apply(s, Action(ActionKind.PASS))
            if deal.decision is not Decision.DECLARE:
                break


def _draw(
    slots: dict[int, list[tuple[int, int]]],
    held: dict[int, int],
    talon: list[int],
    pos: int,
    order: list[int],
    round_robin: bool,
    time_: int,
) -> int:
    """Who takes which talon positions after a trick (the winner first, clockwise, up to four
    cards each; one card a turn or a whole hand a turn)."""
    end = len(talon)
    need = [4 - held[s] for s in order]
    if round_robin:
        for r in range(max(need, default=0)):
            for i, s in enumerate(order):
                if need[i] > r and pos < end:
                    slots[s].append((time_, talon[pos]))
                    held[s] += 1
                    pos += 1
    else:
        for i, s in enumerate(order):
            take = min(need[i], end - pos)
            for p in talon[pos : pos + take]:
                slots[s].append((time_, p))
            held[s] += take
            pos += take
    return pos
