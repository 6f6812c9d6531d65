"""A resume token alone does not take a seat over, over real sockets: it is bound to the
session's bot name, and a ladder session also needs the bot's ladder token."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest

from kozel.v1 import referee_pb2 as rpb

from .conftest import RefereeProcess, start_ladder_referee, stop_referee_process
from .rawbot import RawBot, create_table, table_hello


def welcomed(bot: RawBot, msg: rpb.PlayResponse) -> bool:
    return msg.WhichOneof("message") == "welcome"


async def hijack(address: str, hello: rpb.Hello, token: str) -> RawBot:
    """Try to resume someone's session with its resume token and ``hello``."""
    thief = RawBot(address, hello.bot_name, hello=hello, resume_token=token)
    await asyncio.wait_for(thief.run(stop_after=welcomed), 30)
    return thief


def test_an_open_play_resume_token_is_bound_to_the_bot_name(referee: RefereeProcess) -> None:
    async def scenario():
        table = await create_table(referee.address, "classic", 2)
        owner = RawBot(referee.address, "owner", hello=table_hello("owner", table))
        run = asyncio.create_task(owner.run())
        while not owner.of("welcome"):
            await asyncio.sleep(0.02)
        token = owner.resume_token
        thief = await hijack(referee.address, table_hello("thief", table), token)
        still_open = not run.done()
        again = await hijack(referee.address, table_hello("owner", table), token)
        await asyncio.wait_for(run, 30)  # the owner's old stream ends: resumed elsewhere
        return thief, still_open, again, owner

    thief, still_open, again, owner = asyncio.run(scenario())
    assert thief.status == grpc.StatusCode.NOT_FOUND and not thief.of("welcome")
    assert still_open  # the owner's stream was not taken over
    assert again.of("welcome") and again.of("welcome")[0].resumed
    assert owner.status == grpc.StatusCode.ABORTED and "resumed" in owner.details


LADDER = {
    "ladders": [
        {
            "name": "classic-2p",
            "players": 2,
            "ruleset": {"preset": "classic", "options": {"limit": 4}},
        }
    ]
}


def test_a_ladder_resume_needs_the_bots_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KOZEL_LIMITS__MAX_SESSIONS_PER_BOT", "2")
    ref, store, tokens = start_ladder_referee(tmp_path, LADDER, ["bot-0", "bot-1"])
    store.close()

    def hello(token: str) -> rpb.Hello:
        return rpb.Hello(
            protocol_version=1,
            bot_name="bot-0",
            token=token,
            join_ladder=rpb.JoinLadder(ladder="classic-2p"),
        )

    async def scenario():
        owner = RawBot(ref.address, "bot-0", hello=hello(tokens[0]))
        run = asyncio.create_task(owner.run())
        while not owner.of("welcome"):
            await asyncio.sleep(0.02)
        token = owner.resume_token
        bare = await hijack(ref.address, hello(""), token)
        other = await hijack(ref.address, hello(tokens[1]), token)
        wrong = await hijack(ref.address, hello("kz_" + "x" * 43), token)
        still_open = not run.done()
        again = await hijack(ref.address, hello(tokens[0]), token)
        await asyncio.wait_for(run, 30)
        # Sessions per ladder bot are capped (2 here): the resumed one counts no more.
        extra = [RawBot(ref.address, "bot-0", hello=hello(tokens[0])) for _ in range(3)]
        runs = []
        for bot in extra:  # connected at once, one after the other
            runs.append(asyncio.create_task(bot.run()))
            while not (bot.of("welcome") or runs[-1].done()):
                await asyncio.sleep(0.02)
        for task in runs:
            task.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
        return bare, other, wrong, still_open, again, extra

    try:
        bare, other, wrong, still_open, again, extra = asyncio.run(scenario())
    finally:
        stop_referee_process(ref)
    for thief in (bare, other, wrong):
        assert thief.status == grpc.StatusCode.UNAUTHENTICATED, (thief.status, thief.details)
        assert not thief.of("welcome")
    assert still_open
    assert again.of("welcome") and again.of("welcome")[0].resumed
    assert [bool(b.of("welcome")) for b in extra] == [True, True, False]
    assert extra[2].status == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "limits.max_sessions_per_bot" in extra[2].details
