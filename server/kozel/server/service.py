"""The gRPC servicer: streams in, sessions and lobby out. Knows nothing of the rules."""

from __future__ import annotations

import asyncio
import hmac
import time
from collections import OrderedDict
from collections.abc import AsyncIterator

import grpc
import structlog
from google.protobuf import message_factory
from google.protobuf.message import DecodeError

from kozel.core import convert, messages
from kozel.core.clock import ClockError
from kozel.core.messages import PROTOCOL_VERSION, EncodedRequest
from kozel.engine.rules import RulesError
from kozel.ladder.store import is_transient
from kozel.server import errors, metrics
from kozel.server.cluster import Cluster
from kozel.server.config import ServerConfig
from kozel.server.limits import peer_host
from kozel.server.lobby import Lobby
from kozel.server.session import Outbox, Session
from kozel.server.status import grpc_status
from kozel.server.text import id_problem, name_problem
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import referee_pb2_grpc

log = structlog.get_logger("kozel.service")

AUTH_FAILURE_MEMORY_S = 600.0  # bad tokens from a host are forgotten after this quiet spell
MAX_DELAYED_PER_HOST = 4  # refused ladder Hellos from one host waiting out their delay


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
    """A first message the referee refuses, with the status to close the stream with."""

    def __init__(self, code: grpc.StatusCode, message: str, delay: float = 0.0) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.delay = delay  # answer this much later (repeated bad tokens are slowed down)


