"""``kozel replay html|fetch``: a replay as one self-contained HTML file, and a replay
downloaded by id from a referee (gRPC) or a web server (HTTP)."""

from __future__ import annotations

import argparse
import re
import sys
import urllib.error
import urllib.request
from pathlib import Path

from kozel.cli.limit_args import add_limit_flag, limits_of

REPLAY_ID = re.compile(r"^[0-9a-f]{8,64}$")


def add_subparsers(rsub: argparse._SubParsersAction) -> None:
    h = rsub.add_parser(
        "html",
        help="write one self-contained HTML file (viewer + match) "
        "that works from disk with no network",
    )
    h.add_argument("file", type=Path)
    h.add_argument("-o", "--output", type=Path, help="the HTML file (default: FILE with .html)")
    add_limit_flag(h)
    h.set_defaults(func=cmd_html)
    f = rsub.add_parser("fetch", help="download a replay by id")
    f.add_argument("replay_id")
    f.add_argument(
        "--server",
        required=True,
        help="a referee's gRPC address host:port, or a web server's http(s):// URL",
    )
    f.add_argument("-o", "--output", type=Path, help="where to write it (default: ID.kzr)")
    add_limit_flag(f)
    f.set_defaults(func=cmd_fetch)


def cmd_html(args: argparse.Namespace) -> int:
    from kozel.server.replay.file import ReplayError, read_replay
    from kozel.web.html_export import replay_html

    limits = limits_of(args)
    if limits is None:
        return 2
    try:
        replay = read_replay(args.file, limits)
    except (OSError, ReplayError) as exc:
        print(f"{args.file}: cannot read the replay: {exc}", file=sys.stderr)
        return 2
    out = args.output or args.file.with_suffix(".html")
    out.write_text(replay_html(replay), encoding="utf-8")
    print(f"wrote {out} (open it in a browser: file://{out.resolve()})")
    return 0


def _too_big(limit: int) -> LookupError:
    return LookupError(f"the server sent more than {limit} bytes (limits.replay_max_bytes)")


def _fetch_http(base: str, replay_id: str, limit: int) -> bytes:
    url = f"{base.rstrip('/')}/api/matches/{replay_id}/replay.kzr"
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            data: bytes = r.read(limit + 1)
    except urllib.error.HTTPError as exc:
        raise LookupError(f"{exc.code} {exc.reason}") from None
    if len(data) > limit:
        raise _too_big(limit)
    return data


def _fetch_grpc(address: str, replay_id: str, limit: int) -> bytes:
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


def cmd_fetch(args: argparse.Namespace) -> int:
    from kozel.server.replay.file import ReplayError, decode_replay

    if not REPLAY_ID.match(args.replay_id):
        print("error: a replay id is 8 to 64 lowercase hex digits", file=sys.stderr)
        return 2
    limits = limits_of(args)
    if limits is None:
        return 2
    fetch = _fetch_http if re.match(r"^https?://", args.server) else _fetch_grpc
    try:
        data = fetch(args.server, args.replay_id, limits.max_bytes)
        replay = decode_replay(data, limits)
    except (LookupError, OSError, ReplayError) as exc:
        print(f"error: cannot fetch replay {args.replay_id}: {exc}", file=sys.stderr)
        return 1
    out = args.output or Path(f"{args.replay_id}.kzr")
    out.write_bytes(data)
    print(f"wrote {out} ({len(data)} bytes, {len(replay.deals)} deals)")
    return 0
