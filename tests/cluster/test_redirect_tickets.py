"""Redirects between two referee processes sharing a ladder, seen by raw bots (plain gRPC, no
SDK): the Redirect and the end of the stream, a bot that never comes costs nobody anything (the
match is handed back unstarted and its opponent plays on), and hostile tickets are refused with
a status that says why."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from sqlalchemy import func, select

from kozel.ladder.models import AssignmentRow, TicketRow
from kozel.ladder.store import Store
from kozel.v1 import referee_pb2 as rpb
from tests.cluster.cluster import LADDER, Cluster, ladder_file
from tests.ladder.fleet import stop, wait
from tests.server.rawbot import RawBot


@pytest.fixture
def pair(
    tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Cluster, Store]]:
    """Two referees sharing one ladder (1 s connection grace)."""
    monkeypatch.setenv("KOZEL_LIMITS__ADMISSION_LAG_MS", "0")
    store = Store(pg_url)
    store.migrate()
    ladders = ladder_file(
        tmp_path / "ladders.yaml",
        time_control={"move_ms": 3000, "bank_ms": 10000, "grace_ms": 1000},
    )
    c = Cluster(tmp_path, pg_url, ladders)
    c.start("ref-a")
    c.start("ref-b")
    try:
        yield c, store
    finally:
        stop(r.proc for r in c.referees.values())
        store.close()


def _hello(name: str, token: str, ticket: str = "") -> rpb.Hello:
    return rpb.Hello(
        protocol_version=1,
        bot_name=name,
        token=token,
        join_ladder=rpb.JoinLadder(ladder=LADDER),
        redirect_ticket=ticket,
    )


def test_a_redirected_bot_that_never_comes_costs_nobody_anything(
    pair: tuple[Cluster, Store],
) -> None:
    c, store = pair
    tokens = {n: store.register_bot(n) for n in ("one", "two")}
    first = {"one": c.referees["ref-a"].address, "two": c.referees["ref-b"].address}
    bots = {n: RawBot(first[n], n, _hello(n, tokens[n])) for n in ("one", "two")}

    async def play() -> tuple[RawBot, RawBot, RawBot]:
        # Each plays what it is asked; the one sent elsewhere ignores its Redirect.
        tasks = {n: asyncio.create_task(b.run()) for n, b in bots.items()}
        done, _ = await asyncio.wait(
            tasks.values(), timeout=120, return_when=asyncio.FIRST_COMPLETED
        )
        assert len(done) == 1
        (gone_name,) = [n for n, t in tasks.items() if t in done]
        here_name = next(n for n in bots if n != gone_name)
        # Its host waits the grace time (1 s), then gives the match back unstarted: the bot
        # that came waits again (its ticket is published anew), and nothing was started.
        await asyncio.to_thread(
            wait, lambda: _waiting_again(store, here_name), "the match handed back", 60
        )
        assert store.match_counts() == {}
        # The other bot comes back on its own (a fresh Hello) where its opponent waits (a raw
        # bot follows no Redirect): they play, nobody forfeits.
        again = RawBot(first[here_name], gone_name, _hello(gone_name, tokens[gone_name]))
        await asyncio.wait_for(asyncio.gather(again.run(), tasks[here_name]), 120)
        return bots[gone_name], bots[here_name], again

    gone, here, again = asyncio.run(play())
    redirect = gone.of("redirect")[0]
    assert redirect.address == here.address and len(redirect.ticket) >= 32
    assert gone.status is None  # the stream ended with status OK right after the Redirect
    assert gone.received[-1].WhichOneof("message") == "redirect"
    (end,) = here.of("match_end")
    assert list(end.result.forfeits) == [] and again.of("match_end")
    wait(lambda: store.match_counts().get("finished") == 1, "the match recorded", timeout=60)
    assert store.check_consistency() == []
    # The ticket was single-use and has expired: presenting it now is refused.
    late = RawBot(here.address, gone.name, _hello(gone.name, tokens[gone.name], redirect.ticket))
    asyncio.run(asyncio.wait_for(late.run(), 60))
    assert late.status == grpc.StatusCode.UNAUTHENTICATED
    assert "redirect_ticket" in late.details


def _waiting_again(store: Store, name: str) -> bool:
    bot = store.bot_ids([name])[name]
    with store.transaction() as s:
        tickets = s.scalars(
            select(TicketRow.slots).where(TicketRow.bot_id == bot, TicketRow.slots > 0)
        ).all()
        assigned = s.scalar(select(func.count()).select_from(AssignmentRow))
    return bool(tickets) and not assigned


@pytest.mark.parametrize(
    ("ticket", "want_table", "code", "words"),
    [
        ("no-such-ticket", False, grpc.StatusCode.UNAUTHENTICATED, "unknown, used or expired"),
        ("x" * 129, False, grpc.StatusCode.INVALID_ARGUMENT, "at most 128"),
        ("abc", True, grpc.StatusCode.INVALID_ARGUMENT, "join_ladder only"),
    ],
)
def test_hostile_redirect_tickets_are_refused(
    pair: tuple[Cluster, Store],
    ticket: str,
    want_table: bool,
    code: grpc.StatusCode,
    words: str,
) -> None:
    c, store = pair
    token = store.register_bot("mallory")
    hello = _hello("mallory", token, ticket)
    if want_table:
        hello.join_table.table_id = "t1"
    bot = RawBot(c.referees["ref-a"].address, "mallory", hello)
    asyncio.run(asyncio.wait_for(bot.run(), 60))
    assert bot.status == code, (bot.status, bot.details)
    assert words in bot.details
    assert not bot.of("welcome")
