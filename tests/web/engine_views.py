"""What the browser must show at each step of a replay, worked out here straight from the
engine (Deal re-played from the recorded deck; observe / full_view), not from the web's JSON."""

from __future__ import annotations

from collections.abc import Iterator

from kozel.core.convert import action_from_pb, ruleset_from_pb
from kozel.engine.cards import CODES
from kozel.engine.deal import Deal
from kozel.engine.observation import Observation, full_view, observe
from kozel.v1 import replay_pb2


def start_deal(replay: replay_pb2.Replay, d: replay_pb2.ReplayDeal) -> Deal:
    return Deal.start(
        ruleset_from_pb(replay.ruleset),
        replay.players,
        [CODES.index(c) for c in d.deck],
        d.dealer,
        active=list(d.active_seats),
        trump_index=d.trump_index if d.HasField("trump_index") else None,
        first_leader=d.first_leader,
    )


def views(
    replay: replay_pb2.Replay, deal_index: int
) -> Iterator[tuple[Observation, list[Observation]]]:
    """(full view, view of each seat) as dealt, then after every step of the deal."""
    d = replay.deals[deal_index]
    deal = start_deal(replay, d)
    yield full_view(deal), [observe(deal, s) for s in range(replay.players)]
    for step in d.steps:
        kind, cards, combo = action_from_pb(step.action)
        deal.play(step.seat, kind, cards, combo)
        yield full_view(deal), [observe(deal, s) for s in range(replay.players)]


def expected_table(obs: Observation, as_seat: int | None) -> dict:
    """What the page shows for an observation: per seat the face-up cards of the hand and the
    number of backs, the trick in play and the last trick (face-up cards or backs)."""
    hands = {}
    for s in obs.seats:
        shown = list(obs.hand) if as_seat == s.seat else list(s.known_cards)
        hands[s.seat] = shown + ["back"] * max(0, s.hand_size - len(shown))

    def trick(t):
        if t is None:
            return []
        return [list(p.cards) if p.cards else ["back"] * p.count for p in t.plays]

    return {
        "hands": hands,
        "trick": trick(obs.trick),
        "last": trick(obs.tricks[-1]) if obs.tricks else [],
        "talon": obs.talon,
    }
