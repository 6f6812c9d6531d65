"""A replay downloaded by id: from a referee (gRPC) or a web server (HTTP), for ``kozel replay
fetch`` and ``kozel analyze --server``; never more than a limit of bytes is read."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Callable

from kozel.server.replay.limits import ReplayLimits

REPLAY_ID = re.compile(r"^[0-9a-f]{8,64}$")
DEFAULT_LIMIT = ReplayLimits().max_bytes

Fetch = Callable[[str, str, int], bytes]


def _too_big(limit: int) -> LookupError:
    return LookupError(f"the server sent more than {limit} bytes (limits.replay_max_bytes)")


def _fetch_http(base: str, replay_id: str, limit: int = DEFAULT_LIMIT) -> bytes:
    url = f"{base.rstrip('/')}/api/matches/{replay_id}/replay.kzr"
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            data: bytes = r.read(limit + 1)
    except urllib.error.HTTPError as exc:
        raise LookupError(f"{exc.code} {exc.reason}") from None
    if len(data) > limit:
        raise _too_big(limit)
    return data


def _fetch_grpc(address: str, replay_id: str, limit: int = DEFAULT_LIMIT) -> bytes:
    import grpc

    from kozel.v1 import ladder_pb2, ladder_pb2_grpc

    with grpc.insecure_channel(address) as channel:
        stub = ladder_pb2_grpc.LadderServiceStub(channel)
        chunks, size = [], 0
        call = stub.DownloadReplay(
            ladder_pb2.DownloadReplayRequest(replay_id=replay_id), timeout=60
        )
        try:
            for m in call:
                size += len(m.chunk)
                if size > limit:
                    call.cancel()
                    raise _too_big(limit)
                chunks.append(m.chunk)
        except grpc.RpcError as exc:
            raise LookupError(f"{exc.code().name}: {exc.details()}") from None
        return b"".join(chunks)


def fetch_for(server: str) -> Fetch:
    """The replay fetcher for ``server``: a web server's URL, else a referee's gRPC address;
    call it with the server, the replay id and the most bytes to read."""
    return _fetch_http if re.match(r"^https?://", server) else _fetch_grpc
