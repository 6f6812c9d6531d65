"""A replay downloaded by id: from a referee (gRPC) or a web server (HTTP), for ``kozel replay
fetch`` and ``kozel analyze --server``."""

from __future__ import annotations

import re
import urllib.error
import urllib.request
from collections.abc import Callable

REPLAY_ID = re.compile(r"^[0-9a-f]{8,64}$")


def _fetch_http(base: str, replay_id: str) -> bytes:
    url = f"{base.rstrip('/')}/api/matches/{replay_id}/replay.kzr"
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.read()
    except urllib.error.HTTPError as exc:
        raise LookupError(f"{exc.code} {exc.reason}") from None


def _fetch_grpc(address: str, replay_id: str) -> bytes:
    import grpc

    from kozel.v1 import ladder_pb2, ladder_pb2_grpc

    with grpc.insecure_channel(address) as channel:
        stub = ladder_pb2_grpc.LadderServiceStub(channel)
        try:
            return b"".join(
                m.chunk
                for m in stub.DownloadReplay(
                    ladder_pb2.DownloadReplayRequest(replay_id=replay_id), timeout=60
                )
            )
        except grpc.RpcError as exc:
            raise LookupError(f"{exc.code().name}: {exc.details()}") from None


def fetch_for(server: str) -> Callable[[str, str], bytes]:
    """The replay fetcher for ``server``: a web server's URL, else a referee's gRPC address."""
    return _fetch_http if re.match(r"^https?://", server) else _fetch_grpc