class RefereeService(referee_pb2_grpc.RefereeServiceServicer):
    """``kozel.v1.RefereeService``."""

    def __init__(self, config: ServerConfig, lobby: Lobby, cluster: Cluster | None = None) -> None:
        self.config = config
        self.lobby = lobby
        self.cluster = cluster  # the shared ladders (referee.cluster), which redirect bots here
        self.sessions: dict[str, Session] = {}  # by resume token
        self._readers: set[asyncio.Task[None]] = set()
        self.open_streams = 0  # Play streams at once, capped at config.max_streams
        # By peer host: (bad tokens, time of the last one). A good token from the same host
        # does not clear it (many bots may share one address); a quiet spell does.
        self.auth_failures: dict[str, tuple[int, float]] = {}
        self._delayed: dict[str, int] = {}  # by peer host: refused Hellos waiting out a delay
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
            # One reader per stream; it is never cancelled (see shared/engineering.md).
            reader = loop.create_task(self._read(context, opened, peer_host(context.peer())))
            self._readers.add(reader)
            reader.add_done_callback(self._readers.discard)
            try:
                got = await asyncio.wait_for(asyncio.shield(opened), self.config.hello_timeout_s)
            except TimeoutError:
                if not opened.done():  # a Hello arriving later is ignored
                    opened.set_result(HelloError(grpc.StatusCode.DEADLINE_EXCEEDED, "too late"))
                await context.abort(
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                    f"no Hello within {self.config.hello_timeout_s:g} s",
                )
            if isinstance(got, HelloError):
                await context.abort(got.code, got.message)
            session, outbox = got
            metrics.ACTIVE_STREAMS.inc()
            try:
                while True:
                    msg = await outbox.get()
                    if msg is None:
                        break
                    if isinstance(msg, EncodedRequest):  # every decision request
                        session.written(msg, loop.time())
                    await context.write(msg)
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
                            self._delayed[peer] = self._delayed.get(peer, 0) + 1
                            try:
                                await asyncio.sleep(exc.delay)
                            finally:
                                if (left := self._delayed.pop(peer) - 1) > 0:
                                    self._delayed[peer] = left
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
                opened.set_result(HelloError(grpc.StatusCode.INVALID_ARGUMENT, why))
        except Exception as exc:  # noqa: BLE001 (the stream broke, however: the bot is away)
            log.debug("stream_read_ended", error=repr(exc))
        finally:
            if outbox is not None:
                outbox.close()
                if session is not None:
                    session.detach(outbox)  # also when the handler never got to run
            elif not opened.done():
                opened.set_result(HelloError(grpc.StatusCode.CANCELLED, "closed before Hello"))

    async def _open(
        self, req: rpb.PlayRequest, peer: str = "", opened: asyncio.Future | None = None
    ) -> tuple[Session, Outbox]:
        """Validate a Hello and open (or resume) its session; ``opened`` done meanwhile means
        the Hello deadline passed while the token was being checked."""
        if req.WhichOneof("message") != "hello":
            raise HelloError(grpc.StatusCode.INVALID_ARGUMENT, "the first message must be Hello")
        hello = req.hello
        hello.DiscardUnknownFields()  # the session keeps its Hello: only what the referee reads
        if hello.protocol_version != PROTOCOL_VERSION:
            raise HelloError(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"protocol version {hello.protocol_version} is not supported; "
                f"this referee speaks {PROTOCOL_VERSION}",
            )
        outbox = Outbox(self.config.outbox_limit)
        if hello.resume_token:
            session = self.sessions.get(hello.resume_token)
            # A resume token is a bearer secret bound to its session's bot name (a token
            # given to another name is refused as if unknown) ...
            if session is None or not hmac.compare_digest(
                hello.bot_name.encode(), session.hello.bot_name.encode()
            ):
                raise HelloError(grpc.StatusCode.NOT_FOUND, "unknown or expired resume_token")
            # ... and a ladder session also needs its bot's token.
            if session.bot is not None and not hmac.compare_digest(
                hello.token.encode(), session.token.encode()
            ):
                raise self._bad_token(
                    peer,
                    "resuming a ladder session needs Hello.token, the "
                    "token of the bot that opened it",
                )
            session.attach(outbox, resumed=True)
            self._lingering.pop(session.resume_token, None)
            self.lobby.requeue(session)
            return session, outbox
        redirected = hello.redirect_ticket
        if redirected and (len(redirected) > 128 or hello.WhichOneof("want") != "join_ladder"):
            raise HelloError(
                grpc.StatusCode.INVALID_ARGUMENT,
                "redirect_ticket (at most 128 characters) goes with join_ladder only",
            )
        if self.lobby.draining and not redirected:  # a redirected bot's match is assigned here
            raise HelloError(
                grpc.StatusCode.UNAVAILABLE,
                "the referee is draining before it stops; connect to another "
                "referee or retry later",
            )
        if why := name_problem(hello.bot_name, "bot_name"):
            raise HelloError(grpc.StatusCode.INVALID_ARGUMENT, why)
        want = hello.WhichOneof("want")
        if want is None:
            raise HelloError(
                grpc.StatusCode.INVALID_ARGUMENT, "Hello must ask for join_table or join_queue"
            )
        if want == "join_table" and (why := id_problem(hello.join_table.table_id, "table_id")):
            raise HelloError(grpc.StatusCode.INVALID_ARGUMENT, why)
        if want == "join_ladder" and (why := name_problem(hello.join_ladder.ladder, "ladder")):
            raise HelloError(grpc.StatusCode.INVALID_ARGUMENT, why)
        queue_rules = None
        bot = None
        if want == "join_ladder":
            bot = await self._authenticate(hello, peer)
            if opened is not None and opened.done():
                raise HelloError(grpc.StatusCode.DEADLINE_EXCEEDED, "too late")
            if redirected:  # checked last: nothing below waits, so the pass is still there
                host = self.lobby.tournaments.get(hello.join_ladder.ladder) or self.cluster
                why = (
                    "this referee shares no ladder with other referees"
                    if host is None
                    else await host.expects(redirected, bot.id, hello.join_ladder.ladder)
                )
                if why:
                    raise HelloError(grpc.StatusCode.UNAUTHENTICATED, why)
                if opened is not None and opened.done():
                    raise HelloError(grpc.StatusCode.DEADLINE_EXCEEDED, "too late")
            cap = self.config.max_sessions_per_bot
            if (
                sum(
                    1
                    for s in self.sessions.values()
                    if s.bot is not None and s.bot.name == bot.name and s.stream is not None
                )
                >= cap
            ):
                raise HelloError(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    f"bot {bot.name!r} already has {cap} connected sessions "
                    "(limits.max_sessions_per_bot); close one first",
                )
        elif want == "join_queue":
            try:
                queue_rules = convert.ruleset_from_pb(hello.join_queue.ruleset)
                queue_rules.check_players(hello.join_queue.players)
            except RulesError as exc:
                raise HelloError(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None
        elif not self.lobby.has_table(hello.join_table.table_id):
            raise HelloError(grpc.StatusCode.NOT_FOUND, f"no table {hello.join_table.table_id!r}")
        session = Session(hello, self.config.max_matches_per_stream, self._idle)
        self.sessions[session.resume_token] = session
        session.attach(outbox, resumed=False)
        try:
            if bot is not None:
                session.bot = bot
                session.name = bot.name
                self.lobby.join_ladder(hello.join_ladder.ladder, session)
                host = self.lobby.tournaments.get(hello.join_ladder.ladder) or self.cluster
                if redirected and host is not None:
                    host.arrive(redirected, session)  # checked above, in this same step
            elif queue_rules is not None:
                self.lobby.join_queue(queue_rules, hello.join_queue.players, session)
            else:
                self.lobby.join_table(hello.join_table.table_id, session)
        except errors.Refused as exc:
            self.sessions.pop(session.resume_token, None)
            raise HelloError(grpc_status(exc), exc.message) from None
        log.info("session_opened", session=session.id, bot=session.name, want=want, peer=peer)
        return session, outbox

    async def _authenticate(self, hello: rpb.Hello, peer: str):
        """The ladder bot a Hello's token names; bad tokens are refused, counted, slowed."""
        name = hello.join_ladder.ladder
        ladder = self.lobby.ladders.get(name) or self.lobby.tournaments.get(name)
        if ladder is None:
            raise HelloError(
                grpc.StatusCode.NOT_FOUND,
                f"no ladder {hello.join_ladder.ladder!r}; ladders: "
                f"{', '.join(sorted(self.lobby.ladders)) or 'none'}",
            )
        try:
            bot = (
                await asyncio.to_thread(ladder.store.authenticate, hello.token)
                if hello.token
                else None
            )
        except Exception as exc:
            if not is_transient(exc):
                raise
            raise HelloError(
                grpc.StatusCode.UNAVAILABLE,
                "the ladder store is unreachable right now; retry in a few seconds",
            ) from None
        if bot is None:
            raise self._bad_token(peer, "Hello.token is not the token of an active registered bot")
        return bot

    def _bad_token(self, peer: str, why: str) -> HelloError:
        """The refusal of a bad ladder token: counted per address and slowed down."""
        if len(self.auth_failures) > 10_000:
            self.auth_failures.clear()
        now = time.monotonic()
        n, last = self.auth_failures.get(peer, (0, now))
        n = 1 if now - last > AUTH_FAILURE_MEMORY_S else n + 1
        self.auth_failures[peer] = (n, now)
        metrics.AUTH_FAILURES.inc()
        log.warning("bad_ladder_token", peer=peer, failures=n)
        if self._delayed.get(peer, 0) >= MAX_DELAYED_PER_HOST:
            # Each delayed refusal holds a stream slot: a crowd of them is cut short.
            return HelloError(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{MAX_DELAYED_PER_HOST} refused ladder logins from your "
                "address are still pending; wait for them, then retry",
            )
        return HelloError(grpc.StatusCode.UNAUTHENTICATED, why, delay=min(0.05 * 2 ** (n - 1), 5.0))

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
            rules = convert.ruleset_from_pb(request.ruleset)
            table = self.lobby.create_table(
                request.table_id,
                rules,
                request.players,
                self.config.clock.merged(
                    request.time_control if request.HasField("time_control") else None
                ),
                request.seed or None,
                list(request.house_bots),
                owner=peer_host(context.peer()),
            )
        except (RulesError, ClockError) as exc:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except errors.Refused as exc:
            await context.abort(grpc_status(exc), exc.message)
        return rpb.CreateTableResponse(table_id=table.id)

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
