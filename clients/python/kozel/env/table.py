"""One match of the referee's own seat protocol, in-process and without a clock.

:class:`Table` drives a :class:`kozel.core.protocol.MatchProtocol` (what the referee runs for
every match) with a time that never moves: no request ever times out, no bank is charged, and
the messages each seat is sent are the referee's, byte for byte (the same builders, the same
observation filter). The harness (:mod:`kozel.env.harness`) hands them to bots; the
environments (:mod:`kozel.env.aec`) to encoders. Nothing here reads a clock or does I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from kozel.core.clock import Clock
from kozel.core.messages import EncodedRequest, match_result
from kozel.core.protocol import MatchProtocol, Send
from kozel.engine.match import Match
from kozel.engine.rules import Ruleset
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb

NOW = 0.0  # the table's time, forever: requests are written and answered at once


def ruleset_of(rules: Ruleset | str) -> Ruleset:
    """A ruleset, or the preset of that name."""
    return Ruleset.preset(rules) if isinstance(rules, str) else rules


class Table:
    """One match: :meth:`start`, then :meth:`reply` to the requests in :attr:`asked` until
    :attr:`result` is set. Each call returns the ``(seat, message)`` pairs the referee would
    write, in its order; the ``MatchEnd`` comes last once the match is over (its replay id is
    empty: nothing is written)."""

    def __init__(
        self,
        rules: Ruleset | str,
        players: int,
        seed: bytes | str | int,
        *,
        names: Sequence[str] | None = None,
        match_id: str = "local",
        clock: Clock | None = None,
        max_deals: int = 0,
        wants_events: Sequence[bool] | None = None,
    ) -> None:
        self.core = MatchProtocol(
            match_id=match_id,
            rules=ruleset_of(rules),
            players=players,
            seed=seed,
            clock=clock or Clock(),
            names=list(names) if names is not None else [f"seat{s}" for s in range(players)],
            max_deals=max_deals,
            wants_events=wants_events,
        )
        self.asked: dict[int, EncodedRequest] = {}  # pending requests, in the order sent
        self.result: pb.MatchResult | None = None
        self.decisions = 0  # answers applied or refused

    @property
    def match(self) -> Match:
        """The engine's match (everything, hidden cards included: not for a seat's eyes)."""
        return self.core.match

    @property
    def cut(self) -> bool:
        """The match ended at the deal cap (``max_deals``), not by the rules."""
        return self.core.cut

    def start(self) -> list[Send]:
        """Announce the match and ask the first seats."""
        return self._track(self.core.start(NOW))

    def answer(self, seat: int, legal_index: int) -> list[Send]:
        """``seat`` answers its pending request with an index into its legal actions."""
        return self.reply(seat, self.reply_to(seat, legal_index=legal_index))

    def reply_to(
        self, seat: int, *, legal_index: int | None = None, action: pb.Action | None = None
    ) -> rpb.ActionReply:
        """An answer to ``seat``'s pending request (``ValueError`` if it has none)."""
        request = self.asked.get(seat)
        if request is None:
            raise ValueError(f"seat {seat} has no pending request (asked: {sorted(self.asked)})")
        reply = rpb.ActionReply(match_id=request.match_id, request_id=request.request_id)
        if action is not None:
            reply.action.CopyFrom(action)
        elif legal_index is not None:
            reply.legal_index = legal_index
        return reply

    def reply(self, seat: int, reply: rpb.ActionReply) -> list[Send]:
        """Hand the referee ``seat``'s answer (an illegal one is refused by its rules: a
        ``Rejection``, a retry while any is left, then a forfeit)."""
        self.decisions += 1
        return self._track(self.core.receive(seat, reply, NOW))

    def _track(self, sends: list[Send]) -> list[Send]:
        for seat, msg in sends:
            if isinstance(msg, EncodedRequest):
                self.asked[seat] = msg
        core = self.core
        for seat in list(self.asked):
            pending = core.pending(seat)
            if pending is None or pending.request_id != self.asked[seat].request_id:
                del self.asked[seat]
        if core.ended and self.result is None:
            self.result = match_result(
                core.match,
                forfeits=core.forfeits,
                timeouts=core.timeouts,
                rejections=core.rejections,
                aborted=core.cut,
            )
            sends = sends + list(core.end(self.result, ""))
        return sends
