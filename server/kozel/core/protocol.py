"""The seat protocol of one match, sans I/O (in the spirit of h11).

:class:`MatchProtocol` is told what happens — an answer from a seat with its request id, the
transport writing a request, a timer firing, a seat disconnecting or resuming — each with the
time, and returns what to send to which seat; :attr:`MatchProtocol.deadline` says when it next
wants :meth:`MatchProtocol.timer`. It owns the clock (move time, bank, stall grace, think
time), the request ids, retries, strikes, default actions, forfeits, sealed windows, disconnect
grace and resume resends. It never reads a clock, sleeps or touches a socket: the asyncio driver
(``kozel.server.runner``) feeds it, and its tests drive it with a fake clock.
"""

from __future__ import annotations

from collections.abc import Sequence

from kozel.core import convert, messages
from kozel.core.banks import Banks
from kozel.core.clock import Clock, stall_grace
from kozel.core.errors import NotPending
from kozel.core.hooks import MatchHooks
from kozel.core.penalties import Penalties
from kozel.core.requests import Event, Request, State
from kozel.core.steps import StepMeta
from kozel.engine.actions import Action, Decision
from kozel.engine.deal import Deal
from kozel.engine.errors import ErrorCode, IllegalAction
from kozel.engine.match import Match
from kozel.engine.observation import EventView, SeatObserver, event_views, observe
from kozel.engine.players import default_action
from kozel.engine.rules import Ruleset
from kozel.engine.shuffle import commitment
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import replay_pb2

#: A message for one seat: (seat, message); decision requests go as their encoding.
Send = tuple[int, messages.Outgoing]


