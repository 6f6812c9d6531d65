"""A deliberately broken bot for the conformance tests: it answers one past the last legal
index, never retries after a rejection, and does not resume a dropped stream."""

from __future__ import annotations

import argparse
import asyncio

import grpc

from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import referee_pb2_grpc


async def main(server: str, table: str) -> None:
    out: asyncio.Queue[rpb.PlayRequest] = asyncio.Queue()
    out.put_nowait(
        rpb.PlayRequest(
            hello=rpb.Hello(
                protocol_version=1, bot_name="broken", join_table=rpb.JoinTable(table_id=table)
            )
        )
    )

    async def requests():
        while True:
            yield await out.get()

    async with grpc.aio.insecure_channel(server) as channel:
        call = referee_pb2_grpc.RefereeServiceStub(channel).Play(requests())
        try:
            async for msg in call:
                if msg.WhichOneof("message") == "decision":
                    d = msg.decision
                    out.put_nowait(
                        rpb.PlayRequest(
                            action=rpb.ActionReply(
                                match_id=d.match_id,
                                request_id=d.request_id,
                                legal_index=len(d.legal_actions),
                            )
                        )
                    )
        except grpc.aio.AioRpcError:
            pass  # no resume


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--server", required=True)
    p.add_argument("--table", required=True)
    args = p.parse_args()
    asyncio.run(main(args.server, args.table))
