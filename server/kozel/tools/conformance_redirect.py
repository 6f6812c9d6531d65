"""The redirect checks of the conformance checker (docs/bots.md, section 3b): the bot is
welcomed and redirected to a second listener, where its Hello must be the first one with
``redirect_ticket`` set and no resume token; that listener redirects it again, to a closed
port, and the bot must come back to its first address with its first Hello (no ticket, no
resume token). It then gets an empty match and exits."""

from __future__ import annotations

import asyncio
import secrets

import grpc

from kozel.core import messages
from kozel.tools.conformance_wire import (
    Results,
    Servicer,
    Session,
    Stream,
    closed_address,
    end_match,
    match_start,
)
from kozel.v1 import referee_pb2 as rpb

# The Hello fields a redirected bot must repeat unchanged.
HELLO_KEPT = ("protocol_version", "bot_name", "token", "max_matches", "skip_events", "client")
REDIRECT_WAIT_S = 15.0  # for the bot to reach the redirect target
FALLBACK_WAIT_S = 30.0  # for it to give up a closed target and come back to its first address
FOLLOWS = "follows a redirect with its ticket"
FALLBACK = "back to the first address when the redirect target is closed"


def _hello_problems(got: rpb.PlayRequest, first: rpb.Hello, ticket: str) -> list[str]:
    """How a Hello after a redirect (``ticket``) or a fallback (no ticket) differs from what
    it must be: the first Hello, with only ``redirect_ticket`` set to ``ticket``."""
    if got.WhichOneof("message") != "hello":
        return ["the first message is not Hello"]
    hello = got.hello
    problems = [f"{f} changed" for f in HELLO_KEPT if getattr(hello, f) != getattr(first, f)]
    if hello.WhichOneof("want") != first.WhichOneof("want") or getattr(
        hello, hello.WhichOneof("want") or "join_table"
    ) != getattr(first, first.WhichOneof("want") or "join_table"):
        problems.append("it wants another table, queue or ladder")
    if hello.resume_token:
        problems.append("it carries a resume_token")
    if hello.redirect_ticket != ticket:
        problems.append(
            f"redirect_ticket is {hello.redirect_ticket!r}, not the Redirect's ticket"
            if ticket
            else "it still carries a redirect_ticket"
        )
    return problems


async def _next_stream(servicers: dict[str, Servicer], timeout: float) -> tuple[str, Stream] | None:
    """The next stream opened on any of the named listeners, or None after ``timeout``."""
    getters = {asyncio.ensure_future(sv.streams.get()): name for name, sv in servicers.items()}
    done, pending = await asyncio.wait(getters, timeout=timeout, return_when="FIRST_COMPLETED")
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    if not done:
        return None
    first, *others = done
    for task in others:  # two at once: the other waits for the next call
        servicers[getters[task]].streams.put_nowait(task.result())
    return getters[first], first.result()


async def redirect_script(
    session: Session,
    target: tuple[grpc.aio.Server, Servicer, str],
    results: Results,
    connect_timeout: float,
) -> None:
    """Redirect the bot to ``target``, check its Hello there, redirect it again to a closed
    port, and check that it comes back to its first address with its first Hello."""
    hello_req = await session.accept(connect_timeout)
    first = hello_req.hello
    ticket = secrets.token_urlsafe(16)
    session.send(messages.welcome("redirect", secrets.token_urlsafe(16), "conformance"))
    session.send(messages.redirect(target[2], ticket))
    assert session.stream is not None
    session.stream.outbox.put_nowait(None)  # the referee ends the stream after a Redirect

    listeners = {"target": target[1], "first": session.servicer}
    got = await _next_stream(listeners, REDIRECT_WAIT_S)
    why = ""
    if got is None:
        why = f"no stream at the Redirect's address within {REDIRECT_WAIT_S:g} s"
    elif got[0] == "first":
        why = "the bot came back to its first address instead of following the Redirect"
    else:
        there = Session(target[1], session.move_ms, stream=got[1])
        hello = await there.receive(session.move_ms / 1000 + REDIRECT_WAIT_S)
        why = "; ".join(_hello_problems(hello, first, ticket))
        # Redirected again, to a closed port: the bot must go back to its FIRST address.
        there.send(messages.welcome("redirected", secrets.token_urlsafe(16), "conformance"))
        there.send(messages.redirect(closed_address(), secrets.token_urlsafe(16)))
        there.stream.outbox.put_nowait(None)  # type: ignore[union-attr]
    results.add(FOLLOWS, why)
    if got is None:
        results.skip(FALLBACK, "not run: the Redirect was not followed")
        return
    back = got if got[0] == "first" else await _next_stream(listeners, FALLBACK_WAIT_S)
    why = ""
    if back is None:
        why = f"the bot did not come back to its first address within {FALLBACK_WAIT_S:g} s"
    elif back[0] == "target":
        why = "the bot went back to the redirecting referee, not to its first address"
    session.stream = back[1] if back is not None else None
    if back is not None and back[0] == "first":
        why = "; ".join(_hello_problems(await session.receive(FALLBACK_WAIT_S), first, ""))
    results.add(FALLBACK, why)
    if session.stream is None:
        return
    # An empty match, so that a table bot has played its match and exits.
    match_id = secrets.token_hex(8)
    session.send(messages.welcome("back", session.token, "conformance"))
    session.send(match_start(match_id, first.bot_name, session.move_ms))
    await end_match(session, match_id)
