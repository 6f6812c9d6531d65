"""The match runner: one task per match. The only place that turns engine states into messages
and answers into engine actions; it enforces the clock, retries, strikes and forfeits, and
writes the replay before announcing the result."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import structlog

from kozel.engine.actions import Action, Decision
from kozel.engine.cards import codes
from kozel.engine.deal import Deal
from kozel.engine.errors import ErrorCode, IllegalAction
from kozel.engine.match import Match
from kozel.engine.observation import EventView, SeatObserver, event_views, full_view, observe
from kozel.engine.players import default_action
from kozel.engine.rules import Ruleset
from kozel.engine.shuffle import commitment
from kozel.server import convert, metrics
from kozel.core.clock import Clock
from kozel.server.replay.archive import ReplayArchive
from kozel.server.replay.build import StepMeta, build_replay, result_to_pb
from kozel.server.seats import SeatLink, Wake
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import replay_pb2

if TYPE_CHECKING:
    from kozel.server.spectators import SpectatorHub

log = structlog.get_logger("kozel.runner")

# A deadline timer that runs this late means the referee stalled (seconds; less is ordinary
# scheduling jitter, which the allowance absorbs, and the admission lag target) ...
STALL_S = 0.025
# ... and answers get as long again to reach the runner, up to this.
MAX_STALL_GRACE_S = 0.25


@dataclass(slots=True)
class MatchOutcome:
    """What a finished (or aborted) match left behind."""

    match_id: str
    result: pb.MatchResult
    replay_id: str
    replay_path: str
    seating: list[rpb.Player] = field(default_factory=list)


class MatchRunner:
    """Plays one match between the seats behind ``links`` (seat i is ``links[i]``)."""

    def __init__(self, *, rules: Ruleset, players: int, seed: bytes, clock: Clock,
                 links: list[SeatLink], replays: ReplayArchive, table_id: str = "",
                 match_id: str | None = None, ladder: str = "",
                 reveal_seed: bool = True, max_deals: int = 0) -> None:
        self.match_id = match_id or uuid.uuid4().hex
        self.ladder = ladder
        # False for a duplicate first half: MatchEnd withholds the seed and DealEnd the deck
        # order, which would give away the decks of the twin still to be played.
        self.reveal_seed = reveal_seed
        self.max_deals = max_deals  # the match is cut (aborted) after this many; 0 = no cap
        self._cut = False
        self.log = log.bind(match_id=self.match_id, ladder=ladder)
        self.metrics = metrics.for_ladder(ladder)
        self._ready_at = 0.0  # when the runner last got what it waited for (overhead clock)
        self.rules = rules
        self._ruleset_pb = convert.ruleset_to_pb(rules)  # for every MatchStart (costly to build)
        self.players = players
        self.clock = clock
        self.links = links
        self.replays = replays
        self.table_id = table_id
        self.match = Match(rules, players, seed)
        self.banks = [clock.bank_ms] * players
        self.timeouts = [0] * players  # every timeout and refused answer, per seat
        self.rejections = [0] * players
        # The part of those counts that comes from the sealed declaration windows of the deal
        # in play: kept out of every public view (GetMatch, spectators, public notices) until
        # the deal ends, when DealEnd shows every hand and so who was asked. A forfeit earned
        # inside a window waits for the deal's end too, or its timing would give the seat away.
        self._held_timeouts = [0] * players
        self._held_rejections = [0] * players
        self._held_forfeits: dict[int, int] = {}  # seat: reason
        self._due_forfeits: list[tuple[int, int]] = []  # applied before the next step
        self.forfeits: list[pb.Forfeit] = []
        self.steps: list[list[StepMeta]] = [[]]
        self._next_request = [0] * players  # per seat: ids must not reveal others' requests
        # Per seat, for the deal in play: its observations, built and encoded incrementally.
        self._observers: list[tuple[SeatObserver, convert.ObservationEncoder] | None] = \
            [None] * players
        self._log_pos = 0
        self._deal_announced = -1
        self.started_at = datetime.now(UTC)
        self.outcome: MatchOutcome | None = None
        self.finishing: asyncio.Future[MatchOutcome] | None = None  # the shielded end
        self.spectators: SpectatorHub | None = None  # set by the lobby; fed, never awaited
        self.seating = [rpb.Player(seat=s, name=link.name, side=self.match.side_of[s])
                        for s, link in enumerate(links)]
        for seat, link in enumerate(links):
            link.seat = seat
            link.match_id = self.match_id
            link.resync = self._resync_messages(seat)
            link.notice = lambda kind, s=seat: self._notice(s, kind)
            link.grace_s = clock.grace_ms / 1000

    @property
    def public_timeouts(self) -> list[int]:
        """Timeouts per seat as anyone may know them (sealed-window ones once their deal ended)."""
        return [t - h for t, h in zip(self.timeouts, self._held_timeouts)]

    @property
    def public_rejections(self) -> list[int]:
        """Refused answers per seat as anyone may know them (see :attr:`public_timeouts`)."""
        return [r - h for r, h in zip(self.rejections, self._held_rejections)]

    # -- the match -----------------------------------------------------------------------------

    async def run(self) -> MatchOutcome:
        """Play the match to its end; on cancellation record it as aborted, then re-raise."""
        for seat, link in enumerate(self.links):
            link.send(self._match_start(seat))
        self.metrics.started.inc()
        self.metrics.active.inc()
        aborted = True
        try:
            await self._play()
            aborted = self._cut
        finally:
            self.metrics.active.dec()
            # Shielded: a second cancel (a shutdown) does not stop the replay write; whoever
            # settles the match waits for ``finishing`` when ``outcome`` is not set yet.
            self.finishing = asyncio.ensure_future(self._finish(aborted))
            self.outcome = await asyncio.shield(self.finishing)
        return self.outcome

    def _release(self) -> None:
        """Drop the references that tie the runner into cycles (links' callbacks, the
        spectator hub), so a finished match is freed at once by reference counting. Left to
        the cyclic collector, a loaded referee's finished matches piled up into full
        collections that stopped the event loop for a quarter of a second."""
        for link in self.links:
            link.resync = link.notice = None
        self.spectators = None

    async def _play(self) -> None:
        match = self.match
        while not match.over:
            self._apply_requested_forfeits()
            if match.over:
                break
            if self.max_deals and len(match.records) >= self.max_deals:
                self._cut = True
                self.log.warning("match_cut", deals=len(match.records))
                break
            deal = match.deal
            self._announce_deal()
            seats = deal.to_act
            if len(seats) == 1:
                outcomes = [await self._decide(seats[0])]
            else:  # a sealed declaration window: everyone asked answers at once
                async with asyncio.TaskGroup() as group:
                    tasks = [group.create_task(self._decide(s)) for s in seats]
                outcomes = [t.result() for t in tasks]
            self._emit_events(deal)
            if deal.over:
                self._deal_end(deal, voided=False)
            self._forfeit([(seat, reason) for seat, reason in zip(seats, outcomes) if reason])

    def _announce_deal(self) -> None:
        index = len(self.match.records)
        if index == self._deal_announced:
            return
        self._deal_announced = index
        self._log_pos = 0
        while len(self.steps) <= index:
            self.steps.append([])
        for seat, link in enumerate(self.links):
            link.send(self._deal_start(seat))
        if self.spectators is not None:
            self.spectators.deal_started(index, self.match.deal)

    # -- one decision --------------------------------------------------------------------------

    async def _decide(self, seat: int) -> int:
        """Ask ``seat`` and apply its answer; returns a forfeit reason, or 0."""
        loop = asyncio.get_running_loop()
        match, clock, link = self.match, self.clock, self.links[seat]
        deal = match.deal
        if not self._ready_at:
            self._ready_at = loop.time()
        sealed = deal.decision is Decision.DECLARE  # only the asked seats know of the window
        legal = deal.legal_actions(seat)
        self._next_request[seat] += 1
        rid = self._next_request[seat]
        msg = rpb.PlayResponse()
        request = msg.decision  # filled in place: no copies of the observation
        request.match_id, request.request_id = self.match_id, rid
        request.kind = convert.DECISION_TO_PB[deal.decision]
        request.move_ms, request.time_bank_ms = clock.move_ms, max(self.banks[seat], 0)
        request.retries_left = clock.max_retries
        held = self._observers[seat]
        if held is None or held[0].deal is not deal:
            held = self._observers[seat] = SeatObserver(deal, seat), convert.ObservationEncoder()
        observer, encoder = held
        encoder.fill(request.observation, observer.observe())
        convert.add_legal_actions(request, legal)
        sent = loop.time()  # before: a local seat may answer inside begin_request
        self.metrics.overhead.observe(sent - self._ready_at)
        link.begin_request(rid, msg)
        allowance = (clock.move_ms + max(self.banks[seat], 0)) / 1000
        deadline = sent + allowance
        retries = clock.max_retries
        rejected: list[replay_pb2.ReplayRejection] = []
        steps = self.steps[len(match.records)]
        stalled = False
        try:
            while True:
                try:  # a timeout scope, not wait_for: no extra task per decision
                    async with asyncio.timeout_at(deadline):
                        item = await link.replies.get()
                except TimeoutError:
                    if link.written_at > sent:  # it waited in our queue: its clock started late
                        sent, deadline = link.written_at, link.written_at + allowance
                        if deadline > loop.time():
                            continue
                    late = loop.time() - deadline
                    if late > STALL_S and not stalled:
                        # The referee itself stalled past the deadline (a garbage collection,
                        # a burst of work): answers that came in meanwhile are still on their
                        # way through the reader. They get as long again (bounded) to arrive.
                        stalled = True
                        deadline = loop.time() + min(late, MAX_STALL_GRACE_S)
                        continue
                    if link.replies.empty():
                        return self._timeout(seat, rid, sent, rejected, steps, sealed)
                    # It was queued before the timer ran: the referee was late, not the bot.
                    item = link.replies.get_nowait()
                if item is Wake.FORFEIT:
                    return link.forfeit_reason
                self._ready_at = item.received_at
                try:
                    self._apply_reply(seat, item.message, legal)
                except IllegalAction as exc:
                    self.rejections[seat] += 1
                    self._held_rejections[seat] += sealed
                    metrics.REJECTED.labels(exc.code.name).inc()
                    rejected.append(replay_pb2.ReplayRejection(
                        code=convert.ERROR_TO_PB[exc.code], message=exc.message,
                        attempted=_attempted(item.message, legal)))
                    link.send(rpb.PlayResponse(rejection=rpb.Rejection(
                        match_id=self.match_id, request_id=rid, code=convert.ERROR_TO_PB[exc.code],
                        message=exc.message, retry_allowed=retries > 0,
                        retries_left=max(retries - 1, 0))))
                    if retries == 0 and sealed:  # forfeits when the deal ends; passes now
                        self._held_forfeits.setdefault(seat, pb.FORFEIT_REASON_ILLEGAL_ACTIONS)
                        self.match.apply(seat, default_action(self.match.deal, seat))
                        elapsed = int(min(item.received_at - sent, allowance) * 1000)
                        steps.append(StepMeta(rid, max(elapsed, 0), False, rejected))
                        return 0
                    if retries == 0:
                        return pb.FORFEIT_REASON_ILLEGAL_ACTIONS
                    retries -= 1
                    continue
                sent = max(sent, link.written_at)  # the clock started when it was written
                # Never more than the allowance: a stall of the referee is not the bot's time.
                think_ms = min(max(item.received_at - sent, 0.0), allowance) * 1000
                self.metrics.decisions.inc()
                self.metrics.think.observe(think_ms / 1000)
                self.banks[seat] -= max(0, int(think_ms) - clock.move_ms)
                steps.append(StepMeta(rid, int(think_ms), False, rejected))
                return 0
        finally:
            link.end_request()

    def _apply_reply(self, seat: int, reply: rpb.ActionReply, legal: tuple[Action, ...]) -> None:
        which = reply.WhichOneof("choice")
        if which == "legal_index":
            if reply.legal_index >= len(legal):
                raise IllegalAction(ErrorCode.MALFORMED,
                                    f"legal_index {reply.legal_index} is outside the "
                                    f"{len(legal)} legal actions")
            self.match.apply(seat, legal[reply.legal_index])
        elif which == "action":
            kind, cards, combo = convert.action_from_pb(reply.action)
            self.match.play(seat, kind, cards, combo)
        else:
            raise IllegalAction(ErrorCode.MALFORMED, "the answer has neither legal_index nor action")

    def _timeout(self, seat: int, rid: int, sent: float, rejected: list,
                 steps: list[StepMeta], sealed: bool = False) -> int:
        self.timeouts[seat] += 1
        if sealed:  # in a sealed window only the seat itself may learn that it was asked
            self._held_timeouts[seat] += 1
        else:
            self.metrics.timeouts.inc()
            self.metrics.strikes.inc()
        self._ready_at = asyncio.get_running_loop().time()
        self.log.info("timeout", seat=seat, strikes=self.timeouts[seat], sealed=sealed)
        self._notice(seat, rpb.NOTICE_KIND_TIMEOUT, only=seat if sealed else None)
        if not sealed and self.public_timeouts[seat] > self.clock.max_strikes:
            return pb.FORFEIT_REASON_STRIKES
        elapsed = int((asyncio.get_running_loop().time() - sent) * 1000)
        self.banks[seat] = 0
        self.match.apply(seat, default_action(self.match.deal, seat))
        steps.append(StepMeta(rid, elapsed, True, rejected))
        return 0

    # -- forfeits ------------------------------------------------------------------------------

    def _apply_requested_forfeits(self) -> None:
        due, self._due_forfeits = self._due_forfeits, []
        self._forfeit(due + [(seat, link.forfeit_reason) for seat, link in enumerate(self.links)
                             if link.forfeit_reason and seat not in {s for s, _ in due}])

    def _release_window_counts(self) -> None:
        """The deal ended: its sealed-window counts become public, and a seat whose strikes
        (now counted in full) pass the limit, or whose retries ran out in a window, forfeits
        before the next deal is played."""
        held = sum(self._held_timeouts)
        if held:
            self.metrics.timeouts.inc(held)
            self.metrics.strikes.inc(held)
        self._held_timeouts = [0] * self.players
        self._held_rejections = [0] * self.players
        due = dict(self._held_forfeits)
        self._held_forfeits.clear()
        for seat, count in enumerate(self.timeouts):
            if count > self.clock.max_strikes:
                due.setdefault(seat, pb.FORFEIT_REASON_STRIKES)
        self._due_forfeits.extend(sorted(due.items()))

    def _forfeit(self, requests: list[tuple[int, int]]) -> None:
        """Forfeit seats together: the deal in play is voided once for all of them."""
        match = self.match
        todo = [(seat, reason) for seat, reason in requests
                if not match.over and match.side_of[seat] not in match.board.eliminated]
        if not todo:
            return
        deal = match.deal
        self._emit_events(deal)
        index = len(match.records)
        for seat, reason in todo:
            self.forfeits.append(pb.Forfeit(seat=seat, deal_index=index, reason=reason))
            self.metrics.forfeits.inc()
            self.log.info("forfeit", seat=seat, reason=pb.ForfeitReason.Name(reason))
        match.forfeit(*(seat for seat, _ in todo))
        for seat, reason in todo:
            self._notice(seat, rpb.NOTICE_KIND_FORFEIT, reason, deal_index=index)
        self._deal_end(deal, voided=True)

    # -- messages ------------------------------------------------------------------------------

    def _notice(self, seat: int, kind: int, reason: int = 0, *, only: int | None = None,
                deal_index: int | None = None) -> None:
        strikes = self.timeouts[seat] if only is not None else self.public_timeouts[seat]
        notice = rpb.SeatNotice(seat=seat, kind=kind, strikes=strikes, forfeit_reason=reason)
        msg = rpb.PlayResponse(event=rpb.Event(
            match_id=self.match_id, notice=notice,
            deal_index=len(self.match.records) if deal_index is None else deal_index))
        for s, link in enumerate(self.links):
            if (only is None or s == only) and link.wants_events:
                link.send(msg)
        if only is None and self.spectators is not None:
            self.spectators.notice(msg.event)

    def _broadcast(self, make) -> None:
        for seat, link in enumerate(self.links):
            link.send(make(seat))

    def _emit_events(self, deal: Deal) -> None:
        start = self._log_pos
        if start >= len(deal.log):
            return
        index = self._deal_announced
        made: dict[EventView, rpb.PlayResponse] = {}  # seats that see alike share one message
        for seat, link in enumerate(self.links):
            if not link.wants_events:
                continue
            for view in event_views(deal, start, seat):
                msg = made.get(view)
                if msg is None:
                    msg = made[view] = rpb.PlayResponse(
                        event=convert.event_to_pb(self.match_id, index, view))
                link.send(msg)
        if self.spectators is not None:
            self.spectators.events(deal)
        self._log_pos = len(deal.log)

    def _match_start(self, seat: int) -> rpb.PlayResponse:
        return rpb.PlayResponse(match_start=rpb.MatchStart(
            match_id=self.match_id, seat=seat, players=self.players,
            ruleset=self._ruleset_pb, time_control=self.clock.to_pb(),
            seating=self.seating, seed_commitment=commitment(self.match.seed),
            table_id=self.table_id))

    def _deal_start(self, seat: int) -> rpb.PlayResponse:
        deal, match = self.match.deal, self.match
        obs = observe(deal, seat)
        standing = match.outcome()
        return rpb.PlayResponse(deal_start=rpb.DealStart(
            match_id=self.match_id, deal_index=len(match.records), dealer=deal.dealer,
            trump=obs.trump, trump_card=obs.trump_card, hand=obs.hand,
            active_seats=list(deal.active),
            penalty_totals=standing.penalty_totals, chips=standing.chips))

    def _deal_end(self, deal: Deal, voided: bool) -> None:
        match = self.match
        record = match.records[-1]
        self._release_window_counts()
        view = full_view(deal)
        scores = []
        for side in range(match.board.n_sides):
            pen = record.penalties[side] if record.penalties else None
            scores.append(rpb.SideScore(
                side=side, card_points=record.card_points[side] or 0,
                tricks=record.tricks[side] or 0, penalty=pen or 0,
                penalty_total=match.board.totals[side],
                active=any(match.side_of[s] == side for s in deal.active)))
        tricks = [convert.trick_to_pb(t) for t in view.tricks]
        if view.trick is not None:  # a money Bura: the led cards stay on the table
            tricks.append(convert.trick_to_pb(view.trick))
        msg = rpb.PlayResponse(deal_end=rpb.DealEnd(
            match_id=self.match_id, deal_index=record.index, tricks=tricks, scores=scores,
            pot_winners=record.pot_winners, chips=match.outcome().chips,
            voided=voided,
            deck=[codes(1 << c)[0] for c in record.deck] if self.reveal_seed else []))
        self._broadcast(lambda _: msg)
        if self.spectators is not None:
            self.spectators.deal_ended(msg.deal_end)

    def _resync_messages(self, seat: int):
        def resync() -> list[rpb.PlayResponse]:
            """What a resumed bot needs: the match, the deal in play, the pending request."""
            if self.match.over:
                return []
            msgs = [self._match_start(seat), self._deal_start(seat)]
            pending = self.links[seat].pending_msg
            if pending is not None:
                again = rpb.PlayResponse()
                again.CopyFrom(pending)
                again.decision.resent = True
                msgs.append(again)
            return msgs
        return resync

    # -- the end -------------------------------------------------------------------------------

    async def _finish(self, aborted: bool) -> MatchOutcome:
        result = result_to_pb(self.match, forfeits=self.forfeits, timeouts=self.timeouts,
                              rejections=self.rejections, aborted=aborted)
        replay = build_replay(
            self.match, match_id=self.match_id, names=[link.name for link in self.links],
            time_control=self.clock.to_pb(), steps=self.steps, result=result,
            started_at=self.started_at, ended_at=datetime.now(UTC), table_id=self.table_id,
            ladder=self.ladder)
        path = self.replays.location(self.match_id)
        replay_id = self.match_id
        try:  # on disk before anyone is told
            metrics.REPLAY_BYTES.inc(await asyncio.to_thread(self.replays.write, replay))
        except OSError:
            self.log.exception("replay_write_failed", path=path)
            replay_id = ""
        finally:  # whatever happened to the file, the seats learn the result and are freed
            end = rpb.PlayResponse(match_end=rpb.MatchEnd(
                match_id=self.match_id, result=result, replay_id=replay_id,
                seed=self.match.seed if self.reveal_seed else b""))
            for link in self.links:
                link.send(end)
                link.match_over()
            if self.spectators is not None:
                self.spectators.match_ended(end.match_end)
            # Last: a cancelled run() does not wait for this shielded coroutine, so releasing
            # from there could drop the hub before its spectators heard the end.
            self._release()
        reason = pb.MatchEndReason.Name(result.reason)
        metrics.MATCHES_FINISHED.labels(self.ladder, reason).inc()
        self.log.info("match_ended", reason=reason, replay_id=replay_id)
        return MatchOutcome(self.match_id, result, replay_id, path, self.seating)


def _attempted(reply: rpb.ActionReply, legal: tuple[Action, ...]) -> pb.Action:
    if reply.WhichOneof("choice") == "action":
        return reply.action
    if reply.WhichOneof("choice") == "legal_index" and reply.legal_index < len(legal):
        return convert.action_to_pb(legal[reply.legal_index])
    return pb.Action()
