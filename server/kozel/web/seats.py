"""A seat for a person: the web plays it as a client of the referee's ``Play`` protocol, the
same one bots speak, so the referee's rules, clock, resume and replays apply unchanged.

:class:`Seats` opens a table on the referee (``CreateTable``: house bots at the other seats,
or a seat left for the person's own bot), then plays the person's seat with the SDK's client
(:func:`kozel.sdk.play`) and a :class:`PersonBot`, whose decisions wait for the person's
answer from the page. Each :class:`Seat` keeps what the referee sent that seat, and only that
(the engine's observer on the referee decides what a seat may see); the page reads it with the
seat's secret token. A reload of the page finds the seat still playing: the stream to the
referee is the web's, not the browser's. Table matches are never rated.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc
from fastapi import HTTPException
from google.protobuf.json_format import MessageToDict

from kozel.ladder.store import Store
from kozel.sdk import AsyncBot, play
from kozel.sdk.house_bots import HOUSE_BOTS
from kozel.server.peers import FORWARDED, PROXY_KEY
from kozel.server.text import name_problem
from kozel.v1 import game_pb2, referee_pb2, referee_pb2_grpc

# Clocks made for people: (move_ms, bank_ms). The bank covers a long think now and then.
CLOCKS: dict[str, tuple[int, int]] = {
    "relaxed": (60_000, 300_000),
    "standard": (30_000, 120_000),
    "quick": (15_000, 60_000),
}
RULESETS = ("classic", "classic-no-shokha", "classic-no-combos", "courtyard", "balkan")
OPPONENTS = tuple(sorted(HOUSE_BOTS))
OWN_BOT = ""  # an opponent seat left for a remote bot (the person's own) to join
LADDER_BOT = "bot:"  # "bot:NAME": the connected ladder bot NAME, whose account plays people
OPPONENTS_TTL_S = 1.0  # the referee's list of opponents is asked at most this often
LOG_KEPT = 200  # events kept per seat for the page
COALESCE_S = 0.1  # a page's state waits this long for the rest of a burst of events
GRACE_MS = 15_000  # the seat's stream may drop (a web restart) this long before it forfeits


# The referee's refusals of a table, as HTTP statuses (others are 502: the referee failed).
REFUSALS = {
    grpc.StatusCode.RESOURCE_EXHAUSTED: 429,
    grpc.StatusCode.FAILED_PRECONDITION: 409,  # a ladder bot that plays no people, or is away
    grpc.StatusCode.INVALID_ARGUMENT: 422,
    grpc.StatusCode.UNAVAILABLE: 503,
}


class SeatError(HTTPException):
    """A seat the web cannot open or an answer it cannot take: an HTTP error saying why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(status, message)
        self.message = message


@dataclass(frozen=True, slots=True)
class SeatRequest:
    """What a person asks for: their name, the table and its clock."""

    name: str
    players: int = 2
    opponents: tuple[str, ...] = ("greedy",)  # the other seats, in order; "" = your own bot
    clock: str = "standard"
    ruleset: str = "classic"
    deals: int = 0  # 0: to the penalty limit; N: exactly N deals

    def problem(self) -> str | None:
        """Why this request is refused (None: it is fine)."""
        if why := name_problem(self.name, "name"):
            return why
        if not 2 <= self.players <= 4:
            return f"players must be 2, 3 or 4, not {self.players}"
        if len(self.opponents) != self.players - 1:
            return f"a table of {self.players} needs {self.players - 1} opponents"
        if any(_opponent_problem(o) for o in self.opponents):
            return (
                f"opponents are house bots ({', '.join(OPPONENTS)}), your own bot (''), or "
                "'bot:NAME' for a connected bot that plays people"
            )
        if self.clock not in CLOCKS:
            return f"clock must be one of {', '.join(CLOCKS)}"
        if self.ruleset not in RULESETS:
            return f"ruleset must be one of {', '.join(RULESETS)}"
        if not 0 <= self.deals <= 20:
            return "deals must be 0 (to the penalty limit) to 20"
        return None

    def table(self) -> referee_pb2.CreateTableRequest:
        """The table: the person at seat 0 (the first remote seat to be joined), the
        opponents after; a person's clock."""
        move_ms, bank_ms = CLOCKS[self.clock]
        ruleset = game_pb2.Ruleset(preset=self.ruleset)
        if self.deals:
            ruleset.options.update({"fixed_deals": self.deals})
        ladder = [o.removeprefix(LADDER_BOT) if ladder_bot(o) else "" for o in self.opponents]
        return referee_pb2.CreateTableRequest(
            ruleset=ruleset,
            players=self.players,
            time_control=game_pb2.TimeControl(
                move_ms=move_ms, bank_ms=bank_ms, max_strikes=3, max_retries=2, grace_ms=GRACE_MS
            ),
            house_bots=[OWN_BOT, *("" if ladder_bot(o) else o for o in self.opponents)],
            ladder_bots=["", *ladder] if any(ladder) else [],
        )


