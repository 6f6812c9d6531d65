"""The SDK client against a scripted fake referee over real gRPC (tests/sdk/fake_referee.py)."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from kozel.sdk import Bot, BotError, GreedyBot, RandomBot, Report, play
from kozel.v1 import game_pb2, referee_pb2
from tests.sdk.fake_referee import (
    FakeReferee,
    assert_same_hello,
    dead_address,
    start_fake,
    stop_fake,
)


class RecordingBot(Bot):
    """Greedy play, recording every call; shared counters across the bots of one test."""

    chooses: Counter[tuple[str, int]]
    starts: Counter[str]
    threads: set[str]
    calls: list[str]

    def __init__(self) -> None:
        self.inner = GreedyBot()
        self.calls = []

    @classmethod
    def reset(cls) -> None:
        cls.chooses, cls.starts, cls.threads = Counter(), Counter(), set()

    def on_match_start(self, msg: referee_pb2.MatchStart) -> None:
        type(self).starts[msg.match_id] += 1
        self.calls.append("match_start")
        self.inner.on_match_start(msg)

    def on_deal_start(self, msg: referee_pb2.DealStart) -> None:
        self.calls.append("deal_start")

    def on_event(self, msg: referee_pb2.Event) -> None:
        self.calls.append("event")

    def on_deal_end(self, msg: referee_pb2.DealEnd) -> None:
        self.calls.append("deal_end")

    def on_match_end(self, msg: referee_pb2.MatchEnd) -> None:
        self.calls.append("match_end")

    def choose(self, request: referee_pb2.DecisionRequest) -> int:
        type(self).chooses[(request.match_id, request.request_id)] += 1
        type(self).threads.add(threading.current_thread().name)
        self.calls.append("choose")
        return self.inner.choose(request)


def _run(body: Callable[..., Awaitable[Any]], **fake: Any) -> Any:
    """Run ``body(ref, address)`` against a fresh fake referee."""

    async def main() -> Any:
        server, ref, address = await start_fake(**fake)
        try:
            return await asyncio.wait_for(body(ref, address), 60)
        finally:
            await stop_fake(server, ref)

    return asyncio.run(main())


def test_table_bot_plays_one_match_and_leaves() -> None:
    RecordingBot.reset()
    bots: list[RecordingBot] = []

    def factory() -> Bot:
        bots.append(RecordingBot())
        return bots[-1]

    async def body(ref: FakeReferee, address: str) -> list[referee_pb2.MatchEnd]:
        return await play(factory, address, name="rec", join_table="t1")

    results = _run(body)
    assert len(results) == 1 and len(bots) == 1
    calls = bots[0].calls
    assert calls[0] == "match_start" and calls[1] == "deal_start" and calls[-1] == "match_end"
    assert calls.count("deal_start") == calls.count("deal_end") == results[0].result.deals
    assert "MainThread" not in RecordingBot.threads  # choose runs in worker threads
    assert all(n == 1 for n in RecordingBot.chooses.values())


def test_hello_fields_and_queue_with_concurrent_matches() -> None:
    RecordingBot.reset()

    async def body(ref: FakeReferee, address: str) -> tuple[list, FakeReferee]:
        res = await play(
            RecordingBot,
            address,
            name="q",
            join_queue=("classic", 2),
            token="tok",
            max_matches=2,
            matches=3,
        )
        return res, ref

    results, ref = _run(body)
    assert len(results) == 3
    assert len({r.match_id for r in results}) == 3
    hello = ref.hellos[0]
    assert (hello.protocol_version, hello.bot_name, hello.token, hello.max_matches) == (
        1,
        "q",
        "tok",
        2,
    )
    assert hello.client.startswith("kozel-python-sdk/")
    assert hello.join_queue.ruleset.preset == "classic" and hello.join_queue.players == 2
    assert sum(s.started for s in ref.sessions.values()) == 3  # Leave stopped a fourth
    assert all(n == 1 for n in RecordingBot.starts.values())


def test_dropped_stream_is_resumed() -> None:
    RecordingBot.reset()

    async def body(ref: FakeReferee, address: str) -> tuple[list, FakeReferee]:
        res = await play(
            RecordingBot,
            address,
            name="d",
            join_queue=("classic", 2),
            max_matches=2,
            matches=2,
            drop_after_requests=7,
        )
        return res, ref

    results, ref = _run(body)
    assert len(results) == 2
    assert len(ref.hellos) == 2 and ref.hellos[1].resume_token  # resumed once
    assert len(ref.sessions) == 1
    # Resent requests were answered again from memory: the bot chose each request once,
    # MatchStart reached each bot once although the referee sent it again.
    assert all(n == 1 for n in RecordingBot.chooses.values())
    assert all(n == 1 for n in RecordingBot.starts.values())
    assert len(RecordingBot.starts) == 2


def test_drop_without_reconnect_returns_what_it_has() -> None:
    async def body(ref: FakeReferee, address: str) -> list:
        return await play(
            RandomBot, address, name="n", join_table="t", reconnect=False, drop_after_requests=3
        )

    assert _run(body) == []


def test_match_that_ended_during_a_drop_does_not_hang_the_client() -> None:
    """The referee resumes the session but no longer knows the match (its MatchEnd was lost
    while the bot was away): the client gives the match up instead of waiting forever."""

    async def body(ref: FakeReferee, address: str) -> list:
        return await play(
            RandomBot, address, name="f", join_table="t", drop_after_requests=3, grace_s=2
        )

    start = time.monotonic()
    assert _run(body, forget_on_resume=True) == []
    assert time.monotonic() - start < 2


class BadThenGoodBot(Bot):
    """Answers each request first with a card it does not hold, then properly."""

    rejections = 0

    def __init__(self) -> None:
        self.tried: set[int] = set()

    def on_rejection(self, msg: referee_pb2.Rejection) -> None:
        type(self).rejections += 1

    def choose(self, request: referee_pb2.DecisionRequest) -> int | game_pb2.Action:
        if request.request_id not in self.tried and request.request_id % 5 == 1:
            self.tried.add(request.request_id)
            hand = set(request.observation.hand)
            missing = next(c for c in ("AS", "AC", "AD", "AH", "TS") if c not in hand)
            return game_pb2.Action(kind=game_pb2.ACTION_KIND_BEAT, cards=[missing])
        return 0


class StubbornBot(Bot):
    """Always repeats an illegal answer; the client must fall back to a legal index."""

    def choose(self, request: referee_pb2.DecisionRequest) -> game_pb2.Action:
        return game_pb2.Action(kind=game_pb2.ACTION_KIND_PASS)


class CrashingBot(Bot):
    def choose(self, request: referee_pb2.DecisionRequest) -> int:
        if request.request_id % 2:
            raise RuntimeError("bug in the bot")
        return 99  # out of range: treated like a crash


@pytest.mark.parametrize("factory", [BadThenGoodBot, StubbornBot, CrashingBot])
def test_refused_or_failed_answers_still_finish_the_match_when_not_strict(
    factory: type[Bot], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="kozel.sdk")

    async def body(ref: FakeReferee, address: str) -> tuple[list, FakeReferee]:
        return await play(factory, address, name="b", join_table="t", strict=False), ref

    results, ref = _run(body)
    assert len(results) == 1
    if factory is BadThenGoodBot:
        assert ref.rejections == BadThenGoodBot.rejections > 0
    elif factory is StubbornBot:
        assert ref.rejections > 0  # one refusal per request, then a legal fallback
    else:
        assert ref.rejections == 0 and "choose failed" in caplog.text


def _ladder_play(
    address: str, max_matches: int = 1, **kwargs: Any
) -> Awaitable[list[referee_pb2.MatchEnd]]:
    return play(
        RandomBot,
        address,
        name="lad",
        join_ladder="main",
        token="secret-token",
        max_matches=max_matches,
        skip_events=True,
        **kwargs,
    )


def test_redirect_is_followed_with_the_ticket_and_the_same_hello() -> None:
    async def main() -> tuple[list, FakeReferee, FakeReferee]:
        server_b, ref_b, address_b = await start_fake()
        server_a, ref_a, address_a = await start_fake(redirect_to=address_b)
        try:
            return (
                await asyncio.wait_for(_ladder_play(address_a, max_matches=2, matches=2), 60),
                ref_a,
                ref_b,
            )
        finally:
            await stop_fake(server_a, ref_a)
            await stop_fake(server_b, ref_b)

    results, ref_a, ref_b = asyncio.run(main())
    assert len(results) == 2
    assert len(ref_a.hellos) == 1 and not ref_a.hellos[0].redirect_ticket
    hello = ref_b.hellos[0]
    assert hello.redirect_ticket == ref_a.tickets[0] and not hello.resume_token
    assert_same_hello(hello, ref_a.hellos[0])
    assert hello.token == "secret-token"  # the ticket does not replace the credential


def test_a_drop_after_a_redirect_resumes_there_without_the_ticket() -> None:
    async def main() -> tuple[list, FakeReferee, FakeReferee]:
        server_b, ref_b, address_b = await start_fake()
        server_a, ref_a, address_a = await start_fake(redirect_to=address_b)
        try:
            res = await asyncio.wait_for(
                _ladder_play(address_a, matches=1, drop_after_requests=3), 60
            )
            return res, ref_a, ref_b
        finally:
            await stop_fake(server_a, ref_a)
            await stop_fake(server_b, ref_b)

    results, ref_a, ref_b = asyncio.run(main())
    assert len(results) == 1 and len(ref_a.hellos) == 1
    assert [bool(h.redirect_ticket) for h in ref_b.hellos] == [True, False]
    assert ref_b.hellos[1].resume_token  # resumed at the redirected address


def test_chained_redirects_carry_each_ticket_and_keep_the_token() -> None:
    async def main() -> tuple[list, list[FakeReferee]]:
        server_c, ref_c, address_c = await start_fake()
        server_b, ref_b, address_b = await start_fake(redirect_to=address_c)
        server_a, ref_a, address_a = await start_fake(redirect_to=address_b)
        try:
            res = await asyncio.wait_for(_ladder_play(address_a, matches=1), 60)
            return res, [ref_a, ref_b, ref_c]
        finally:
            for server, ref in ((server_a, ref_a), (server_b, ref_b), (server_c, ref_c)):
                await stop_fake(server, ref)

    results, (ref_a, ref_b, ref_c) = asyncio.run(main())
    assert len(results) == 1
    assert ref_b.hellos[0].redirect_ticket == ref_a.tickets[0]
    assert ref_c.hellos[0].redirect_ticket == ref_b.tickets[0]
    for ref in (ref_b, ref_c):
        assert_same_hello(ref.hellos[0], ref_a.hellos[0])


def test_an_unreachable_redirect_target_sends_the_bot_back_to_its_first_address() -> None:
    """Redirected to a dead port: after a few tries over ``redirect_grace_s`` the bot is back
    at its first address with its first Hello (no ticket, no resume token) and plays there."""

    async def main() -> tuple[list, FakeReferee, float]:
        server_a, ref_a, address_a = await start_fake(redirect_to=dead_address())
        start = time.monotonic()
        try:
            res = await asyncio.wait_for(_ladder_play(address_a, matches=1), 60)
            return res, ref_a, time.monotonic() - start
        finally:
            await stop_fake(server_a, ref_a)

    results, ref_a, took = asyncio.run(main())
    assert len(results) == 1
    assert len(ref_a.hellos) == 2
    first, again = ref_a.hellos
    assert not again.redirect_ticket and not again.resume_token
    assert_same_hello(again, first)
    assert took >= 3.0 * 0.9  # the redirect target was retried for its grace, not given up at once


def test_losing_the_redirected_referee_mid_match_falls_back_after_a_chained_redirect() -> None:
    """A -> B -> C; C dies mid-match and resuming there fails: the bot goes back to A (its
    first address, not B) with its first Hello, and plays its second match there."""

    async def main() -> tuple[list, list[FakeReferee]]:
        server_c, ref_c, address_c = await start_fake()
        server_b, ref_b, address_b = await start_fake(redirect_to=address_c)
        server_a, ref_a, address_a = await start_fake(redirect_to=address_b)
        try:
            task = asyncio.ensure_future(
                _ladder_play(address_a, max_matches=1, matches=2, redirect_grace_s=1.0)
            )
            while sum(ref_c.answers.values()) < 3:
                await asyncio.wait_for(ref_c.answered.wait(), 30)
                ref_c.answered.clear()
            await stop_fake(server_c, ref_c)
            res = await asyncio.wait_for(task, 60)
            return res, [ref_a, ref_b, ref_c]
        finally:
            for server, ref in ((server_a, ref_a), (server_b, ref_b), (server_c, ref_c)):
                await stop_fake(server, ref)

    results, (ref_a, ref_b, ref_c) = asyncio.run(main())
    assert len(results) == 1  # the match on C was lost with C; the second one was played on A
    assert len(ref_b.hellos) == 1  # the bot did not go back to the referee in the middle
    assert ref_c.hellos[0].redirect_ticket == ref_b.tickets[0]
    assert len(ref_a.hellos) == 2
    again = ref_a.hellos[1]
    assert not again.redirect_ticket and not again.resume_token
    assert_same_hello(again, ref_a.hellos[0])
    assert ref_a.sessions and sum(s.started for s in ref_a.sessions.values()) == 1


def test_unreachable_referee_gives_up_after_grace() -> None:
    start = time.monotonic()
    with pytest.raises(grpc.aio.AioRpcError) as err:
        asyncio.run(play(RandomBot, dead_address(), name="x", join_table="t", grace_s=0.5))
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    assert time.monotonic() - start < 5


def test_join_target_is_required_once() -> None:
    with pytest.raises(ValueError):
        asyncio.run(play(RandomBot, "127.0.0.1:1", name="x"))
    with pytest.raises(ValueError):
        asyncio.run(
            play(RandomBot, "127.0.0.1:1", name="x", join_table="t", join_queue=("classic", 2))
        )


class RaisesOnThirdBot(Bot):
    """Plays index 0, but its third decision divides by zero."""

    def __init__(self) -> None:
        self.decisions = 0

    def choose(self, request: referee_pb2.DecisionRequest) -> int:
        self.decisions += 1
        if self.decisions == 3:
            return 1 // 0
        return 0


def test_strict_stops_at_the_first_exception_and_reports_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Off a ladder the SDK is strict by default: the exception ends the run with BotError,
    is counted, and is written to KOZEL_REPORT with its innermost frame."""
    path = tmp_path / "report.jsonl"
    monkeypatch.setenv("KOZEL_REPORT", str(path))
    report = Report()

    async def body(ref: FakeReferee, address: str) -> None:
        await play(RaisesOnThirdBot, address, name="r", join_table="t", report=report)

    with pytest.raises(BotError, match="ZeroDivisionError") as err:
        _run(body)
    assert isinstance(err.value.__cause__, ZeroDivisionError)
    assert report.counts["exception"] == 1
    first = report.first["exception"]
    assert (first.what, first.request_id) == ("choose", 3)
    line = RaisesOnThirdBot.choose.__code__.co_firstlineno + 3  # the division
    assert first.where == f"test_client.py, line {line}, in choose"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines == [
        {
            "kind": "exception",
            "match_id": first.match_id,
            "request_id": 3,
            "what": "choose",
            "text": "ZeroDivisionError: integer division or modulo by zero",
            "where": first.where,
        }
    ]


