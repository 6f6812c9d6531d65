"""The baseline of ``kozel bench referee``: a bare grpc.aio bidirectional echo with the
referee's message sizes and shape.

``python -m kozel.tools.bench_echo serve LISTEN REPLIES`` answers every ``PlayRequest`` on a
stream with a real decision request and ``REPLIES - 1`` real play events (1 for the bare echo;
about 5 mimics the referee, which sends events besides each request);
``python -m kozel.tools.bench_echo client ADDRESS PAIRS REPLIES`` opens ``2 * PAIRS`` streams,
one connection each, and keeps one exchange in flight per pair, alternating between the pair's
two streams as a two-player match alternates between its seats. Both sides parse and serialize
the real message types, as the referee and its bots must; nothing else is done. The client
speaks the JSON lines of :mod:`kozel.tools.bench_common`.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc

from kozel.tools.bench_common import (
    CHANNEL_OPTIONS,
    child_main,
    command_loop,
    emit,
    sample_messages,
)
from kozel.v1 import referee_pb2 as rpb

METHOD = "/kozel.bench.Echo/Play"


async def serve(listen: str, replies: int) -> None:
    """Answer each request of every stream with ``replies`` sample messages."""
    sample = sample_messages()
    request = rpb.PlayResponse.FromString(sample.request)
    events = [rpb.PlayResponse.FromString(sample.event)] * (replies - 1)

    async def play(
        requests: AsyncIterator[rpb.PlayRequest], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[rpb.PlayResponse]:
        async for _ in requests:
            yield request
            for event in events:
                yield event

    handler = grpc.method_handlers_generic_handler(
        "kozel.bench.Echo",
        {
            "Play": grpc.stream_stream_rpc_method_handler(
                play,
                request_deserializer=rpb.PlayRequest.FromString,
                response_serializer=rpb.PlayResponse.SerializeToString,
            )
        },
    )
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port(listen)
    if port == 0:
        raise OSError(f"cannot listen on {listen}")
    await server.start()
    print(f"echo listening on 127.0.0.1:{port}", flush=True)
    await server.wait_for_termination()


class EchoClient:
    """``pairs`` pairs of streams, one exchange (a request, ``replies`` answers) in flight per
    pair."""

    def __init__(self, address: str, pairs: int, replies: int) -> None:
        self.address = address
        self.pairs = pairs
        self.replies = replies
        self.answer = rpb.PlayRequest.FromString(sample_messages().answer)
        self.round_trips = 0
        self.mark = 0
        self.window_start = time.perf_counter()
        self.latencies: list[float] = []
        self.quitting = False
        self.calls: list[Any] = []

    async def main(self) -> None:
        channels = [
            grpc.aio.insecure_channel(self.address, options=CHANNEL_OPTIONS)
            for _ in range(2 * self.pairs)
        ]
        calls = [
            ch.stream_stream(
                METHOD,
                request_serializer=rpb.PlayRequest.SerializeToString,
                response_deserializer=rpb.PlayResponse.FromString,
            )()
            for ch in channels
        ]
        self.calls = calls
        tasks = [
            asyncio.create_task(self.pair(calls[2 * i], calls[2 * i + 1]))
            for i in range(self.pairs)
        ]
        emit("ready", streams=len(calls))
        await command_loop({"start": self.start, "stop": self.stop, "quit": self.quit})
        for call in calls:
            call.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for ch in channels:
            await ch.close()

    async def start(self) -> dict[str, Any]:
        self.mark = self.round_trips
        self.latencies.clear()
        self.window_start = time.perf_counter()
        return {}

    async def stop(self) -> dict[str, Any]:
        from kozel.tools.bench_common import percentile

        seconds = time.perf_counter() - self.window_start
        return {
            "seconds": seconds,
            "round_trips": self.round_trips - self.mark,
            "rtt_p50_us": percentile(self.latencies, 0.5) * 1e6,
            "rtt_p99_us": percentile(self.latencies, 0.99) * 1e6,
        }

    async def quit(self) -> dict[str, Any]:
        self.quitting = True
        return {"round_trips": self.round_trips}

    async def pair(self, a: Any, b: Any) -> None:
        perf = time.perf_counter
        answer = self.answer
        latencies = self.latencies
        replies = range(self.replies)
        try:
            while not self.quitting:
                for call in (a, b):
                    sent = perf()
                    await call.write(answer)
                    for _ in replies:
                        if await call.read() is grpc.aio.EOF:
                            return
                    latencies.append(perf() - sent)
                    self.round_trips += 1
        except (grpc.aio.AioRpcError, asyncio.CancelledError):
            if not self.quitting:
                raise


def main() -> None:
    if sys.argv[1] == "serve":
        asyncio.run(serve(sys.argv[2], int(sys.argv[3])))
    else:
        address, pairs, replies = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        child_main(lambda: EchoClient(address, pairs, replies).main())


if __name__ == "__main__":
    main()
