"""The door: what a stream's first message is let in as, or the refusal's kind and reason, decided
with no referee, no socket and no store (the servicer's tests over gRPC check the edge)."""

from __future__ import annotations

import pytest

from kozel.core.convert import ruleset_to_pb
from kozel.core.messages import PROTOCOL_VERSION
from kozel.engine.rules import Ruleset
from kozel.server import errors
from kozel.server.door import (
    BadToken,
    Door,
    JoinLadder,
    JoinQueue,
    JoinTable,
    Resume,
    admit,
    admit_bot,
)
from kozel.server.session import Session
from kozel.v1 import referee_pb2 as rpb

OPEN = Door(draining=False, resumable=None, tables={"t1"}, ladders={"main"})


def _hello(**fields: object) -> rpb.PlayRequest:
    hello = rpb.Hello(protocol_version=PROTOCOL_VERSION, bot_name="bot")
    for key, value in fields.items():
        if key == "join_queue":
            hello.join_queue.CopyFrom(value)  # type: ignore[arg-type]
        elif key == "join_ladder":
            hello.join_ladder.ladder = str(value)
        elif key == "join_table":
            hello.join_table.table_id = str(value)
        else:
            setattr(hello, key, value)
    return rpb.PlayRequest(hello=hello)


def _queue(players: int = 2) -> rpb.JoinQueue:
    return rpb.JoinQueue(ruleset=ruleset_to_pb(Ruleset.preset("classic")), players=players)


def _refused(req: rpb.PlayRequest, door: Door = OPEN) -> errors.Refused:
    with pytest.raises(errors.Refused) as got:
        admit(req, door)
    return got.value


def test_each_want_is_admitted_as_what_it_asks() -> None:
    assert admit(_hello(join_table="t1"), OPEN) == JoinTable(_hello(join_table="t1").hello, "t1")
    queued = admit(_hello(join_queue=_queue(3)), OPEN)
    assert isinstance(queued, JoinQueue) and queued.players == 3
    ladder = admit(_hello(join_ladder="main", token="tok", redirect_ticket="T"), OPEN)
    assert isinstance(ladder, JoinLadder) and (ladder.ladder, ladder.ticket) == ("main", "T")


@pytest.mark.parametrize(
    ("req", "kind", "words"),
    [
        (rpb.PlayRequest(leave=rpb.Leave()), errors.Invalid, "must be Hello"),
        (_hello(protocol_version=99, join_table="t1"), errors.Conflict, "99 is not supported"),
        (_hello(), errors.Invalid, "join_table or join_queue"),
        (_hello(bot_name="", join_table="t1"), errors.Invalid, "bot_name"),
        (_hello(bot_name="a\x1bb", join_table="t1"), errors.Invalid, "bot_name"),
        (_hello(join_table="nope"), errors.NotFound, "no table 'nope'"),
        (_hello(join_table="bad id!"), errors.Invalid, "table_id"),
        (_hello(join_queue=_queue(9)), errors.Invalid, "9"),
        (_hello(join_ladder="other", token="t"), errors.NotFound, "ladders: main"),
        (_hello(join_ladder="main"), BadToken, "Hello.token"),
        (_hello(join_queue=_queue(), redirect_ticket="T"), errors.Invalid, "join_ladder only"),
        (_hello(join_ladder="main", token="t", redirect_ticket="T" * 129), errors.Invalid, "128"),
    ],
)
def test_a_bad_hello_is_refused_with_its_kind_and_reason(
    req: rpb.PlayRequest, kind: type[errors.Refused], words: str
) -> None:
    got = _refused(req)
    assert type(got) is kind and words in got.message


def test_a_draining_referee_lets_in_only_bots_redirected_to_it() -> None:
    draining = Door(draining=True, resumable=None, tables={"t1"}, ladders={"main"})
    assert isinstance(_refused(_hello(join_table="t1"), draining), errors.Unavailable)
    ticketed = _hello(join_ladder="main", token="t", redirect_ticket="T")
    assert isinstance(admit(ticketed, draining), JoinLadder)


def test_a_resume_token_is_bound_to_its_bot_name_and_ladder_token() -> None:
    opened = _hello(join_ladder="main", token="secret")
    session = Session(opened.hello, 1, lambda _: None)
    session.bot = object()  # a ladder session
    door = Door(draining=True, resumable=session, tables=(), ladders=())
    back = _hello(resume_token=session.resume_token, token="secret")
    assert admit(back, door) == Resume(session)  # also while draining: its matches are here
    assert isinstance(_refused(_hello(resume_token="x", token="secret")), errors.NotFound)
    other = _hello(resume_token=session.resume_token, bot_name="other", token="secret")
    assert isinstance(_refused(other, door), errors.NotFound)
    guessed = _hello(resume_token=session.resume_token, token="guess")
    assert isinstance(_refused(guessed, door), BadToken)


def test_a_ladder_bot_gets_no_more_sessions_than_its_cap() -> None:
    admit_bot("b", connected=1, cap=2)
    with pytest.raises(errors.Exhausted, match="max_sessions_per_bot"):
        admit_bot("b", connected=2, cap=2)