def test_an_index_out_of_range_is_a_bug_of_the_bot_too() -> None:
    class OutOfRange(Bot):
        def choose(self, request: referee_pb2.DecisionRequest) -> int:
            return len(request.legal_actions)

    async def body(ref: FakeReferee, address: str) -> None:
        await play(OutOfRange, address, name="o", join_table="t")

    with pytest.raises(BotError, match="IndexError: choose returned index"):
        _run(body)


def test_not_strict_counts_every_exception_and_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    """KOZEL_STRICT=0 keeps the old fall-back (index 0, another index after a repeated
    refusal), and the report counts what was hidden."""
    monkeypatch.setenv("KOZEL_STRICT", "0")
    crashing, stubborn = Report(), Report()

    async def body(ref: FakeReferee, address: str) -> FakeReferee:
        await play(CrashingBot, address, name="c", join_table="t", report=crashing)
        await play(StubbornBot, address, name="s", join_table="t", report=stubborn)
        return ref

    ref = _run(body)
    decisions = sum(ref.answers.values()) - ref.rejections
    assert crashing.counts["exception"] > 0 and crashing.counts["refusal"] == 0
    assert stubborn.counts["refusal"] == ref.rejections > 0
    assert stubborn.first["refusal"].what.startswith("ERROR_CODE_")
    assert crashing.wins + crashing.draws + crashing.losses == 1
    assert decisions > 0
    assert "exceptions in the bot" in crashing.summary()


