"""The replay file (``.kzr``): one gzip-compressed ``Replay`` message, written atomically, and
read within bounds (:mod:`kozel.server.replay.limits`): a file that would cost more than they
allow is refused before it is decompressed or parsed past them."""

from __future__ import annotations

import contextlib
import gzip
import os
import tempfile
import zlib
from pathlib import Path

from google.protobuf.message import DecodeError

from kozel.server.replay.limits import ReplayLimits
from kozel.v1 import replay_pb2

FORMAT_VERSION = 1
"""The replay format version this package writes and reads."""


class ReplayError(ValueError):
    """A file or byte string that is not a readable replay."""


class ReplayTooLarge(ReplayError):
    """A replay past one of the reader's limits (named in the message, with its key)."""


def encode_replay(replay: replay_pb2.Replay) -> bytes:
    """The file content of a replay: the serialized message, gzip-compressed."""
    return gzip.compress(replay.SerializeToString(deterministic=True), mtime=0)


def write_replay(path: Path | str, replay: replay_pb2.Replay) -> int:
    """Write a replay file atomically (creating its folder); returns the bytes written."""
    path = Path(path)
    folder = path.parent
    folder.mkdir(parents=True, exist_ok=True)
    data = encode_replay(replay)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o644)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(folder)
    return len(data)


def _fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (where the platform allows it)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def read_replay(path: Path | str, limits: ReplayLimits | None = None) -> replay_pb2.Replay:
    """Read a replay file; raises ``OSError`` if unreadable, :class:`ReplayError` if no replay
    or past ``limits`` (the defaults when None)."""
    limits = limits or ReplayLimits()
    with Path(path).open("rb") as f:
        data = f.read(limits.max_bytes + 1)
    if len(data) > limits.max_bytes:
        raise ReplayTooLarge(
            f"the file is larger than {limits.max_bytes} bytes (limits.replay_max_bytes)"
        )
    return decode_replay(data, limits)


def decode_replay(data: bytes, limits: ReplayLimits | None = None) -> replay_pb2.Replay:
    """A replay from file content; raises :class:`ReplayError` for anything else, and
    :class:`ReplayTooLarge` past ``limits`` (the defaults when None)."""
    limits = limits or ReplayLimits()
    raw = _gunzip(data, limits.max_bytes)
    replay = replay_pb2.Replay()
    try:
        replay.ParseFromString(raw)
    except DecodeError as exc:
        raise ReplayError(f"not a replay: the content is not a Replay message ({exc})") from None
    if replay.format_version == 0:
        raise ReplayError("not a replay: the message has no format_version")
    if replay.format_version != FORMAT_VERSION:
        raise ReplayError(
            f"unknown replay format_version {replay.format_version}; "
            f"this reader knows version {FORMAT_VERSION}"
        )
    _check_counts(replay, len(raw), limits)
    return replay


def _gunzip(data: bytes, limit: int) -> bytes:
    """The content of every gzip member of ``data``, refused once it passes ``limit`` bytes
    (never decompressed past it)."""
    out = bytearray()
    rest = data
    try:
        while True:
            member = zlib.decompressobj(wbits=31)  # gzip framing
            out += member.decompress(rest, limit + 1 - len(out))
            if len(out) > limit:
                raise ReplayTooLarge(
                    f"its content is larger than {limit} bytes once decompressed "
                    "(limits.replay_max_bytes)"
                )
            if not member.eof:
                raise ReplayError("not a replay: not gzip-compressed (the data ends early)")
            rest = member.unused_data
            if not rest:
                return bytes(out)
    except zlib.error as exc:
        raise ReplayError(f"not a replay: not gzip-compressed ({exc})") from None


def _check_counts(replay: replay_pb2.Replay, size: int, limits: ReplayLimits) -> None:
    deals = len(replay.deals)
    if deals > limits.max_deals:
        raise ReplayTooLarge(
            f"it has {deals} deals; at most {limits.max_deals} are read (limits.replay_max_deals)"
        )
    steps = sum(len(d.steps) for d in replay.deals)
    if steps > limits.max_steps:
        raise ReplayTooLarge(
            f"it has {steps} steps; at most {limits.max_steps} are read (limits.replay_max_steps)"
        )
    replay.DiscardUnknownFields()
    unknown = size - replay.ByteSize()  # also bytes of a field repeated where one is kept
    if unknown > limits.max_unknown_bytes:
        raise ReplayTooLarge(
            f"it holds {unknown} bytes this reader does not know; at most "
            f"{limits.max_unknown_bytes} are read (limits.replay_max_unknown_bytes)"
        )
