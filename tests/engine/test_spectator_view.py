"""Spectators see only what anyone watching the table could see; the full view sees all."""

from __future__ import annotations

import random

import pytest

from kozel.engine import Decision, Match, Ruleset, full_view
from kozel.engine.cards import CARD_OF, CODES, cards_in, codes
from kozel.engine.deal import Deal, Declared, Play
from kozel.engine.observation import (
    DrawnView,
    PlayView,
    Spectator,
    event_views,
    hands_after,
    observe,
    public_view,
    visible_cards,
)

TABLES = [("classic", 2), ("classic", 4), ("courtyard", 4), ("money", 5), ("classic-35", 3)]


def _public_cards(deal: Deal) -> set[str]:
    """Cards anyone watching has seen: the indicator, face-up plays, declared hands, and the
    cards the engine marks as publicly known in hands (returned face-up cards)."""
    seen = {CODES[deal.indicator]}
    for entry in deal.log:
        if (isinstance(entry, Play) and entry.face_up) or isinstance(entry, Declared):
            seen |= {CODES[c] for c in cards_in(entry.cards)}
    return seen


@pytest.mark.parametrize(("preset", "players"), TABLES)
def test_a_spectator_sees_no_hidden_card(preset: str, players: int) -> None:
    for seed in range(3):
        match = Match(Ruleset.preset(preset), players, seed)
        rng = random.Random(seed)
        while not match.over:
            deal = match.deal
            view = public_view(deal)
            assert view.hand == () and view.seat == -1 and view.decision == "none"
            if not deal.over:
                leaked = visible_cards(view) - _public_cards(deal)
                assert not leaked, f"a spectator sees {leaked}"
            for ev in event_views(deal, 0, Spectator.PUBLIC):
                if isinstance(ev, PlayView):
                    assert bool(ev.cards) == (ev.kind != "discard"), ev
                elif isinstance(ev, DrawnView):
                    assert ev.cards == ()
            seat = deal.to_act[0]
            match.apply(seat, rng.choice(deal.legal_actions(seat)))


def test_a_sealed_window_looks_to_a_spectator_like_the_play_it_delays() -> None:
    deck = (
        "7D 6C 8D 8C 9H JC QS KC 7H 6S 7S 8S 9S TS JS KS AS 7C 9C TC QC AC 6D 9D TD JD QD "
        "KD AD 6H 8H TH JH QH KH AH"
    )
    deal = Deal.start(Ruleset.preset("classic"), 2, [CARD_OF[c] for c in deck.split()], 1)
    assert deal.decision is Decision.DECLARE and deal.to_act == (1,)
    assert public_view(deal).to_act == observe(deal, 0).to_act == (0,)
    assert full_view(deal).to_act == (1,)  # the full view shows the window


def test_the_full_view_shows_discards_and_every_hand_after_each_event() -> None:
    for seed in range(4):
        match = Match(Ruleset.preset("classic"), 3, seed)
        rng = random.Random(seed)
        deal = match.deal
        start_hands = tuple(tuple(codes(h)) for h in deal.hands)
        while not deal.over:
            seat = deal.to_act[0]
            deal.apply(seat, rng.choice(deal.legal_actions(seat)))
        views = event_views(deal, 0, Spectator.FULL)
        hands = hands_after(deal, 0)
        assert len(views) == len(hands)
        assert hands[-1] == tuple(tuple(codes(h)) for h in deal.hands)
        before = start_hands
        for view, after in zip(views, hands):
            if isinstance(view, PlayView):
                assert view.cards, "the full view shows face-down cards"
                assert set(view.cards) <= set(before[view.seat])
                assert set(after[view.seat]) == set(before[view.seat]) - set(view.cards)
            elif isinstance(view, DrawnView):
                assert [len(a) - len(b) for a, b in zip(after, before)] == list(view.counts)
            else:
                assert after == before
            before = after
        # hands after a later start agree with the whole deal's
        mid = len(deal.log) // 2
        assert hands_after(deal, mid) == hands[len(hands) - len(hands_after(deal, mid)) :]