def ladder_bot(opponent: str) -> bool:
    """Whether an opponent names a ladder bot ("bot:NAME")."""
    return opponent.startswith(LADDER_BOT)


def _opponent_problem(opponent: str) -> bool:
    """Whether ``opponent`` is none of a house bot, your own bot and "bot:NAME"."""
    if ladder_bot(opponent):
        return name_problem(opponent.removeprefix(LADDER_BOT), "bot") is not None
    return opponent != OWN_BOT and opponent not in OPPONENTS


def _dict(msg: Any) -> dict[str, Any]:
    return MessageToDict(msg, preserving_proto_field_name=True)


@dataclass
class Seat:
    """One person's seat: what the referee sent it, and the decision it waits for."""

    id: str
    token: str
    name: str
    address: str
    table_id: str = ""
    own_bot: bool = False  # a seat waits for the person's own bot to join the table
    waiting_for: list[str] = field(default_factory=list)  # ladder bots, until the match starts
    version: int = 0
    start: dict[str, Any] | None = None
    deal: dict[str, Any] | None = None
    hand: list[str] = field(default_factory=list)
    talon: int | None = None
    trick: list[dict[str, Any]] = field(default_factory=list)  # plays of the trick in play
    last_trick: dict[str, Any] | None = None
    observation: dict[str, Any] | None = None
    deal_ends: list[dict[str, Any]] = field(default_factory=list)
    end: dict[str, Any] | None = None
    error: str = ""
    log: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=LOG_KEPT))
    request: referee_pb2.DecisionRequest | None = None
    rejection: str = ""
    asked_at: float = 0.0
    answer: asyncio.Future[int] | None = None
    task: asyncio.Task[None] | None = None
    ended_at: float | None = None
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def open(self) -> bool:
        return self.ended_at is None

    def bump(self) -> None:
        """Something changed: wake the pages waiting for it."""
        self.version += 1
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait(self, after: int, timeout: float) -> None:
        """Return once the version is past ``after``, or after ``timeout`` seconds. While
        the bots play, changes come in bursts: one answer takes what ``COALESCE_S`` more
        brings (a decision for the person is shown at once)."""
        if self.version > after:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)
            if self.request is None and self.open:
                await asyncio.sleep(COALESCE_S)

    def finish(self, error: str = "") -> None:
        if self.ended_at is None:
            self.ended_at = time.monotonic()
        if error and self.end is None:
            self.error = error
        self.request = None
        self.bump()

    def leave(self) -> None:
        """Stop playing: the stream closes (the referee forfeits the seat after its grace)."""
        if self.task is not None and self.open:
            self.task.cancel()
        self.finish("you left the table: your seat forfeits")

    def answer_with(self, request_id: int, index: int) -> None:
        """The person's answer (an index into the pending request's legal actions)."""
        request, future = self.request, self.answer
        if request is None or future is None or future.done():
            raise SeatError(409, "no decision is awaited from you now")
        if request.request_id != request_id:
            raise SeatError(409, "that decision is over; this page shows the current one")
        if not 0 <= index < len(request.legal_actions):
            raise SeatError(422, f"index must be 0 to {len(request.legal_actions) - 1}")
        future.set_result(index)
        self.request = None
        self.bump()

    def view(self) -> dict[str, Any]:
        """What the page shows: only what the referee sent this seat."""
        request = None
        if self.request is not None:
            r = self.request
            request = {
                "request_id": str(r.request_id),
                "kind": game_pb2.DecisionKind.Name(r.kind),
                "move_ms": r.move_ms,
                "time_bank_ms": r.time_bank_ms,
                "elapsed_ms": int((time.monotonic() - self.asked_at) * 1000),
                "legal_actions": [_dict(a) for a in r.legal_actions],
                "retries_left": r.retries_left,
            }
        return {
            "seat_id": self.id,
            "name": self.name,
            "version": self.version,
            "table_id": self.table_id,
            "own_bot": self.own_bot,
            "waiting_for": self.waiting_for,
            "match": self.start,
            "deal": self.deal,
            "hand": self.hand,
            "talon": self.talon,
            "trick": self.trick,
            "last_trick": self.last_trick,
            "observation": self.observation,
            "request": request,
            "rejection": self.rejection,
            "deal_ends": self.deal_ends,
            "end": self.end,
            "error": self.error,
            "log": list(self.log),
        }