def test_a_ladder_bot_is_not_strict_by_default() -> None:
    """Rated play keeps the fall-back: a bug costs a weak answer, not the match."""
    report = Report()

    class CrashingLadderBot(CrashingBot):
        pass

    async def body(ref: FakeReferee, address: str) -> list:
        return await play(
            CrashingLadderBot,
            address,
            name="l",
            join_ladder="main",
            token="t",
            matches=1,
            report=report,
        )

    assert len(_run(body)) == 1
    assert report.counts["exception"] > 0


def test_a_refused_resume_starts_a_new_session_at_the_first_address() -> None:
    """The referee no longer knows the session (NOT_FOUND, as after a restart or from
    another referee behind a shared address): the bot opens a new session with its first
    Hello and plays on; the match of the lost session is over for it."""

    async def body(ref: FakeReferee, address: str) -> tuple[list, FakeReferee]:
        res = await play(
            RandomBot,
            address,
            name="q",
            join_queue=("classic", 2),
            matches=2,
            drop_after_requests=3,
        )
        return res, ref

    results, ref = _run(body, refuse_resume=True)
    assert len(results) == 1  # the first match was lost with its session
    first, resumed, fresh = ref.hellos
    assert resumed.resume_token and not fresh.resume_token
    assert fresh.join_queue == first.join_queue and fresh.bot_name == first.bot_name
    assert len(ref.sessions) == 2


def test_stop_lets_the_running_match_finish_and_starts_no_other() -> None:
    async def body(ref: FakeReferee, address: str) -> tuple[list, FakeReferee]:
        stop = asyncio.Event()
        task = asyncio.ensure_future(
            play(RandomBot, address, name="s", join_queue=("classic", 2), stop=stop)
        )
        await asyncio.wait_for(ref.answered.wait(), 30)
        stop.set()
        return await task, ref

    results, ref = _run(body)
    assert len(results) == 1
    assert sum(s.started for s in ref.sessions.values()) == 1
