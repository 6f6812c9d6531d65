"""The SDK client without sockets: its sans-I/O session alone, and the whole client driven by a
scripted transport (tests/sdk/scripted.py). The real-server tests (test_client.py,
tests/clients) stay: these pin the protocol decisions one by one."""

from __future__ import annotations

import asyncio
import random
import threading

import grpc
import pytest

from kozel.sdk import Bot
from kozel.sdk.client import play
from kozel.sdk.session import Cancel, Deliver, Ended, Lost, Options, Send, Session
from kozel.v1 import game_pb2 as gpb
from kozel.v1 import referee_pb2 as rpb
from tests.sdk.scripted import ScriptedTransport

A, B = "ref-a:50051", "ref-b:50051"
M = "m1"


class Counting(Bot):
    """Answers legal index 0 and counts how often it was asked."""

    asked = 0
    lock = threading.Lock()

    def choose(self, request: rpb.DecisionRequest) -> int:
        with Counting.lock:
            Counting.asked += 1
        return 0


def _decision(request_id: int, match: str = M) -> rpb.DecisionRequest:
    return rpb.DecisionRequest(
        match_id=match,
        request_id=request_id,
        legal_actions=[gpb.Action(), gpb.Action()],
    )


def _end(match: str = M) -> rpb.MatchEnd:
    return rpb.MatchEnd(match_id=match, result=gpb.MatchResult(winner_side=0))


def _run(transport: ScriptedTransport, **kw: object) -> list[rpb.MatchEnd]:
    Counting.asked = 0
    args = {"name": "b", "join_queue": ("classic", 2), "transport": transport, **kw}
    return asyncio.run(asyncio.wait_for(play(Counting, A, **args), 30))  # type: ignore[arg-type]


def _hello(**want: object):
    def check(req: rpb.PlayRequest) -> None:
        for key, value in want.items():
            assert getattr(req.hello, key) == value, (key, req.hello)

    return check


# -- the whole client over a scripted transport -------------------------------------------------


def test_one_match_then_leave_and_the_referee_closes() -> None:
    t = ScriptedTransport()
    (
        t.at(A)
        .expect("hello", _hello(bot_name="b", resume_token="", redirect_ticket=""))
        .send(welcome=rpb.Welcome(session_id="s", resume_token="tok"))
        .send(match_start=rpb.MatchStart(match_id=M, seat=0, players=2))
        .expect("leave")  # matches=1: no new match after this one
        .send(decision=_decision(1))
        .expect("action", lambda r: r.action.request_id == 1 and r.action.legal_index == 0)
        .send(match_end=_end())
        .close()
    )
    ends = _run(t, matches=1)
    assert [e.match_id for e in ends] == [M] and Counting.asked == 1 and t.left() == 0


def test_a_drop_resumes_with_the_token_and_a_resent_request_gets_the_same_answer() -> None:
    t = ScriptedTransport()
    (
        t.at(A)
        .expect("hello")
        .send(welcome=rpb.Welcome(resume_token="tok"))
        .send(match_start=rpb.MatchStart(match_id=M, players=2))
        .expect("leave")
        .send(decision=_decision(7))
        .expect("action")
        .fail(grpc.StatusCode.UNAVAILABLE, "network")
    )
    (
        t.at(A)
        .expect("hello", _hello(resume_token="tok"))
        .expect("leave")  # sent again on the new stream
        .send(welcome=rpb.Welcome(resume_token="tok2", resumed=True))
        .send(decision=_decision(7))  # resent after the resume
        .expect("action", lambda r: r.action.request_id == 7)
        .send(match_end=_end())
        .close()
    )
    ends = _run(t, matches=1)
    assert len(ends) == 1 and Counting.asked == 1  # the same answer, not asked again


def test_a_redirect_is_followed_with_its_ticket_and_a_refusal_there_falls_back() -> None:
    t = ScriptedTransport()
    (
        t.at(A)
        .expect("hello")
        .send(welcome=rpb.Welcome(resume_token="tok"))
        .send(redirect=rpb.Redirect(address=B, ticket="pass"))
        .hang()
    )
    t.at(B).expect("hello", _hello(redirect_ticket="pass", resume_token="")).fail(
        grpc.StatusCode.UNAUTHENTICATED, "unknown, used or expired redirect_ticket"
    )
    (
        t.at(A)
        .expect("hello", _hello(redirect_ticket="", resume_token=""))  # the first Hello again
        .send(welcome=rpb.Welcome(resume_token="t3"))
        .close()
    )
    assert _run(t) == [] and t.streams == [A, B, A]


def test_a_refused_resume_starts_a_new_session_and_the_lost_match_is_over() -> None:
    t = ScriptedTransport()
    (
        t.at(A)
        .expect("hello")
        .send(welcome=rpb.Welcome(resume_token="tok"))
        .send(match_start=rpb.MatchStart(match_id=M, players=2))
        .fail(grpc.StatusCode.UNAVAILABLE)
    )
    t.at(A).expect("hello", _hello(resume_token="tok")).fail(
        grpc.StatusCode.NOT_FOUND, "unknown or expired resume_token"
    )
    (
        t.at(A)
        .expect("hello", _hello(resume_token=""))
        .send(welcome=rpb.Welcome(resume_token="new"))
        .send(match_start=rpb.MatchStart(match_id="m2", players=2))
        .expect("leave")  # the lost match counts: two are started or done
        .send(decision=_decision(1, "m2"))
        .expect("action")
        .send(match_end=_end("m2"))
        .close()
    )
    ends = _run(t, matches=2)
    assert [e.match_id for e in ends] == ["m2"]  # M was lost with its session: not an end


