"""Observations hold exactly what a seat may know."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kozel.engine import Decision, Match, Ruleset, full_view, observe
from kozel.engine.actions import ActionKind
from kozel.engine.cards import CODES, cards_in
from kozel.engine.observation import (
    SeatObserver,
    Spectator,
    public_view,
    visible_cards,
)

TABLES = [
    ("classic", 2),
    ("classic", 3),
    ("classic", 4),
    ("classic-35", 3),
    ("courtyard", 4),
    ("classic-no-shokha", 2),
    ("balkan", 3),
    ("money", 5),
]


def _public_and_own(match: Match, seat: int, faced_up: set[str]) -> set[str]:
    deal = match.deal
    allowed = set(faced_up) | {CODES[deal.indicator]}
    allowed |= {CODES[c] for c in cards_in(deal.hands[seat])}
    for p in [p for t in deal.tricks for p in t.plays] + deal.trick:
        if p.seat == seat or p.face_up:
            allowed |= {CODES[c] for c in cards_in(p.cards)}
    return allowed


@pytest.mark.parametrize(("preset", "players"), TABLES)
def test_observation_mentions_only_known_cards(preset: str, players: int) -> None:
    rules = Ruleset.preset(preset)
    for seed in range(4):
        match = Match(rules, players, seed)
        rng = random.Random(seed)
        faced_up: set[str] = set()  # every card ever played face up in this deal
        deal_no = 0
        while not match.over:
            if len(match.records) != deal_no:
                deal_no, faced_up = len(match.records), set()
            deal = match.deal
            for p in deal.trick:
                if p.face_up:
                    faced_up |= {CODES[c] for c in cards_in(p.cards)}
            for seat in deal.active:
                obs = observe(deal, seat)
                leaked = visible_cards(obs) - _public_and_own(match, seat, faced_up)
                assert not leaked, f"seat {seat} sees {leaked}"
                assert list(obs.hand) == [CODES[c] for c in cards_in(deal.hands[seat])]
                assert sum(s.hand_size for s in obs.seats) == sum(h.bit_count() for h in deal.hands)
            seat = deal.to_act[0]
            match.apply(seat, rng.choice(deal.legal_actions(seat)))


def test_face_down_discard_hidden_from_others_but_not_owner() -> None:
    rules = Ruleset.preset("classic")
    from kozel.engine.cards import CARD_OF
    from kozel.engine.deal import Deal

    deck = (
        "AC TC 7D 6D 8D QH 9S JS 7H 8C 9C 6S 7S 8S TS QS KS AS "
        "6C 7C JC QC KC 9D TD JD QD KD AD 6H 8H 9H TH JH KH AH"
    )
    deal = Deal.start(rules, 2, [CARD_OF[c] for c in deck.split()], dealer=1)
    deal.play(0, "lead", ["AC"])
    deal.play(1, "discard", ["TC"])
    theirs, mine = observe(deal, 0), observe(deal, 1)
    assert theirs.tricks[0].plays[1].cards == () and theirs.tricks[0].plays[1].count == 1
    assert mine.tricks[0].plays[1].cards == ("TC",)
    assert theirs.seats[0].known_points == 11  # the ace seen, the ten hidden
    assert mine.seats[0].known_points == 21
    assert full_view(deal).tricks[0].plays[1].cards == ("TC",)


def test_sealed_window_is_not_shown_to_others() -> None:
    from kozel.engine.cards import CARD_OF
    from kozel.engine.deal import Deal

    deck = (
        "7D 6C 8D 8C 9H JC QS KC 7H 6S 7S 8S 9S TS JS KS AS 7C 9C TC QC AC 6D 9D TD JD QD "
        "KD AD 6H 8H TH JH QH KH AH"
    )
    deal = Deal.start(Ruleset.preset("classic"), 2, [CARD_OF[c] for c in deck.split()], 1)
    assert deal.decision is Decision.DECLARE and deal.to_act == (1,)
    holder, other = observe(deal, 1), observe(deal, 0)
    assert holder.decision == "declare" and holder.to_act == (1,)
    assert other.decision == "none" and other.to_act == (0,)  # looks like waiting for the lead
    kinds = {a.kind for a in deal.legal_actions(1)}
    assert kinds == {ActionKind.DECLARE, ActionKind.PASS}


@settings(max_examples=60, deadline=None)
@given(table=st.sampled_from(TABLES), seed=st.integers(0, 2**32 - 1))
def test_the_incremental_observer_equals_observe_at_every_step(
    table: tuple[str, int], seed: int
) -> None:
    """SeatObserver (the referee's per-deal path) views each completed trick once; at every
    step, for every seat and spectator, it must equal observe() / public_view() / full_view(),
    including after the deal's end, when every card is shown."""
    preset, players = table
    match = Match(Ruleset.preset(preset), players, seed)
    rng = random.Random(seed)
    plain = {Spectator.PUBLIC: public_view, Spectator.FULL: full_view}
    observers: dict = {}
    while not match.over:
        deal = match.deal
        for who in (*range(players), Spectator.PUBLIC, Spectator.FULL):
            held = observers.get(who)
            if held is None or held.deal is not deal:
                held = observers[who] = SeatObserver(deal, who)
            want = observe(deal, who) if isinstance(who, int) else plain[who](deal)
            assert held.observe() == want
        seat = deal.to_act[0]
        match.apply(seat, rng.choice(deal.legal_actions(seat)))
        if match.records and match.records[-1] is not None and deal is not match.deal:
            for held in observers.values():  # the finished deal, all cards shown
                if held.deal is deal:
                    who = held.observer
                    want = observe(deal, who) if isinstance(who, int) else plain[who](deal)
                    assert held.observe() == want and want.deal_over
