"""Redirects between two referee processes sharing a ladder, seen by raw bots (plain gRPC, no
SDK): the Redirect and the end of the stream, a bot that never comes forfeits its seat, and
hostile tickets are refused with a status that says why."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from kozel.ladder.store import Store
from kozel.v1 import game_pb2 as pb
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


def test_a_redirected_bot_that_never_comes_forfeits(pair: tuple[Cluster, Store]) -> None:
    c, store = pair
    tokens = {n: store.register_bot(n) for n in ("one", "two")}
    bots = {
        "one": RawBot(c.referees["ref-a"].address, "one", _hello("one", tokens["one"])),
        "two": RawBot(c.referees["ref-b"].address, "two", _hello("two", tokens["two"])),
    }

    async def play() -> None:
        # Each plays what it is asked; the one sent elsewhere ignores its Redirect.
        await asyncio.wait_for(asyncio.gather(*(b.run() for b in bots.values())), 120)

    asyncio.run(play())
    moved = [b for b in bots.values() if b.of("redirect")]
    stayed = [b for b in bots.values() if not b.of("redirect")]
    assert len(moved) == 1 and len(stayed) == 1, [b.received for b in bots.values()]
    (gone,), (here,) = moved, stayed
    redirect = gone.of("redirect")[0]
    assert redirect.address == here.address and len(redirect.ticket) >= 32
    assert gone.status is None  # the stream ended with status OK right after the Redirect
    assert gone.received[-1].WhichOneof("message") == "redirect"
    (end,) = here.of("match_end")
    assert [f.reason for f in end.result.forfeits] == [pb.FORFEIT_REASON_DISCONNECTED]
    assert end.result.winner_side == here.seat
    wait(lambda: store.match_counts().get("finished") == 1, "the forfeit recorded", timeout=60)
    (row,) = store.matches(limit=10)
    assert row.redirected == 1 and store.check_consistency() == []
    # The ticket was single-use and has expired: presenting it now is refused.
    late = RawBot(here.address, gone.name, _hello(gone.name, tokens[gone.name], redirect.ticket))
    asyncio.run(asyncio.wait_for(late.run(), 60))
    assert late.status == grpc.StatusCode.UNAUTHENTICATED
    assert "redirect_ticket" in late.details


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