class PersonBot(AsyncBot):
    """The SDK's bot for a person's seat: every message goes into the :class:`Seat`, and a
    decision waits for the person's answer."""

    def __init__(self, seat: Seat) -> None:
        self.seat = seat

    def on_match_start(self, msg: referee_pb2.MatchStart) -> None:
        self.seat.start = _dict(msg)
        self.seat.own_bot = False
        self.seat.waiting_for = []
        self.seat.bump()

    def on_deal_start(self, msg: referee_pb2.DealStart) -> None:
        s = self.seat
        s.deal, s.hand, s.trick, s.last_trick = _dict(msg), list(msg.hand), [], None
        s.observation, s.talon = None, None
        s.log.append({"deal_start": s.deal})
        s.bump()

    def on_event(self, msg: referee_pb2.Event) -> None:
        s, which = self.seat, msg.WhichOneof("kind")
        if which is None:
            return
        body = getattr(msg, which)
        mine = s.start is not None and body_seat(body) == s.start.get("seat", 0)
        if which == "played":
            s.trick.append(_dict(body))
            if mine:
                s.hand = [c for c in s.hand if c not in set(body.cards)]
        elif which == "trick_taken":
            s.last_trick, s.trick = _dict(body.trick), []
        elif which == "drawn":
            s.hand = [*s.hand, *body.cards]
            s.talon = body.talon
        s.log.append({which: _dict(body)})
        s.bump()

    def on_rejection(self, msg: referee_pb2.Rejection) -> None:
        self.seat.rejection = msg.message
        self.seat.bump()

    def on_deal_end(self, msg: referee_pb2.DealEnd) -> None:
        end = _dict(msg)
        end.pop("deck", None)  # the tricks show every card; the deck order adds nothing here
        self.seat.deal_ends.append(end)
        self.seat.log.append({"deal_end": {"deal_index": msg.deal_index}})
        self.seat.bump()

    def on_match_end(self, msg: referee_pb2.MatchEnd) -> None:
        end = _dict(msg)
        end.pop("seed", None)
        self.seat.end = end
        self.seat.finish()

    async def decide(self, request: referee_pb2.DecisionRequest) -> int:
        s = self.seat
        s.request, s.asked_at, s.rejection = request, time.monotonic(), ""
        s.observation = _dict(request.observation)
        s.hand, s.talon = list(request.observation.hand), request.observation.talon
        s.answer = asyncio.get_running_loop().create_future()
        s.bump()
        try:
            return await s.answer
        finally:
            if s.request is request:  # superseded (a timeout) or the match ended
                s.request = None
                s.bump()


