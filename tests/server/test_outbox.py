"""A stream's outbox: messages in order, the end after them, and a bot that does not read cut
off at the configured limit with what was waiting dropped."""

from __future__ import annotations

import asyncio

import grpc

from kozel.server import errors
from kozel.server.session import Outbox
from kozel.server.status import grpc_status
from kozel.v1 import referee_pb2 as rpb


def _msg(n: int) -> rpb.PlayResponse:
    return rpb.PlayResponse(welcome=rpb.Welcome(session_id=f"m{n}"))


async def _drain(box: Outbox) -> list[str]:
    got: list[str] = []
    while (msg := await box.get()) is not None:
        assert isinstance(msg, rpb.PlayResponse)
        got.append(msg.welcome.session_id)
    return got


def test_messages_come_out_in_order_then_the_end() -> None:
    box = Outbox(limit=16)
    for n in range(3):
        box.put(_msg(n))
    box.close()
    box.put(_msg(9))  # after the close: dropped
    assert asyncio.run(_drain(box)) == ["m0", "m1", "m2"]
    assert box.error is None


def test_a_waiting_writer_wakes_for_a_message_and_for_the_close() -> None:
    async def scenario() -> list[str]:
        box = Outbox(limit=16)
        writer = asyncio.create_task(_drain(box))
        await asyncio.sleep(0)  # the writer waits on an empty outbox
        assert not writer.done()
        box.put(_msg(1))
        await asyncio.sleep(0)
        box.put(_msg(2))
        box.close()
        return await asyncio.wait_for(writer, 10)

    assert asyncio.run(scenario()) == ["m1", "m2"]


def test_a_bot_that_does_not_read_is_cut_off_at_the_limit() -> None:
    box = Outbox(limit=16)
    for n in range(17):
        box.put(_msg(n))
    assert box.closed
    assert isinstance(box.error, errors.Exhausted)
    assert grpc_status(box.error) == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "16 messages were waiting" in box.error.message
    assert asyncio.run(_drain(box)) == []  # the backlog is dropped: the close does not wait
