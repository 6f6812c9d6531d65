"""Whether a stream's first message lets a bot in, and as what: a decision made from the message
and a snapshot of the referee (:class:`Door`), with no I/O, as h11 decides a connection's next
state. The servicer does what the decision says (resume a session, authenticate a ladder bot,
join a table, a queue or a ladder) and maps a refusal's kind to a gRPC status only at its edge.

A ladder Hello is decided in two steps around the store's token lookup, which is I/O:
:func:`admit` checks the message, :func:`admit_bot` the bot the token named."""

from __future__ import annotations

from collections.abc import Collection, Container
from dataclasses import dataclass

from kozel.core import convert
from kozel.core.messages import PROTOCOL_VERSION
from kozel.engine.rules import RulesError, Ruleset
from kozel.server import errors
from kozel.server.session import Session
from kozel.server.text import id_problem, name_problem
from kozel.v1 import referee_pb2 as rpb

MAX_TICKET = 128  # characters of a redirect ticket


class BadToken(errors.Unauthenticated):
    """A ladder token that names no active bot: counted and slowed down per address."""


@dataclass(frozen=True, slots=True)
class Resume:
    """Attach the stream to the session its resume token names."""

    session: Session


@dataclass(frozen=True, slots=True)
class JoinTable:
    """Join the named table."""

    hello: rpb.Hello
    table_id: str


@dataclass(frozen=True, slots=True)
class JoinQueue:
    """Wait in the queue of these rules and player count."""

    hello: rpb.Hello
    rules: Ruleset
    players: int


@dataclass(frozen=True, slots=True)
class JoinLadder:
    """Authenticate ``hello.token`` (the store), then join the ladder (or tournament) ``ladder``;
    ``ticket`` is a redirect ticket to check with the ladder's scheduler ("" if none)."""

    hello: rpb.Hello
    ladder: str
    ticket: str


Admission = Resume | JoinTable | JoinQueue | JoinLadder


@dataclass(frozen=True, slots=True)
class Door:
    """What the decision reads of the referee when the Hello arrives."""

    draining: bool  # it admits only bots redirected to a match assigned here
    resumable: Session | None  # the session the Hello's resume token names, if any
    tables: Container[str]  # open table ids
    ladders: Collection[str]  # ladders and tournaments served here, by name


def admit(req: rpb.PlayRequest, door: Door) -> Admission:
    """What a stream's first message asks, if the referee lets it in; raises
    :class:`errors.Refused` (of the kind that says why) if not."""
    if req.WhichOneof("message") != "hello":
        raise errors.Invalid("the first message must be Hello")
    hello = req.hello
    if hello.protocol_version != PROTOCOL_VERSION:
        raise errors.Conflict(
            f"protocol version {hello.protocol_version} is not supported; "
            f"this referee speaks {PROTOCOL_VERSION}"
        )
    if hello.resume_token:
        return _resume(hello, door.resumable)
    want = hello.WhichOneof("want")
    ticket = hello.redirect_ticket
    if ticket and (len(ticket) > MAX_TICKET or want != "join_ladder"):
        raise errors.Invalid(
            f"redirect_ticket (at most {MAX_TICKET} characters) goes with join_ladder only"
        )
    if door.draining and not ticket:  # a redirected bot's match is assigned here
        raise errors.Unavailable(
            "the referee is draining before it stops; connect to another referee or retry later"
        )
    if why := name_problem(hello.bot_name, "bot_name"):
        raise errors.Invalid(why)
    if want == "join_ladder":
        return _ladder(hello, door.ladders)
    if want == "join_queue":
        return _queue(hello)
    if want == "join_table":
        return _table(hello, door.tables)
    raise errors.Invalid("Hello must ask for join_table or join_queue")


def admit_bot(bot_name: str, connected: int, cap: int) -> None:
    """Refuse a ladder bot that has ``cap`` connected sessions already."""
    if connected >= cap:
        raise errors.Exhausted(
            f"bot {bot_name!r} already has {cap} connected sessions "
            "(limits.max_sessions_per_bot); close one first"
        )


def _resume(hello: rpb.Hello, session: Session | None) -> Resume:
    # A resume token is a bearer secret bound to its session's bot name (a token given to
    # another name is refused as if unknown) and, for a ladder session, to its bot's token.
    if session is None or not session.named(hello.bot_name):
        raise errors.NotFound("unknown or expired resume_token")
    if not session.token_matches(hello.token):
        raise BadToken(
            "resuming a ladder session needs Hello.token, the token of the bot that opened it"
        )
    return Resume(session)


def _ladder(hello: rpb.Hello, ladders: Collection[str]) -> JoinLadder:
    name = hello.join_ladder.ladder
    if why := name_problem(name, "ladder"):
        raise errors.Invalid(why)
    if name not in ladders:
        raise errors.NotFound(
            f"no ladder {name!r}; ladders: {', '.join(sorted(ladders)) or 'none'}"
        )
    if not hello.token:
        raise BadToken("Hello.token is not the token of an active registered bot")
    return JoinLadder(hello, name, hello.redirect_ticket)


def _queue(hello: rpb.Hello) -> JoinQueue:
    try:
        rules = convert.ruleset_from_pb(hello.join_queue.ruleset)
        rules.check_players(hello.join_queue.players)
    except RulesError as exc:
        raise errors.Invalid(str(exc)) from None
    return JoinQueue(hello, rules, hello.join_queue.players)


def _table(hello: rpb.Hello, tables: Container[str]) -> JoinTable:
    table_id = hello.join_table.table_id
    if why := id_problem(table_id, "table_id"):
        raise errors.Invalid(why)
    if table_id not in tables:
        raise errors.NotFound(f"no table {table_id!r}")
    return JoinTable(hello, table_id)
