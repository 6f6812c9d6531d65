"""The replay file (``.kzr``): one gzip-compressed ``Replay`` message, written atomically."""

from __future__ import annotations

import contextlib
import gzip
import os
import tempfile
import zlib
from pathlib import Path

from google.protobuf.message import DecodeError

from kozel.v1 import replay_pb2

FORMAT_VERSION = 1
"""The replay format version this package writes and reads."""


class ReplayError(ValueError):
    """A file or byte string that is not a readable replay."""


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


def read_replay(path: Path | str) -> replay_pb2.Replay:
    """Read a replay file; raises ``OSError`` if unreadable, :class:`ReplayError` if no replay."""
    return decode_replay(Path(path).read_bytes())


def decode_replay(data: bytes) -> replay_pb2.Replay:
    """A replay from file content; raises :class:`ReplayError` for anything else."""
    try:
        raw = gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise ReplayError(f"not a replay: not gzip-compressed ({exc})") from None
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
    return replay
