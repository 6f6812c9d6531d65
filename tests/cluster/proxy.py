"""A TCP proxy standing in for the shared address of a referee cluster (a Kubernetes Service):
each connection goes to a live backend picked at random; a backend that refuses is skipped."""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading


class Proxy:
    """Listens on 127.0.0.1 (``address``) in a thread of its own; ``backends`` may change."""

    def __init__(self, backends: list[str], seed: int = 1) -> None:
        self.backends = list(backends)
        self.rng = random.Random(seed)
        self.connections = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> Proxy:
        self._thread.start()
        assert self._ready.wait(30), "the proxy did not start"
        return self

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._handle, "127.0.0.1", 0)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        order = list(self.backends)
        self.rng.shuffle(order)
        for backend in order:
            host, _, port = backend.rpartition(":")
            try:
                up_reader, up_writer = await asyncio.open_connection(host, int(port))
            except OSError:
                continue
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
            return
        writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()
