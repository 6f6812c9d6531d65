"""A scriptable bot written directly against the generated stubs, for hostile and edge-case
tests (the SDK hides exactly the misbehaviour these tests need)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import grpc

from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import referee_pb2_grpc

Answer = Callable[["RawBot", rpb.DecisionRequest], Awaitable[list[rpb.ActionReply] | None]]


def reply(req: rpb.DecisionRequest, index: int) -> rpb.ActionReply:
    return rpb.ActionReply(match_id=req.match_id, request_id=req.request_id, legal_index=index)


async def random_answer(bot: RawBot, req: rpb.DecisionRequest) -> list[rpb.ActionReply]:
    return [reply(req, bot.rng.randrange(len(req.legal_actions)))]


@dataclass
class RawBot:
    """Plays over one stream; ``answer`` decides what to send for each request."""

    address: str
    name: str
    hello: rpb.Hello | None = None
    answer: Answer = random_answer
    seed: int = 0
    received: list[rpb.PlayResponse] = field(default_factory=list)
    status: grpc.StatusCode | None = None
    details: str = ""
    resume_token: str = ""
    one_match: bool = True
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self._out: asyncio.Queue[rpb.PlayRequest | None] = asyncio.Queue()

    @property
    def seat(self) -> int:
        return self.of("match_start")[0].seat

    def of(self, kind: str) -> list:
        """Received messages of one kind (welcome, decision, rejection, event, match_end ...)."""
        return [getattr(m, kind) for m in self.received if m.WhichOneof("message") == kind]

    def send(self, msg: rpb.PlayRequest | None) -> None:
        self._out.put_nowait(msg)

    async def _requests(self) -> AsyncIterator[rpb.PlayRequest]:
        while True:
            msg = await self._out.get()
            if msg is None:
                return
            yield msg

    async def run(
        self,
        *,
        stop_after: Callable[[RawBot, rpb.PlayResponse], bool] | None = None,
        send_hello: bool = True,
    ) -> None:
        """Play until the stream ends, or until ``stop_after`` says so (then drop it)."""
        self._out = asyncio.Queue()
        if send_hello:
            assert self.hello is not None, "a bot that sends its Hello has one"
            hello = rpb.Hello()
            hello.CopyFrom(self.hello)
            if self.resume_token:
                hello.resume_token = self.resume_token
            self.send(rpb.PlayRequest(hello=hello))
        async with grpc.aio.insecure_channel(self.address) as channel:
            call = referee_pb2_grpc.RefereeServiceStub(channel).Play(self._requests())
            try:
                async for msg in call:
                    self.received.append(msg)
                    which = msg.WhichOneof("message")
                    if which == "welcome":
                        self.resume_token = msg.welcome.resume_token
                    elif which == "decision":
                        for r in await self.answer(self, msg.decision) or []:
                            self.send(rpb.PlayRequest(action=r))
                    elif which == "rejection" and msg.rejection.retry_allowed:
                        last = self.of("decision")[-1]
                        if last.request_id == msg.rejection.request_id:
                            for r in await self.answer(self, last) or []:
                                self.send(rpb.PlayRequest(action=r))
                    elif which in ("match_start", "match_end") and self.one_match:
                        self.send(rpb.PlayRequest(leave=rpb.Leave()))  # no further match
                    if stop_after is not None and stop_after(self, msg):
                        call.cancel()
                        break
            except grpc.aio.AioRpcError as exc:
                self.status, self.details = exc.code(), exc.details() or ""
            finally:
                self.send(None)


def table_hello(name: str, table_id: str) -> rpb.Hello:
    return rpb.Hello(protocol_version=1, bot_name=name, join_table=rpb.JoinTable(table_id=table_id))


async def create_table(
    address: str,
    preset: str,
    players: int,
    *,
    house: Sequence[str] = (),
    options: dict | None = None,
    clock: pb.TimeControl | None = None,
) -> str:
    from kozel.core.convert import dict_to_struct

    ruleset = pb.Ruleset(preset=preset)
    if options:
        ruleset.options.CopyFrom(dict_to_struct(options))
    async with grpc.aio.insecure_channel(address) as channel:
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        resp = await stub.CreateTable(
            rpb.CreateTableRequest(
                ruleset=ruleset, players=players, house_bots=list(house), time_control=clock
            )
        )
        return resp.table_id


async def wait_table(address: str, table_id: str, timeout: float = 60) -> rpb.WaitTableResponse:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = referee_pb2_grpc.RefereeServiceStub(channel)
        return await stub.WaitTable(rpb.WaitTableRequest(table_id=table_id), timeout=timeout)