class MatchProtocol:
    """One match's seat protocol: seat i is asked, told and timed here; times are seconds on
    whatever clock the caller passes in."""

    def __init__(
        self,
        *,
        match_id: str,
        rules: Ruleset,
        players: int,
        seed: bytes | str | int,
        clock: Clock,
        names: Sequence[str],
        table_id: str = "",
        reveal_seed: bool = True,
        max_deals: int = 0,
        wants_events: Sequence[bool] | None = None,
        hooks: MatchHooks | None = None,
    ) -> None:
        self.match_id = match_id
        self.rules = rules
        self.players = players
        self.clock = clock
        self.table_id = table_id
        # False for a duplicate first half: MatchEnd withholds the seed and DealEnd the deck
        # order, which would give away the decks of the twin still to be played.
        self.reveal_seed = reveal_seed
        self.max_deals = max_deals  # the match is cut (aborted) after this many; 0 = no cap
        self.hooks = hooks or MatchHooks()
        self.match = Match(rules, players, seed)
        self.banks = Banks(clock, players)
        self.penalties = Penalties(players, clock.max_strikes)
        self.forfeits: list[pb.Forfeit] = []
        self.steps: list[list[StepMeta]] = [[]]  # per deal, per applied action
        self.seating = [
            rpb.Player(seat=s, name=name, side=self.match.side_of[s])
            for s, name in enumerate(names)
        ]
        self.wants_events = list(wants_events) if wants_events is not None else [True] * players
        self.cut = False  # ended by the deal cap
        self.ended = False  # over, cut or aborted: nothing more is asked
        self._ruleset_pb = convert.ruleset_to_pb(rules)  # for every MatchStart (costly to build)
        self._clock_pb = clock.to_pb()
        self.seed_commitment = commitment(self.match.seed)  # public from the start
        self._next_id = [0] * players  # per seat: ids must not reveal others' requests
        self._pending: list[Request | None] = [None] * players
        self._step: list[Request] = []  # the requests of the step in play
        self._step_deal: Deal | None = None
        self._step_index = 0  # the deal index of the step in play
        self._away: dict[int, float] = {}  # seat: when its disconnect grace runs out
        self._requested: dict[
            int, pb.ForfeitReason
        ] = {}  # seat: forfeit reason requested from outside
        self._observers: list[tuple[SeatObserver, convert.ObservationEncoder] | None] = [
            None
        ] * players
        self._log_pos = 0
        self._deal_announced = -1
        self._out: list[Send] = []

    # -- what anyone may know --------------------------------------------------------------

    @property
    def timeouts(self) -> list[int]:
        """Every timeout per seat (the replay's and MatchEnd's count)."""
        return self.penalties.timeouts

    @property
    def rejections(self) -> list[int]:
        """Every refused answer per seat."""
        return self.penalties.rejections

    @property
    def public_timeouts(self) -> list[int]:
        """Timeouts per seat as anyone may know them (sealed-window ones once their deal ended)."""
        return self.penalties.public_timeouts

    @property
    def public_rejections(self) -> list[int]:
        """Refused answers per seat as anyone may know them."""
        return self.penalties.public_rejections

    @property
    def deadline(self) -> float | None:
        """When :meth:`timer` is next wanted (a request's deadline or a disconnect's grace)."""
        times = [r.deadline for r in self._step if r.open]
        times.extend(self._away.values())
        return min(times) if times else None

    def pending(self, seat: int) -> Request | None:
        """The request ``seat`` has yet to answer, if any."""
        return self._pending[seat]

    # -- what happens ----------------------------------------------------------------------

    def start(self, now: float) -> list[Send]:
        """Announce the match and ask the first seats."""
        for seat in range(self.players):
            self._out.append((seat, rpb.PlayResponse(match_start=self._match_start(seat))))
        self._advance(now)
        return self._flush()

    def written(self, seat: int, request_id: int, now: float) -> None:
        """The transport wrote request ``request_id`` to ``seat``: its clock starts now (once:
        a resend after a resume does not restart it)."""
        req = self._pending[seat]
        if req is not None and req.request_id == request_id and not req.was_written:
            req.written(now)

    def receive(self, seat: int, reply: rpb.ActionReply, now: float) -> list[Send]:
        """Apply ``seat``'s answer received at ``now``; raises :class:`NotPending` when it
        names no pending request (it then changes nothing)."""
        req = self._pending[seat]
        if req is None or reply.request_id != req.request_id:
            raise NotPending(
                f"request {reply.request_id} is not pending"
                + (f"; the pending request is {req.request_id}" if req else "")
            )
        try:
            self._apply(seat, reply, req.legal)
        except IllegalAction as exc:
            self._refuse(req, reply, exc, now)
        else:
            think_ms = req.think_ms(now)
            self.hooks.decided(seat, think_ms / 1000)
            self.banks.charge(seat, think_ms)
            self._steps().append(StepMeta(req.request_id, int(think_ms), False, req.rejections))
            self._resolve(req, Event.ANSWER, now)
        return self._flush()

    def timer(self, now: float) -> list[Send]:
        """Time has come to ``now``: expire what is due (early calls do nothing)."""
        for seat, until in list(self._away.items()):
            if now >= until:
                del self._away[seat]
                self._request_forfeit(seat, pb.FORFEIT_REASON_DISCONNECTED, now)
        for req in list(self._step):
            if req.open and now >= req.deadline:
                self._expire(req, now)
        return self._flush()

    def disconnect(self, seat: int, now: float) -> list[Send]:
        """``seat``'s stream broke: the others are told, and it has ``grace_ms`` to resume."""
        if not self.ended:
            self._notice(seat, rpb.NOTICE_KIND_DISCONNECTED)
            self._away[seat] = now + self.clock.grace_ms / 1000
        return self._flush()

    def resume(self, seat: int, now: float) -> list[Send]:
        """``seat`` is back: it gets the match, the deal in play and its pending request again
        (marked resent), and everyone a notice."""
        self._away.pop(seat, None)
        if self.ended:
            return []
        self._out.append((seat, rpb.PlayResponse(match_start=self._match_start(seat))))
        self._out.append(
            (
                seat,
                rpb.PlayResponse(
                    deal_start=messages.deal_start_of(
                        self.match_id, self.match, observe(self.match.deal, seat)
                    )
                ),
            )
        )
        req = self._pending[seat]
        if req is not None:
            self._out.append((seat, messages.resent(req.message)))
        self._notice(seat, rpb.NOTICE_KIND_RESUMED)
        return self._flush()

    def abort(self) -> None:
        """Stop here (the match is cancelled): nothing more is asked."""
        self.ended = True
        self._pending = [None] * self.players
        self._step = []
        self._away.clear()

    def end(self, result: pb.MatchResult, replay_id: str) -> list[tuple[int, rpb.PlayResponse]]:
        """The match's end for every seat, once its replay is safe."""
        msg = messages.match_end(
            self.match_id, result, replay_id, self.match.seed if self.reveal_seed else b""
        )
        return [(seat, msg) for seat in range(self.players)]

    # -- steps -----------------------------------------------------------------------------

    def _advance(self, now: float) -> None:
        """No request is pending: apply due forfeits, then ask the next seats (or end)."""
        match = self.match
        due = self.penalties.take_due()
        seen = {s for s, _ in due}
        self._forfeit(due + [(s, r) for s, r in self._requested.items() if s not in seen])
        if match.over:
            self.ended = True
            return
        if self.max_deals and len(match.records) >= self.max_deals:
            self.cut = self.ended = True
            self.hooks.cut(len(match.records))
            return
        self._announce_deal()
        deal = self._step_deal = match.deal
        self._step_index = len(match.records)
        sealed = deal.decision is Decision.DECLARE  # only the asked seats know of the window
        self._step = [self._ask(seat, deal, sealed, now) for seat in deal.to_act]

    def _ask(self, seat: int, deal: Deal, sealed: bool, now: float) -> Request:
        legal = deal.legal_actions(seat)
        self._next_id[seat] += 1
        rid = self._next_id[seat]
        held = self._observers[seat]
        if held is None or held[0].deal is not deal:
            held = self._observers[seat] = SeatObserver(deal, seat), convert.ObservationEncoder()
        observer, encoder = held
        msg = messages.encoded_decision(
            self.match_id,
            rid,
            deal.decision,
            legal,
            move_ms=self.clock.move_ms,
            bank_ms=self.banks.left_ms[seat],
            retries_left=self.clock.max_retries,
            observation=encoder.encode(observer.observe()),
        )
        req = Request(
            seat,
            rid,
            msg,
            legal,
            sealed,
            self.banks.allowance_s(seat),
            now,
            retries_left=self.clock.max_retries,
        )
        self._pending[seat] = req
        self._out.append((seat, msg))
        return req

    def _resolve(self, req: Request, event: Event, now: float) -> None:
        req.fire(event)
        self._pending[req.seat] = None
        if any(r.open for r in self._step):
            return
        step, deal = self._step, self._step_deal
        self._step, self._step_deal = [], None
        assert deal is not None
        self._emit_events(deal)
        if deal.over:
            self._deal_end(deal, voided=False)
        self._forfeit([(r.seat, r.forfeit_reason) for r in step if r.state is State.FORFEITED])
        self._advance(now)

    def _apply(self, seat: int, reply: rpb.ActionReply, legal: tuple[Action, ...]) -> None:
        which = reply.WhichOneof("choice")
        if which == "legal_index":
            if reply.legal_index >= len(legal):
                raise IllegalAction(
                    ErrorCode.MALFORMED,
                    f"legal_index {reply.legal_index} is outside the {len(legal)} legal actions",
                )
            self.match.apply(seat, legal[reply.legal_index])
        elif which == "action":
            kind, cards, combo = convert.action_from_pb(reply.action)
            self.match.play(seat, kind, cards, combo)
        else:
            raise IllegalAction(
                ErrorCode.MALFORMED, "the answer has neither legal_index nor action"
            )

    def _refuse(self, req: Request, reply: rpb.ActionReply, exc: IllegalAction, now: float) -> None:
        seat, code = req.seat, convert.ERROR_TO_PB[exc.code]
        self.penalties.refused(seat, req.sealed)
        self.hooks.refused(seat, exc.code)
        req.rejections.append(
            replay_pb2.ReplayRejection(
                code=code, message=exc.message, attempted=_attempted(reply, req.legal)
            )
        )
        left = req.retries_left
        self._out.append(
            (
                seat,
                messages.rejection(
                    self.match_id,
                    req.request_id,
                    code,
                    exc.message,
                    retries_left=left - 1 if left > 0 else None,
                ),
            )
        )
        if left > 0:
            req.retries_left -= 1
            req.fire(Event.REFUSED)
        elif req.sealed:  # passes now; forfeits when the deal ends
            self.penalties.hold_forfeit(seat, pb.FORFEIT_REASON_ILLEGAL_ACTIONS)
            self.match.apply(seat, default_action(self.match.deal, seat))
            self._steps().append(
                StepMeta(req.request_id, int(req.think_ms(now)), False, req.rejections)
            )
            self._resolve(req, Event.REFUSED_LAST_SEALED, now)
        else:
            req.forfeit_reason = pb.FORFEIT_REASON_ILLEGAL_ACTIONS
            self._resolve(req, Event.REFUSED_LAST, now)

    def _expire(self, req: Request, now: float) -> None:
        """The deadline of ``req`` has passed (the timer ran at ``now``)."""
        grace = stall_grace(now - req.deadline)
        if grace and req.state is not State.GRACED:
            req.fire(Event.STALL)
            req.deadline = now + grace
            return
        seat, sealed = req.seat, req.sealed
        over_limit = self.penalties.timed_out(seat, sealed)
        self.hooks.timed_out(seat, self.penalties.timeouts[seat], sealed)
        # In a sealed window only the seat itself may learn that it was asked.
        self._notice(seat, rpb.NOTICE_KIND_TIMEOUT, only=seat if sealed else None)
        if over_limit:
            req.forfeit_reason = pb.FORFEIT_REASON_STRIKES
            self._resolve(req, Event.STRUCK_OUT, now)
            return
        self.banks.empty(seat)
        self.match.apply(seat, default_action(self.match.deal, seat))
        self._steps().append(
            StepMeta(req.request_id, int((now - req.started_at) * 1000), True, req.rejections)
        )
        self._resolve(req, Event.TIMEOUT, now)

    def _steps(self) -> list[StepMeta]:
        """The step records of the deal the step in play belongs to (read before an action
        that ends the deal moves the match on)."""
        return self.steps[self._step_index]

    # -- forfeits --------------------------------------------------------------------------

    def _request_forfeit(self, seat: int, reason: pb.ForfeitReason, now: float) -> None:
        if self.ended:
            return
        req = self._pending[seat]
        if req is not None and req.open:
            req.forfeit_reason = reason
            self._resolve(req, Event.FORFEIT, now)
        else:  # applied before the next step
            self._requested.setdefault(seat, reason)

    def _forfeit(self, requests: list[tuple[int, pb.ForfeitReason]]) -> None:
        """Forfeit seats together: the deal in play is voided once for all of them."""
        match = self.match
        todo = [
            (seat, reason)
            for seat, reason in requests
            if not match.over and match.side_of[seat] not in match.board.eliminated
        ]
        if not todo:
            return
        deal = match.deal
        self._emit_events(deal)
        index = len(match.records)
        for seat, reason in todo:
            self.forfeits.append(pb.Forfeit(seat=seat, deal_index=index, reason=reason))
            self.hooks.forfeited(seat, reason)
        match.forfeit(*(seat for seat, _ in todo))
        for seat, reason in todo:
            self._notice(seat, rpb.NOTICE_KIND_FORFEIT, reason, deal_index=index)
        self._deal_end(deal, voided=True)

    # -- messages --------------------------------------------------------------------------

    def _notice(
        self,
        seat: int,
        kind: rpb.NoticeKind,
        reason: pb.ForfeitReason = pb.FORFEIT_REASON_UNSPECIFIED,
        *,
        only: int | None = None,
        deal_index: int | None = None,
    ) -> None:
        strikes = (
            self.penalties.timeouts[seat]
            if only is not None
            else self.penalties.public_timeouts[seat]
        )
        msg = messages.notice(
            self.match_id,
            len(self.match.records) if deal_index is None else deal_index,
            seat,
            kind,
            strikes=strikes,
            reason=reason,
        )
        for s in range(self.players):
            if (only is None or s == only) and self.wants_events[s]:
                self._out.append((s, msg))
        if only is None:
            self.hooks.notice(msg.event)

    def _announce_deal(self) -> None:
        index = len(self.match.records)
        if index == self._deal_announced:
            return
        self._deal_announced = index
        self._log_pos = 0
        while len(self.steps) <= index:
            self.steps.append([])
        deal = self.match.deal
        standing = self.match.outcome()  # once for every seat's DealStart
        for seat in range(self.players):
            start = messages.deal_start(
                self.match_id,
                index,
                deal,
                observe(deal, seat),
                totals=standing.penalty_totals,
                chips=standing.chips,
            )
            self._out.append((seat, rpb.PlayResponse(deal_start=start)))
        self.hooks.deal_started(index, deal)

    def _emit_events(self, deal: Deal) -> None:
        start = self._log_pos
        if start >= len(deal.log):
            return
        index = self._deal_announced
        made: dict[EventView, rpb.PlayResponse] = {}  # seats that see alike share one message
        for seat in range(self.players):
            if not self.wants_events[seat]:
                continue
            for view in event_views(deal, start, seat):
                msg = made.get(view)
                if msg is None:
                    msg = made[view] = rpb.PlayResponse(
                        event=convert.event_to_pb(self.match_id, index, view)
                    )
                self._out.append((seat, msg))
        self.hooks.events(deal)
        self._log_pos = len(deal.log)

    def _deal_end(self, deal: Deal, voided: bool) -> None:
        released = self.penalties.deal_ended()
        if released:
            self.hooks.strikes_released(released)
        msg = messages.deal_end(
            self.match_id, self.match, deal, voided=voided, reveal_deck=self.reveal_seed
        )
        for seat in range(self.players):
            self._out.append((seat, msg))
        self.hooks.deal_ended(msg.deal_end)

    def _match_start(self, seat: int) -> rpb.MatchStart:
        return messages.match_start(
            self.match_id,
            seat=seat,
            players=self.players,
            ruleset=self._ruleset_pb,
            time_control=self._clock_pb,
            seating=self.seating,
            seed_commitment=self.seed_commitment,
            table_id=self.table_id,
        )

    def _flush(self) -> list[Send]:
        out, self._out = self._out, []
        return out


def _attempted(reply: rpb.ActionReply, legal: tuple[Action, ...]) -> pb.Action:
    if reply.WhichOneof("choice") == "action":
        return reply.action
    if reply.WhichOneof("choice") == "legal_index" and reply.legal_index < len(legal):
        return convert.action_to_pb(legal[reply.legal_index])
    return pb.Action()