def test_a_table_bot_gives_up_after_its_grace_with_the_last_error() -> None:
    t = ScriptedTransport()  # nothing listens at A: every stream fails UNAVAILABLE
    with pytest.raises(grpc.aio.AioRpcError) as err:
        _run(t, join_queue=None, join_table="t1", grace_s=0.3)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE and len(t.streams) >= 2


def test_an_error_that_cannot_pass_ends_the_run_at_once() -> None:
    t = ScriptedTransport()
    t.at(A).expect("hello").fail(grpc.StatusCode.UNAUTHENTICATED, "bad token")
    with pytest.raises(grpc.aio.AioRpcError) as err:
        _run(t, join_queue=None, join_ladder="l", token="x")
    assert err.value.details() == "bad token" and t.streams == [A]


# -- the session alone ---------------------------------------------------------------------------


def _session(**kw: object) -> Session:
    return Session(Options(name="b", **kw), A, rng=random.Random(0))  # type: ignore[arg-type]


def test_a_welcome_without_resume_loses_the_matches_of_the_old_session() -> None:
    s = _session(join_queue=("classic", 2))
    s.open()
    s.receive(rpb.PlayResponse(welcome=rpb.Welcome(resume_token="t")))
    (start,) = s.receive(rpb.PlayResponse(match_start=rpb.MatchStart(match_id=M)))
    assert isinstance(start, Deliver) and start.new
    s.ended(Ended.DROPPED, 0.0, "UNAVAILABLE")
    s.open()
    assert s.resuming
    out = s.receive(rpb.PlayResponse(welcome=rpb.Welcome(resume_token="u", resumed=False)))
    assert out == [Lost(M, "the referee did not resume the session")] and s.lost == 1


def test_a_stop_as_a_match_starts_plays_it_instead_of_abandoning_it() -> None:
    """Regression: asked to stop with no MatchStart read yet, the client cancelled its stream
    and the match the referee had just started was forfeited. Now it sends Leave and plays
    what the referee started meanwhile; the referee's close ends it."""
    s = _session(join_queue=("classic", 2))
    s.open()
    s.receive(rpb.PlayResponse(welcome=rpb.Welcome(resume_token="t")))
    assert s.stop() == [Send(rpb.PlayRequest(leave=rpb.Leave()))]
    (start,) = s.receive(rpb.PlayResponse(match_start=rpb.MatchStart(match_id=M)))
    assert isinstance(start, Deliver) and not s.finished
    s.receive(rpb.PlayResponse(match_end=_end()))
    assert s.finished and s.ended(Ended.CLOSED, 1.0).done
    idle = _session(join_queue=("classic", 2))  # not connected: nothing to wait for
    assert [type(e) for e in idle.stop()] == [Cancel]


def test_matches_not_announced_after_a_resume_are_over_when_the_referee_closes() -> None:
    s = _session(join_queue=("classic", 2))
    s.open()
    s.receive(rpb.PlayResponse(welcome=rpb.Welcome(resume_token="t")))
    s.receive(rpb.PlayResponse(match_start=rpb.MatchStart(match_id=M)))
    s.open()
    s.receive(rpb.PlayResponse(welcome=rpb.Welcome(resume_token="u", resumed=True)))
    step = s.ended(Ended.CLOSED, 1.0)
    assert step.effects == (Lost(M, "not resumed by the referee"),) and step.done


def test_backoff_doubles_up_to_its_cap_and_grace_runs_from_the_last_welcome() -> None:
    s = _session(join_table="t1", grace_s=10)
    s.open()
    s.receive(rpb.PlayResponse(welcome=rpb.Welcome(resume_token="t")))
    s.receive(rpb.PlayResponse(match_start=rpb.MatchStart(match_id=M)))
    waits = []
    for now in (0.0, 0.1, 0.3, 0.7):
        s.open()
        step = s.ended(Ended.DROPPED, now, "UNAVAILABLE")
        waits.append(step.wait)
    assert waits == sorted(waits) and waits[-1] <= 2.0 * 1.25
    s.open()
    assert s.ended(Ended.DROPPED, 10.5, "UNAVAILABLE").fail  # a table bot gives up


def test_a_redirect_without_an_address_falls_back_and_loses_nothing_running() -> None:
    s = _session(join_ladder="l")
    s.open()
    assert s.receive(rpb.PlayResponse(redirect=rpb.Redirect(ticket="x"))) == [
        Cancel("following a Redirect")
    ]
    step = s.ended(Ended.REDIRECTED, 0.0)
    assert step.reopen and s.fallbacks == 1 and s.address == A and s.ticket == ""


def test_a_repeated_request_is_answered_from_memory() -> None:
    s = _session(join_queue=("classic", 2))
    s.open()
    s.receive(rpb.PlayResponse(match_start=rpb.MatchStart(match_id=M)))
    (ask,) = s.receive(rpb.PlayResponse(decision=_decision(3)))
    assert isinstance(ask, Deliver) and ask.which == "decision"
    reply = rpb.ActionReply(match_id=M, request_id=3, legal_index=1)
    assert s.answered(reply) == [Send(rpb.PlayRequest(action=reply))]
    assert s.receive(rpb.PlayResponse(decision=_decision(3))) == [
        Send(rpb.PlayRequest(action=reply))
    ]
    assert s.receive(rpb.PlayResponse(decision=_decision(4)))  # a new request: to the bot
    assert s.answered(reply) == []  # a late answer to request 3 is kept, not sent
