"""A TCP proxy that understands just enough HTTP/2 to misbehave on a real gRPC client's behalf.

A real client (grpcio) talks to the referee through :class:`TamperProxy`, which can lie about
the length of one gRPC message (a truncated message), or go silent in both directions while
keeping both sockets open (a half-open peer). It records the frames the server sends, so a test
can read the status the server ended a stream with even when the client never reads it.
"""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass, field

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM = 0x0, 0x1, 0x3
END_STREAM = 0x1


@dataclass
class Frame:
    """An HTTP/2 frame header (and payload) as it passed the proxy."""

    type: int
    flags: int
    stream: int
    payload: bytes


@dataclass
class _Stream:
    """Where one stream's client-to-server gRPC messages are: prefix bytes or payload bytes."""

    prefix: bytearray = field(default_factory=bytearray)
    remaining: int = 0
    messages: int = 0


class TamperProxy:
    """Forwards ``127.0.0.1:port`` to ``target``; every connection gets the same tampering.

    ``inflate=(n, extra)`` adds ``extra`` to the declared length of the n-th gRPC message (from
    1) of every client stream. :meth:`blackhole` stops forwarding in both directions.
    """

    def __init__(self, target: str, *, inflate: tuple[int, int] | None = None) -> None:
        self.host, port = target.rsplit(":", 1)
        self.target_port = int(port)
        self.inflate = inflate
        self.port = 0
        self.connections: list[list[Frame]] = []  # frames from the server, per connection
        self.streams_opened = 0  # request HEADERS frames forwarded to the server
        self._silent = False
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: list[asyncio.StreamWriter] = []
        self.server_gone = asyncio.Event()  # the server closed a connection

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    async def __aenter__(self) -> TamperProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for w in self._writers:
            w.close()
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def blackhole(self) -> None:
        """From now on nothing is forwarded either way; sockets stay open (a dead peer)."""
        self._silent = True

    def trailers(self, connection: int = 0, stream: int = 1) -> dict[str, str] | None:
        """The trailers the server ended ``stream`` with (``grpc-status``, ``grpc-message``);
        ``{"rst": ""}`` for a reset stream, None while it is open."""
        table = _HpackTable()
        for f in self.connections[connection] if connection < len(self.connections) else ():
            if f.type == HEADERS:
                fields = table.decode(f.payload)
                if f.stream == stream and f.flags & END_STREAM:
                    return fields
            elif f.type == RST_STREAM and f.stream == stream:
                return {"rst": ""}
        return None

    async def _accept(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        s_reader, s_writer = await asyncio.open_connection(self.host, self.target_port)
        self._writers += [c_writer, s_writer]
        frames: list[Frame] = []
        self.connections.append(frames)
        for coro in (
            self._client_to_server(c_reader, s_writer),
            self._server_to_client(s_reader, c_writer, frames),
        ):
            task = asyncio.create_task(coro)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _client_to_server(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        streams: dict[int, _Stream] = {}
        try:
            await self._forward(writer, await reader.readexactly(len(PREFACE)))
            while True:
                frame = await _read_frame(reader)
                payload = bytearray(frame.payload)
                if frame.type == DATA and self.inflate is not None:
                    self._rewrite(streams.setdefault(frame.stream, _Stream()), payload)
                if frame.type == HEADERS and not self._silent:
                    self.streams_opened += 1
                await self._forward(writer, _header(frame, len(payload)) + payload)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def _server_to_client(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, frames: list[Frame]
    ) -> None:
        try:
            while True:
                frame = await _read_frame(reader)
                frames.append(frame)
                await self._forward(writer, _header(frame, len(frame.payload)) + frame.payload)
        except (asyncio.IncompleteReadError, ConnectionError):
            self.server_gone.set()
            if not self._silent:
                writer.close()

    async def _forward(self, writer: asyncio.StreamWriter, data: bytes) -> None:
        if not self._silent:
            writer.write(data)
            await writer.drain()

    def _rewrite(self, st: _Stream, payload: bytearray) -> None:
        """Walk the gRPC messages in one DATA payload; inflate the chosen one's length."""
        assert self.inflate is not None
        target, extra = self.inflate
        i = 0
        while i < len(payload):
            if st.remaining:
                take = min(st.remaining, len(payload) - i)
                st.remaining -= take
                i += take
                continue
            st.prefix.append(payload[i])
            i += 1
            if len(st.prefix) < 5:
                continue
            length = struct.unpack(">I", bytes(st.prefix[1:]))[0]
            st.prefix.clear()
            st.messages += 1
            if st.messages == target:
                assert i >= 4, "the length prefix was split across DATA frames"
                payload[i - 4 : i] = struct.pack(">I", length + extra)
            st.remaining = length


async def _read_frame(reader: asyncio.StreamReader) -> Frame:
    head = await reader.readexactly(9)
    length = int.from_bytes(head[:3], "big")
    stream = int.from_bytes(head[5:9], "big") & 0x7FFF_FFFF
    return Frame(head[3], head[4], stream, await reader.readexactly(length))


def _header(frame: Frame, length: int) -> bytes:
    return (
        length.to_bytes(3, "big")
        + bytes([frame.type, frame.flags])
        + frame.stream.to_bytes(4, "big")
    )


class _HpackTable:
    """Just enough HPACK (RFC 7541) to read gRPC trailers: grpc-core writes these headers as
    literals with plain strings. Static-table names are not needed and stay numbered;
    Huffman-coded strings are not decoded."""

    def __init__(self) -> None:
        self.dynamic: list[tuple[str, str]] = []  # newest first
        self.limit = 4096

    def decode(self, block: bytes) -> dict[str, str]:
        out: dict[str, str] = {}
        i = 0
        while i < len(block):
            b = block[i]
            if b & 0x80:  # indexed field
                index, i = _integer(block, i, 7)
                name, value = self._entry(index)
            elif b & 0xE0 == 0x20:  # dynamic table size update
                self.limit, i = _integer(block, i, 5)
                self._evict()
                continue
            else:  # literal: with incremental indexing (01), without or never indexed (000x)
                indexing = bool(b & 0x40)
                index, i = _integer(block, i, 6 if indexing else 4)
                if index:
                    name = self._entry(index)[0]
                else:
                    name, i = _string(block, i)
                value, i = _string(block, i)
                if indexing:
                    self.dynamic.insert(0, (name, value))
                    self._evict()
            out[name] = value
        return out

    def _entry(self, index: int) -> tuple[str, str]:
        if index <= 61:
            return f"static:{index}", ""
        return self.dynamic[index - 62]

    def _evict(self) -> None:
        while sum(len(n) + len(v) + 32 for n, v in self.dynamic) > self.limit:
            self.dynamic.pop()


def _integer(block: bytes, i: int, prefix: int) -> tuple[int, int]:
    mask = (1 << prefix) - 1
    value = block[i] & mask
    i += 1
    if value < mask:
        return value, i
    shift = 0
    while True:
        b = block[i]
        i += 1
        value += (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def _string(block: bytes, i: int) -> tuple[str, int]:
    huffman = bool(block[i] & 0x80)
    length, i = _integer(block, i, 7)
    raw = block[i : i + length]
    return ("<huffman>" if huffman else raw.decode("latin-1")), i + length