def body_seat(body: Any) -> int | None:
    """The seat an event is about, when it names one."""
    return getattr(body, "seat", None)


class Seats:
    """The person seats of one web process, and their limits (:class:`SeatLimits`)."""

    def __init__(
        self, referee: str, limits: SeatLimits, proxy_key: str = "", store: Store | None = None
    ) -> None:
        self.referee = referee
        self.store = store  # the ladder store, read only: account tokens
        self.limits = limits
        self.proxy_key = proxy_key
        self.by_id: dict[str, Seat] = {}
        self.started: dict[str, deque[float]] = {}  # match starts per address, last hour
        self._channel: grpc.aio.Channel | None = None
        self._bots: tuple[float, list[dict[str, Any]]] = (-OPPONENTS_TTL_S, [])

    async def ladder_bots(self) -> list[dict[str, Any]]:
        """The connected ladder bots that play people (name, ladder, free), as the referee
        said at most ``OPPONENTS_TTL_S`` ago; none without a referee or when it fails."""
        at, bots = self._bots
        if not self.referee or time.monotonic() - at < OPPONENTS_TTL_S:
            return bots
        stub = referee_pb2_grpc.RefereeServiceStub(self._chan())
        try:
            got = await stub.ListOpponents(referee_pb2.ListOpponentsRequest(), timeout=5)
        except grpc.aio.AioRpcError:
            bots = []  # an older referee, or down: house bots only
        else:
            bots = [
                {
                    "name": b.name,
                    "ladder": b.ladder,
                    "free": b.free,
                    "players": b.players,
                    "ruleset": b.ruleset,
                }
                for b in got.ladder_bots
            ]
        self._bots = (time.monotonic(), bots)
        return bots

    def get(self, seat_id: str, token: str) -> Seat:
        """The seat, for the holder of its token only (404 either way otherwise)."""
        self._forget_old()
        seat = self.by_id.get(seat_id)
        if seat is None or not secrets.compare_digest(seat.token.encode(), token.encode()):
            raise SeatError(404, "no such seat (or not yours): open a new table")
        return seat

    async def account_name(self, token: str) -> str:
        """The name of the active bot account ``token`` belongs to (:class:`SeatError`
        otherwise). Tokens are 32 random bytes: guessing is hopeless, and the request rate
        caps the tries."""
        store = self.store
        if store is None:
            raise SeatError(422, "this web server has no store: play as a guest, by name")
        bot = await asyncio.to_thread(store.authenticate, token)
        if bot is None:
            raise SeatError(401, "no active bot account has this token")
        return bot.name

    async def open(self, req: SeatRequest, address: str) -> Seat:
        """Open a table and start playing the person's seat (raises :class:`SeatError`)."""
        if not self.referee:
            raise SeatError(503, "this web server follows no referee: it cannot seat people")
        if why := req.problem():
            raise SeatError(422, why)
        self._check_limits(address)
        seat = Seat(uuid.uuid4().hex[:16], secrets.token_urlsafe(24), req.name, address)
        seat.table_id = await self._create_table(req, address)
        seat.own_bot = OWN_BOT in req.opponents
        seat.waiting_for = [o.removeprefix(LADDER_BOT) for o in req.opponents if ladder_bot(o)]
        self.by_id[seat.id] = seat
        self.started.setdefault(address, deque()).append(time.monotonic())
        seat.task = asyncio.get_running_loop().create_task(self._play(seat))
        return seat

    def _check_limits(self, address: str) -> None:
        self._forget_old()
        lim = self.limits
        playing = [s for s in self.by_id.values() if s.open]
        if len(playing) >= lim.max_seats:
            raise SeatError(429, f"{lim.max_seats} people are playing already; try later")
        if sum(1 for s in playing if s.address == address) >= lim.max_seats_per_address:
            raise SeatError(
                429,
                f"your address plays {lim.max_seats_per_address} matches already: finish one first",
            )
        starts = self.started.get(address, deque())
        if len(starts) >= lim.seat_matches_per_hour:
            raise SeatError(
                429, f"your address started {lim.seat_matches_per_hour} matches this hour"
            )

    def _forget_old(self) -> None:
        """Drop ended seats after ``seat_keep_s`` and match starts older than an hour."""
        now = time.monotonic()
        for seat_id, seat in list(self.by_id.items()):
            if seat.ended_at is not None and now - seat.ended_at > self.limits.seat_keep_s:
                del self.by_id[seat_id]
        for address, starts in list(self.started.items()):
            while starts and now - starts[0] > 3600:
                starts.popleft()
            if not starts:
                del self.started[address]

    async def _create_table(self, req: SeatRequest, address: str) -> str:
        metadata: list[tuple[str, str]] = [(FORWARDED, address)] if address else []
        if self.proxy_key and address:
            metadata.append((PROXY_KEY, self.proxy_key))
        stub = referee_pb2_grpc.RefereeServiceStub(self._chan())
        try:
            got = await stub.CreateTable(req.table(), metadata=metadata or None, timeout=10)
        except grpc.aio.AioRpcError as exc:
            status = REFUSALS.get(exc.code(), 502)
            raise SeatError(
                status, f"the referee did not open the table: {exc.details()}"
            ) from None
        return str(got.table_id)

    async def _play(self, seat: Seat) -> None:
        try:
            await play(
                lambda: PersonBot(seat),
                self.referee,
                name=seat.name,
                join_table=seat.table_id,
                grace_s=GRACE_MS / 1000,
                strict=False,
            )
        except grpc.aio.AioRpcError as exc:
            seat.finish(f"the referee ended the seat: {exc.details() or exc.code().name}")
        except Exception as exc:  # noqa: BLE001 - told to the person, whatever it was
            seat.finish(f"the seat stopped: {exc}")
        else:
            seat.finish("" if seat.end is not None else "the match ended without a result")

    def _chan(self) -> grpc.aio.Channel:
        if self._channel is None:
            self._channel = grpc.aio.insecure_channel(self.referee)
        return self._channel

    async def close(self) -> None:
        for seat in self.by_id.values():
            if seat.task is not None:
                seat.task.cancel()
        if self._channel is not None:
            await self._channel.close()


