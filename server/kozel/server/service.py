"""The gRPC servicer: streams in, sessions and lobby out. Knows nothing of the rules."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

import grpc
import structlog
from google.protobuf import message_factory
from google.protobuf.message import DecodeError

from kozel.core import convert, messages
from kozel.core.clock import ClockError
from kozel.core.messages import EncodedRequest
from kozel.engine.rules import RulesError
from kozel.ladder.store import Bot, StoreError, is_transient
from kozel.server import door, errors, metrics, people
from kozel.server.cluster import Cluster
from kozel.server.config import ServerConfig
from kozel.server.door import Admission, Door, JoinLadder, JoinQueue, JoinTable, Resume
from kozel.server.lobby import Lobby
from kozel.server.peers import Proxies
from kozel.server.session import Outbox, Session
from kozel.server.status import grpc_status
from kozel.server.tables import TableRequest, check_ladder_bots
from kozel.server.text import id_problem, name_problem
from kozel.server.throttle import FailureThrottle
from kozel.server.tournament_runtime import TournamentRuntime
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import referee_pb2_grpc

log = structlog.get_logger("kozel.service")
T = TypeVar("T")
MAX_TOKEN = 128  # a bot token is 47 characters (kzb_ and 32 random bytes)


def add_to_server(
    servicer: referee_pb2_grpc.RefereeServiceServicer, server: grpc.aio.Server
) -> None:
    """Serve ``servicer`` as ``kozel.v1.RefereeService`` on ``server``, as the generated
    ``add_RefereeServiceServicer_to_server`` does, except that Play's responses are written by
    :func:`kozel.core.messages.encode_response`: decision requests go out as the bytes the
    core built (:class:`~kozel.core.messages.EncodedRequest`), the rest as messages."""
    service = rpb.DESCRIPTOR.services_by_name["RefereeService"]
    handlers = {}
    for method in service.methods:
        request = message_factory.GetMessageClass(method.input_type)
        response = message_factory.GetMessageClass(method.output_type)
        make = _HANDLERS[method.client_streaming, method.server_streaming]
        handlers[method.name] = make(
            getattr(servicer, method.name),
            request_deserializer=request.FromString,
            response_serializer=messages.encode_response
            if method.name == "Play"
            else response.SerializeToString,
        )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler(service.full_name, handlers),)
    )
    server.add_registered_method_handlers(service.full_name, handlers)


_HANDLERS = {  # by (client streaming, server streaming)
    (False, False): grpc.unary_unary_rpc_method_handler,
    (False, True): grpc.unary_stream_rpc_method_handler,
    (True, False): grpc.stream_unary_rpc_method_handler,
    (True, True): grpc.stream_stream_rpc_method_handler,
}


class HelloError(Exception):
    """A first message the referee refuses: why, and how long to wait before saying so."""

    def __init__(self, refusal: errors.Refused, delay: float = 0.0) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal
        self.delay = delay  # answer this much later (repeated bad tokens are slowed down)


class RefereeService(referee_pb2_grpc.RefereeServiceServicer):
    """``kozel.v1.RefereeService``."""

    def __init__(
        self,
        config: ServerConfig,
        lobby: Lobby,
        cluster: Cluster | None = None,
        proxies: Proxies | None = None,
    ) -> None:
        self.config = config
        self.lobby = lobby
        self.cluster = cluster  # the shared ladders (referee.cluster), which redirect bots here
        self.sessions: dict[str, Session] = {}  # by resume token
        self._readers: set[asyncio.Task[None]] = set()
        self.open_streams = 0  # Play streams at once, capped at config.max_streams
        self.proxies = proxies or Proxies()  # whose x-forwarded-for counts
        # Bad ladder tokens by peer host, each refused later than the last.
        self.bad_tokens = FailureThrottle()
        # Detached sessions without matches, kept for a resume, oldest first: bounded by count
        # (max_lingering_sessions) as well as by time (session_linger_s).
        self._lingering: OrderedDict[str, Session] = OrderedDict()

    # -- Play ----------------------------------------------------------------------------------

    async def Play(
        self, request_iterator: AsyncIterator[rpb.PlayRequest], context: grpc.aio.ServicerContext
    ) -> None:
        # A coroutine that writes with context.write(), not an async generator: grpc.aio
        # would drive a generator with one more frame and step per message.
        # The stream cap is kept here rather than by the call limits interceptor, whose
        # wrapping generator would add a frame to every message of every stream.
        if self.open_streams >= self.config.max_streams:
            await context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"the referee serves {self.config.max_streams} streams already "
                "(limits.max_streams); retry later",
            )
        self.open_streams += 1
        try:
            loop = asyncio.get_running_loop()
            opened: asyncio.Future[tuple[Session, Outbox] | HelloError] = loop.create_future()
            # One reader per stream, never cancelled: cancelling a grpc.aio read can lose the
            # message it was reading and leave the stream unusable.
            reader = loop.create_task(self._read(context, opened, self.proxies.host(context)))
            self._readers.add(reader)
            reader.add_done_callback(self._readers.discard)
            try:
                got = await asyncio.wait_for(asyncio.shield(opened), self.config.hello_timeout_s)
            except TimeoutError:
                if not opened.done():  # a Hello arriving later is ignored
                    opened.set_result(HelloError(errors.Expired("too late")))
                await context.abort(
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                    f"no Hello within {self.config.hello_timeout_s:g} s",
                )
            if isinstance(got, HelloError):
                await context.abort(grpc_status(got.refusal), got.refusal.message)
            session, outbox = got
            metrics.ACTIVE_STREAMS.inc()
            try:
                while True:
                    msg = await outbox.get()
                    if msg is None:
                        break
                    await context.write(msg)
                    if isinstance(msg, EncodedRequest):  # written: the request's clock starts
                        session.written(msg, loop.time())
            finally:
                metrics.ACTIVE_STREAMS.dec()
                session.detach(outbox)
            if (error := outbox.error) is not None:
                await context.abort(grpc_status(error), error.message)
        finally:
            self.open_streams -= 1

    async def _read(
        self, context: grpc.aio.ServicerContext, opened: asyncio.Future, peer: str
    ) -> None:
        # context.read(), not the handler's request iterator: the iterator wraps every read in
        # an async generator of its own (the two must not be mixed; the iterator is unused).
        loop = asyncio.get_running_loop()
        session: Session | None = None
        outbox: Outbox | None = None
        refused = 0  # answers in a row that named no pending request (Leave does not reset it)
        try:
            while (req := await context.read()) is not grpc.aio.EOF:
                if session is None:
                    if opened.done():  # refused or timed out: ignore the rest
                        continue
                    try:
                        session, outbox = await self._open(req, peer, opened)
                    except HelloError as exc:
                        if exc.delay:
                            await self.bad_tokens.wait(peer, exc.delay)
                        if not opened.done():
                            opened.set_result(exc)
                        continue
                    opened.set_result((session, outbox))
                    continue
                assert outbox is not None
                counted = self._dispatch(session, outbox, req, loop.time())
                refused = refused + 1 if counted else 0 if counted is False else refused
                if refused > self.config.max_refused_answers:
                    outbox.close(
                        errors.Exhausted(f"{refused} answers in a row named no pending request")
                    )
                if outbox.closed:  # stop reading: a flood backs up in the bot's own transport
                    break
        except DecodeError:
            why = "a message is not a valid kozel.v1.PlayRequest"
            if outbox is not None:
                outbox.close(errors.Invalid(f"protocol error: {why}"))
            elif not opened.done():
                opened.set_result(HelloError(errors.Invalid(why)))
        except Exception as exc:  # noqa: BLE001 (the stream broke, however: the bot is away)
            log.debug("stream_read_ended", error=repr(exc))
        finally:
            if outbox is not None:
                outbox.close()
                if session is not None:
                    session.detach(outbox)  # also when the handler never got to run
            elif not opened.done():
                opened.set_result(HelloError(errors.Cancelled("closed before Hello")))

    async def _open(
        self, req: rpb.PlayRequest, peer: str = "", opened: asyncio.Future | None = None
    ) -> tuple[Session, Outbox]:
        """Admit a Hello (:func:`kozel.server.door.admit`) and do what it says: resume
        a session, or open one at a table, in a queue or on a ladder. ``opened`` done
        meanwhile means the Hello deadline passed while the token was being checked."""
        if req.WhichOneof("message") == "hello":
            # The session keeps its Hello: only what the referee reads, in a message of its own
            # (a part of the request would keep the whole request's memory alive, padding and
            # all, for as long as the session lingers).
            req.hello.DiscardUnknownFields()
            req = rpb.PlayRequest(hello=rpb.Hello.FromString(req.hello.SerializeToString()))
        try:
            wants = door.admit(req, self._door(req.hello.resume_token))
            bot = await self._authenticate(wants) if isinstance(wants, JoinLadder) else None
            if opened is not None and opened.done():
                raise errors.Expired("too late")
        except door.BadToken as exc:
            raise self._bad_token(peer, exc) from None
        except errors.Refused as exc:
            raise HelloError(exc) from None
        outbox = Outbox(self.config.outbox_limit)
        if isinstance(wants, Resume):
            session = wants.session
            session.attach(outbox, resumed=True)
            self._lingering.pop(session.resume_token, None)
            self.lobby.requeue(session)
            return session, outbox
        unit = f"bot:{bot.id}" if bot is not None else peer
        session = Session(wants.hello, self.config.max_matches_per_stream, self._idle, unit)
        self.sessions[session.resume_token] = session
        session.attach(outbox, resumed=False)
        try:
            self._join(wants, session, bot)
        except errors.Refused as exc:
            self.sessions.pop(session.resume_token, None)
            raise HelloError(exc) from None
        log.info(
            "session_opened", session=session.id, bot=session.name, want=session.want, peer=peer
        )
        return session, outbox

    def _door(self, resume_token: str) -> Door:
        """What admission reads of this referee now."""
        lobby = self.lobby
        return Door(
            draining=lobby.draining,
            resumable=self.sessions.get(resume_token) if resume_token else None,
            tables=lobby.joinable_tables,
            ladders=lobby.ladders.keys() | lobby.tournaments.keys(),
        )

    async def _authenticate(self, wants: JoinLadder) -> Bot:
        """The ladder bot a Hello's token names (the store), admitted if its ticket, when it
        has one, is expected here and it has a session to spare."""
        name = wants.ladder
        store = (self.lobby.ladders.get(name) or self.lobby.tournaments[name]).store
        try:
            bot = await asyncio.to_thread(store.authenticate, wants.hello.token)
        except Exception as exc:
            if not is_transient(exc):
                raise
            raise errors.Unavailable(
                "the ladder store is unreachable right now; retry in a few seconds"
            ) from None
        if bot is None:
            raise door.BadToken("Hello.token is not the token of an active registered bot")
        if wants.ticket:  # checked last: nothing below waits, so the pass is still there
            host = self._ticket_host(name)
            why = (
                "this referee shares no ladder with other referees"
                if host is None
                else await host.expects(wants.ticket, bot.id, name)
            )
            if why:
                raise errors.Unauthenticated(why)
        door.admit_bot(bot.name, self._connected(bot.name), self.config.max_sessions_per_bot)
        return bot

    def _ticket_host(self, ladder: str) -> Cluster | TournamentRuntime | None:
        """Who checks the redirect tickets of ``ladder``: its tournament, or the cluster."""
        return self.lobby.tournaments.get(ladder) or self.cluster

    def _connected(self, bot_name: str) -> int:
        """Sessions of the ladder bot ``bot_name`` with a stream now."""
        return sum(
            1
            for s in self.sessions.values()
            if s.bot is not None and s.bot.name == bot_name and s.stream is not None
        )

    def _join(self, wants: Admission, session: Session, bot: Bot | None) -> None:
        """Put a new session where its Hello asked (raises :class:`errors.Refused`)."""
        if isinstance(wants, JoinLadder):
            assert bot is not None
            session.authenticated(bot)
            self.lobby.join_ladder(wants.ladder, session)
            host = self._ticket_host(wants.ladder)
            if wants.ticket and host is not None:
                host.arrive(wants.ticket, session)  # checked in this same step
        elif isinstance(wants, JoinQueue):
            self.lobby.join_queue(wants.rules, wants.players, session)
        elif isinstance(wants, JoinTable):
            self.lobby.join_table(wants.table_id, session)

    def _bad_token(self, peer: str, refusal: errors.Refused) -> HelloError:
        """The refusal of a bad ladder token: counted per address and slowed down."""
        n, delay = self.bad_tokens.failed(peer)
        metrics.AUTH_FAILURES.inc()
        log.warning("bad_ladder_token", peer=peer, failures=n)
        if self.bad_tokens.crowded(peer):
            # Each delayed refusal holds a stream slot: a crowd of them is cut short.
            return HelloError(
                errors.Exhausted(
                    f"{self.bad_tokens.max_pending} refused ladder logins from your "
                    "address are still pending; wait for them, then retry"
                )
            )
        return HelloError(refusal, delay=delay)

    def _dispatch(
        self, session: Session, outbox: Outbox, req: rpb.PlayRequest, received_at: float
    ) -> bool | None:
        """Handle one message after Hello: True when it was an answer naming no pending request
        (or a repeated Leave, as useless), False for an answer taken, None otherwise."""
        which = req.WhichOneof("message")
        if which == "action":
            why = session.deliver(req.action, received_at)
            if why is not None:
                outbox.put(
                    messages.rejection(
                        req.action.match_id,
                        req.action.request_id,
                        pb.ERROR_CODE_UNKNOWN_REQUEST,
                        why,
                    )
                )
                return True
            return False
        if which == "leave":
            again = session.leaving
            session.leave()
            return True if again else None
        what = "a second Hello" if which == "hello" else "an empty message"
        outbox.close(errors.Invalid(f"protocol error: {what}"))
        return None

    def _idle(self, session: Session) -> None:
        """A session's state changed: queue its free slots, or forget it once it is gone."""
        if session.stream is None:
            self.lobby.forget(session)
            if not session.links:
                self._linger(session)
        else:
            self._lingering.pop(session.resume_token, None)
            self.lobby.requeue(session)

    def _linger(self, session: Session) -> None:
        """Keep a detached session for a resume a while; past the count, the oldest go."""
        token = session.resume_token
        if token in self._lingering or self.sessions.get(token) is not session:
            return
        self._lingering[token] = session
        asyncio.get_running_loop().call_later(self.config.session_linger_s, self._drop, session)
        while len(self._lingering) > self.config.max_lingering_sessions:
            self._drop(next(iter(self._lingering.values())))

    def _drop(self, session: Session) -> None:
        self._lingering.pop(session.resume_token, None)
        if session.stream is None and not session.links:
            self.sessions.pop(session.resume_token, None)

    # -- tables and replays --------------------------------------------------------------------

    async def CreateTable(
        self, request: rpb.CreateTableRequest, context: grpc.aio.ServicerContext
    ) -> rpb.CreateTableResponse:
        if request.table_id and (why := id_problem(request.table_id, "table_id")):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, why)
        try:
            req = TableRequest(
                request.table_id,
                convert.ruleset_from_pb(request.ruleset),
                request.players,
                self.config.clock.merged(
                    request.time_control if request.HasField("time_control") else None
                ),
                request.seed or None,
                tuple(request.house_bots),
                owner=self.proxies.host(context),
                ladder_bots=tuple(request.ladder_bots),
            )
            await self._plays_people(req)
            table = self.lobby.create_table(
                req,
                lambda name: self.lobby.lender.lend(
                    name, self.sessions.values(), req.rules, req.players
                ),
            )
        except (RulesError, ClockError) as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except errors.Refused as exc:
            await context.abort(grpc_status(exc), exc.message)
        return rpb.CreateTableResponse(table_id=table.id)

    async def _plays_people(self, req: TableRequest) -> None:
        """Refuse ladder bots at seats they may not take, with names no bot has, or whose
        accounts do not play people (the store is asked last)."""
        named = [n for n in req.ladder_bots if n]
        if not named:
            return
        if len(req.ladder_bots) > people.MAX_SEATS:
            raise errors.Invalid(f"at most {people.MAX_SEATS} ladder bots, one a seat")
        for name in named:
            if why := name_problem(name, "a ladder bot's name"):
                raise errors.Invalid(why)
        check_ladder_bots(req)
        store = self.lobby.store
        playing = await self._store_call(store.playing_people, named) if store else set()
        if missing := [n for n in named if n not in playing]:
            raise errors.Conflict(
                f"bot {missing[0]!r} does not play people: its author has not allowed it "
                "(kozel account plays-people), or it is no active bot here"
            )

    async def _store_call(self, call: Callable[..., T], *args: object) -> T:
        """A store read in a worker thread; an outage is UNAVAILABLE, not an error."""
        try:
            return await asyncio.to_thread(call, *args)
        except Exception as exc:
            if is_transient(exc):
                raise errors.Unavailable("the ladder store is unreachable; retry later") from None
            raise

    async def ListOpponents(
        self, request: rpb.ListOpponentsRequest, context: grpc.aio.ServicerContext
    ) -> rpb.ListOpponentsResponse:
        store, ladders = self.lobby.store, self.lobby.ladders
        connected = people.ladder_sessions(self.sessions.values(), ladders)
        names = sorted({s.bot.name for s in connected})
        try:
            playing = await self._store_call(store.playing_people, names) if store else set()
        except errors.Refused as exc:
            await context.abort(grpc_status(exc), exc.message)
        found = people.opponents(connected, ladders, playing)
        return rpb.ListOpponentsResponse(
            house_bots=sorted(self.lobby.house_bots),
            ladder_bots=[
                rpb.LadderOpponent(
                    name=name,
                    ladder=ladder,
                    free=free,
                    players=ladders[ladder].spec.players,
                    ruleset=ladders[ladder].spec.ruleset.preset,
                )
                for name, (ladder, free) in sorted(found.items())
            ],
        )

    async def SetPlaysPeople(
        self, request: rpb.SetPlaysPeopleRequest, context: grpc.aio.ServicerContext
    ) -> rpb.SetPlaysPeopleResponse:
        store = self.lobby.store
        if store is None:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, "this referee has no ladders")
        if why := name_problem(request.bot_name, "bot_name") or _token_problem(request.token):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, why)
        try:
            await self._store_call(
                store.set_plays_people, request.bot_name, request.plays_people, request.token
            )
        except StoreError as exc:
            if str(exc).startswith("no bot"):
                await context.abort(grpc.StatusCode.NOT_FOUND, str(exc))
            peer = self.proxies.host(context)  # a wrong token: slowed down like a bad Hello
            _, delay = self.bad_tokens.failed(peer)
            metrics.AUTH_FAILURES.inc()
            await self.bad_tokens.wait(peer, delay)
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, str(exc))
        except errors.Refused as exc:
            await context.abort(grpc_status(exc), exc.message)
        return rpb.SetPlaysPeopleResponse(plays_people=request.plays_people)

    async def WaitTable(
        self, request: rpb.WaitTableRequest, context: grpc.aio.ServicerContext
    ) -> rpb.WaitTableResponse:
        if why := id_problem(request.table_id, "table_id"):
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, why)
        try:
            outcome = await self.lobby.wait_table(request.table_id)
        except errors.Refused as exc:
            await context.abort(grpc_status(exc), exc.message)
        return rpb.WaitTableResponse(
            match_id=outcome.match_id,
            result=outcome.result,
            replay_id=outcome.replay_id,
            replay_path=str(outcome.replay_path),
            seating=outcome.seating,
        )

    async def GetReplay(
        self, request: rpb.GetReplayRequest, context: grpc.aio.ServicerContext
    ) -> rpb.GetReplayResponse:
        try:
            data = await self.lobby.replay_bytes(request.replay_id)
        except errors.Refused as exc:
            await context.abort(grpc_status(exc), exc.message)
        return rpb.GetReplayResponse(replay_gz=data)


def _token_problem(token: str) -> str | None:
    """Why ``token`` cannot be a bot token (checked before any store call)."""
    if not 1 <= len(token) <= MAX_TOKEN:
        return f"token must be 1 to {MAX_TOKEN} characters (the bot's, as in Hello.token)"
    return None
