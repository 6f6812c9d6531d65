"""The match runner: the asyncio driver of one match's protocol core.

``kozel.core.protocol.MatchProtocol`` decides everything (the clock, retries, strikes,
forfeits, what each seat is sent); the runner feeds it answers where they are read (in the
stream's reader task, no hop through another task), arms one timer for its next deadline,
hands its messages to the seat links, and at the end writes the replay before announcing the
result."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import structlog

from kozel.core.clock import Clock
from kozel.core.errors import NotPending
from kozel.core.hooks import MatchHooks
from kozel.core.messages import EncodedRequest
from kozel.core.protocol import MatchProtocol, Send
from kozel.core.steps import StepMeta
from kozel.engine.deal import Deal
from kozel.engine.errors import ErrorCode
from kozel.engine.match import MatchOutcome
from kozel.engine.rules import Ruleset
from kozel.server import metrics
from kozel.server.replay.archive import ReplayArchive
from kozel.server.replay.build import build_replay, result_to_pb
from kozel.server.seats import SeatLink
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb

if TYPE_CHECKING:
    from kozel.server.spectators import SpectatorHub

log = structlog.get_logger("kozel.runner")


@dataclass(slots=True)
class FinishedMatch:
    """What a finished (or aborted) match left behind."""

    match_id: str
    result: pb.MatchResult
    replay_id: str
    replay_path: str
    seating: list[rpb.Player] = field(default_factory=list)
    ended_at: datetime | None = None  # the replay's end time (ratings take results in this order)


class MatchRunner(MatchHooks):
    """Plays one match between the seats behind ``links`` (seat i is ``links[i]``)."""

    def __init__(
        self,
        *,
        rules: Ruleset,
        players: int,
        seed: bytes,
        clock: Clock,
        links: Sequence[SeatLink],
        replays: ReplayArchive,
        table_id: str = "",
        match_id: str | None = None,
        ladder: str = "",
        reveal_seed: bool = True,
        max_deals: int = 0,
        absent: Mapping[int, float] | None = None,
    ) -> None:
        self.match_id = match_id or uuid.uuid4().hex
        # Seats whose bot is not connected at the start, with the loop time their grace period
        # began (a redirected bot that has not arrived: its grace ran from the assignment).
        self._absent = dict(absent or {})
        self.ladder = ladder
        self.log = log.bind(match_id=self.match_id, ladder=ladder)
        self.metrics = metrics.for_ladder(ladder)
        self.rules = rules
        self.players = players
        self.clock = clock
        self.links = links
        self.replays = replays
        self.table_id = table_id
        self.core = MatchProtocol(
            match_id=self.match_id,
            rules=rules,
            players=players,
            seed=seed,
            clock=clock,
            names=[link.name for link in links],
            table_id=table_id,
            reveal_seed=reveal_seed,
            max_deals=max_deals,
            wants_events=[link.wants_events for link in links],
            hooks=self,
        )
        self.match = self.core.match
        self.seating = self.core.seating
        self.started_at = datetime.now(UTC)
        self.outcome: FinishedMatch | None = None
        self.finishing: asyncio.Future[FinishedMatch] | None = None  # the shielded end
        self.spectators: SpectatorHub | None = None  # set by the lobby; fed, never awaited
        self._loop: asyncio.AbstractEventLoop | None = None
        self._done: asyncio.Future[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        for seat, link in enumerate(links):
            link.seat_at(self, seat, self.match_id)

    # -- what the match looks like ---------------------------------------------------------

    @property
    def seed_commitment(self) -> str:
        """The shuffle seed's commitment, published at the start (the seed only at the end)."""
        return self.core.seed_commitment

    def standing(self) -> MatchOutcome:
        """The match's standing now."""
        return self.match.outcome()

    @property
    def public_timeouts(self) -> list[int]:
        """Timeouts per seat as anyone may know them (sealed-window ones once their deal ended)."""
        return self.core.public_timeouts

    @property
    def banks_ms(self) -> list[int]:
        """Every seat's time bank left (ms)."""
        return list(self.core.banks.left_ms)

    @property
    def public_rejections(self) -> list[int]:
        """Refused answers per seat as anyone may know them (see :attr:`public_timeouts`)."""
        return self.core.public_rejections

    @property
    def forfeits(self) -> list[pb.Forfeit]:
        """The forfeits so far, with their deal and reason."""
        return self.core.forfeits

    @property
    def steps(self) -> list[list[StepMeta]]:
        """Per deal, what the referee knows of each applied action (the replay's steps)."""
        return self.core.steps

    # -- the match -------------------------------------------------------------------------

    async def run(self) -> FinishedMatch:
        """Play the match to its end; on cancellation record it as aborted, then re-raise."""
        loop = self._loop = asyncio.get_running_loop()
        self._done = loop.create_future()
        self.metrics.started.inc()
        self.metrics.active.inc()
        aborted = True
        try:
            self._feed(self.core.start, loop.time())
            for seat, since in self._absent.items():
                self._feed(self.core.disconnect, seat, since)
            await self._done
            aborted = self.core.cut
        finally:
            self.metrics.active.dec()
            self.core.abort()
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            # Shielded: a second cancel (a shutdown) does not stop the replay write; whoever
            # settles the match waits for ``finishing`` when ``outcome`` is not set yet.
            self.finishing = asyncio.ensure_future(self._finish(aborted))
            self.outcome = await asyncio.shield(self.finishing)
        return self.outcome

    def receive(self, seat: int, reply: rpb.ActionReply, received_at: float) -> None:
        """An answer from ``seat`` (in the task that read it); raises ``NotPending`` when it
        names no pending request."""
        if self._done is None or self._done.done():
            raise NotPending(f"request {reply.request_id} is not pending; the match has ended")
        self._feed(self.core.receive, seat, reply, received_at, overhead_from=received_at)

    def written(self, seat: int, request_id: int, at: float) -> None:
        """The transport wrote a request to ``seat``: its clock starts."""
        self.core.written(seat, request_id, at)

    def disconnected(self, seat: int) -> None:
        """``seat``'s stream broke (its grace period starts)."""
        self._feed(self.core.disconnect, seat, self._now())

    def resumed(self, seat: int) -> None:
        """``seat`` resumed on a new stream."""
        self._feed(self.core.resume, seat, self._now())

    def _now(self) -> float:
        return (self._loop or asyncio.get_running_loop()).time()

    def _feed(self, step, *args, overhead_from: float = 0.0) -> None:
        """Run one step of the core and carry out what it returns."""
        done = self._done
        if done is None or done.done():  # not started, or over: nothing more is asked
            return
        try:
            sends = step(*args)
        except NotPending:
            raise
        except Exception as exc:  # noqa: BLE001 (a bug: run() records the match as aborted)
            done.set_exception(exc)
            return
        self._send(sends, overhead_from)
        if self.core.ended:
            done.set_result(None)
            return
        self._arm()

    def _send(self, sends: list[Send], overhead_from: float) -> None:
        links = self.links
        asked = False
        for seat, msg in sends:
            links[seat].send(msg)
            asked = asked or isinstance(msg, EncodedRequest)
        if asked and overhead_from:
            self.metrics.overhead.observe(self._now() - overhead_from)

    def _arm(self) -> None:
        """Keep one timer at or before the core's deadline. A timer that fires early finds
        nothing due and is armed again: a deadline that moves later costs no new timer."""
        deadline = self.core.deadline
        timer = self._timer
        if deadline is None:
            return
        if timer is not None and not timer.cancelled() and timer.when() <= deadline:
            return
        if timer is not None:
            timer.cancel()
        assert self._loop is not None
        self._timer = self._loop.call_at(deadline, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._feed(self.core.timer, self._now())

    # -- hooks: the spectator feed, metrics and logs ---------------------------------------

    def deal_started(self, index: int, deal: Deal) -> None:
        if self.spectators is not None:
            self.spectators.deal_started(index, deal)

    def events(self, deal: Deal) -> None:
        if self.spectators is not None:
            self.spectators.events(deal)

    def notice(self, event: rpb.Event) -> None:
        if self.spectators is not None:
            self.spectators.notice(event)

    def deal_ended(self, deal_end: rpb.DealEnd) -> None:
        if self.spectators is not None:
            self.spectators.deal_ended(deal_end)

    def decided(self, seat: int, think_s: float) -> None:
        self.metrics.decisions.inc()
        self.metrics.think.observe(think_s)

    def refused(self, seat: int, code: ErrorCode) -> None:
        metrics.REJECTED.labels(code.name).inc()

    def timed_out(self, seat: int, strikes: int, sealed: bool) -> None:
        if not sealed:
            self.metrics.timeouts.inc()
            self.metrics.strikes.inc()
        self.log.info("timeout", seat=seat, strikes=strikes, sealed=sealed)

    def strikes_released(self, count: int) -> None:
        self.metrics.timeouts.inc(count)
        self.metrics.strikes.inc(count)

    def forfeited(self, seat: int, reason: pb.ForfeitReason) -> None:
        self.metrics.forfeits.inc()
        self.log.info("forfeit", seat=seat, reason=pb.ForfeitReason.Name(reason))

    def cut(self, deals: int) -> None:
        self.log.warning("match_cut", deals=deals)

    def _release(self) -> None:
        """Drop the references that tie the runner into cycles (links, the core's hooks, the
        spectator hub), so a finished match is freed at once by reference counting. Left to
        the cyclic collector, a loaded referee's finished matches piled up into full
        collections that stopped the event loop for a quarter of a second."""
        for link in self.links:
            link.unseat()
        self.core.hooks = MatchHooks()
        self.spectators = None
        self._done = None

    # -- the end -------------------------------------------------------------------------------

    async def _finish(self, aborted: bool) -> FinishedMatch:
        core = self.core
        result = result_to_pb(
            self.match,
            forfeits=core.forfeits,
            timeouts=core.timeouts,
            rejections=core.rejections,
            aborted=aborted,
        )
        ended_at = datetime.now(UTC)
        replay = build_replay(
            self.match,
            match_id=self.match_id,
            names=[link.name for link in self.links],
            time_control=self.clock.to_pb(),
            steps=self.steps,
            result=result,
            started_at=self.started_at,
            ended_at=ended_at,
            table_id=self.table_id,
            ladder=self.ladder,
            duplicate_first_half=not core.reveal_seed,  # a duplicate first half's seed is kept
        )
        path = self.replays.location(self.match_id)
        replay_id = self.match_id
        try:  # on disk before anyone is told
            metrics.REPLAY_BYTES.inc(await asyncio.to_thread(self.replays.write, replay))
        except OSError:
            self.log.exception("replay_write_failed", path=path)
            replay_id = ""
        finally:  # whatever happened to the file, the seats learn the result and are freed
            sends = self.core.end(result, replay_id)
            for seat, msg in sends:
                self.links[seat].send(msg)
            for link in self.links:
                link.match_over()
            if self.spectators is not None:
                self.spectators.match_ended(sends[0][1].match_end)
            # Last: a cancelled run() does not wait for this shielded coroutine, so releasing
            # from there could drop the hub before its spectators heard the end.
            self._release()
        reason = pb.MatchEndReason.Name(result.reason)
        metrics.MATCHES_FINISHED.labels(self.ladder, reason).inc()
        self.log.info("match_ended", reason=reason, replay_id=replay_id)
        return FinishedMatch(self.match_id, result, replay_id, path, self.seating, ended_at)
