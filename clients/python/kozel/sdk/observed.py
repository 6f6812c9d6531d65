"""A decision request's observation as the engine's :class:`~kozel.engine.Observation`: the
protocol message read back into the engine's view, field for field, so that code written
against the engine's observer (:mod:`kozel.analysis.worlds`, the determinizations of
``ismcts``) reads a bot's requests too."""

from __future__ import annotations

from kozel.engine.observation import Observation, PlayView, SeatView, TrickView
from kozel.v1 import game_pb2

_KIND = {
    game_pb2.ACTION_KIND_LEAD: "lead",
    game_pb2.ACTION_KIND_BEAT: "beat",
    game_pb2.ACTION_KIND_DISCARD: "discard",
}
_COMBO = {game_pb2.COMBO_MOSCOW: "moscow", game_pb2.COMBO_MOLODKA: "molodka"}
_DECISION = {
    game_pb2.DECISION_KIND_LEAD: "lead",
    game_pb2.DECISION_KIND_RESPOND: "respond",
    game_pb2.DECISION_KIND_DECLARE: "declare",
}


def _trick(t: game_pb2.Trick) -> TrickView:
    plays = tuple(
        PlayView(p.seat, _KIND.get(p.kind, "discard"), p.count, tuple(p.cards), p.forced)
        for p in t.plays
    )
    return TrickView(t.leader, t.winner, plays, _COMBO.get(t.combo), t.known_points)


def observation(
    obs: game_pb2.Observation, decision: game_pb2.DecisionKind = game_pb2.DECISION_KIND_UNSPECIFIED
) -> Observation:
    """The engine's view of ``obs``; ``decision`` is the request's kind (none by default)."""
    seats = tuple(
        SeatView(
            s.seat,
            s.side,
            s.active,
            s.hand_size,
            tuple(s.known_cards),
            s.tricks_won,
            s.known_points,
        )
        for s in obs.seats
    )
    return Observation(
        seat=obs.seat,
        players=obs.players,
        dealer=obs.dealer,
        trump=obs.trump,
        trump_card=obs.trump_card,
        trump_card_drawn=obs.trump_card_drawn,
        hand=tuple(obs.hand),
        talon=obs.talon,
        seats=seats,
        tricks=tuple(_trick(t) for t in obs.tricks),
        trick=_trick(obs.trick) if obs.HasField("trick") else None,
        decision=_DECISION.get(decision, "none"),
        to_act=tuple(obs.to_act),
        lead_cap=obs.lead_cap or None,
        deal_over=obs.deal_over,
    )