@dataclass(frozen=True, slots=True)
class SeatLimits:
    """The bounds of person seats (from :class:`kozel.web.api.WebLimits`)."""

    max_seats: int = 32
    max_seats_per_address: int = 2
    seat_matches_per_hour: int = 30
    seat_requests_per_s: float = 20.0
    seat_keep_s: int = 900


def seat_limits(limits: Any) -> SeatLimits:
    """The seat limits out of the web's (:class:`kozel.web.api.WebLimits`)."""
    return SeatLimits(
        limits.max_seats,
        limits.max_seats_per_address,
        limits.seat_matches_per_hour,
        limits.seat_requests_per_s,
        limits.seat_keep_s,
    )


RateClock = Callable[[], float]


class Rate:
    """Requests per address: a bucket of ``per_s`` a second holding two seconds' worth."""

    def __init__(self, per_s: float, clock: RateClock = time.monotonic) -> None:
        self.per_s = per_s
        self.clock = clock
        self.buckets: dict[str, tuple[float, float]] = {}

    def admit(self, address: str) -> bool:
        now, cap = self.clock(), 2 * self.per_s
        if len(self.buckets) > 10_000:  # forget the full buckets (they would admit anyway)
            self.buckets = {
                a: (t, at)
                for a, (t, at) in self.buckets.items()
                if t + (now - at) * self.per_s < cap
            }
        tokens, at = self.buckets.get(address, (cap, now))
        tokens = min(cap, tokens + (now - at) * self.per_s)
        if tokens < 1:
            self.buckets[address] = (tokens, now)
            return False
        self.buckets[address] = (tokens - 1, now)
        return True
