"""``kozel web``: the web pages and HTTP API on their own, over a ladder store and a replay
folder (on Kubernetes they scale apart from the referees)."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "web",
        help="serve the web pages and HTTP API on their own",
        description="Serve the read-only web pages and HTTP API from a ladder "
        "store and a replay folder, without a referee. Live "
        "matches are followed through --referee (gRPC WatchMatch).",
    )
    p.add_argument(
        "--db",
        default="",
        help="the ladder store's database URL "
        "(sqlite:///path/kozel.db or postgresql+psycopg://...); none: replays only",
    )
    p.add_argument(
        "--replays",
        type=Path,
        default=Path("replays"),
        help="the referees' replay folder (default ./replays); a replay not in it "
        "is downloaded from --referee",
    )
    p.add_argument("--listen", default="127.0.0.1:8080", help="host:port (default %(default)s)")
    p.add_argument(
        "--referee", default="", help="a referee's gRPC address, to follow its live matches"
    )
    p.add_argument(
        "--ladders",
        type=Path,
        help="the referees' ladder file: a duplicate "
        "ladder's first halves stay sealed until their twin is on record",
    )
    p.add_argument("--listen-fd", type=int, help=argparse.SUPPRESS)  # a socket bound by kozel serve
    p.add_argument(
        "--limit",
        action="append",
        default=[],
        metavar="KEY=N",
        help="override a limit (docs/web.md), e.g. --limit max_page=100",
    )
    p.add_argument(
        "--cpu-share",
        type=float,
        default=0.0,
        metavar="X",
        help="spend at most X of one core on average; requests wait their turn beyond it "
        "(default 0: no cap; kozel serve gives its web child web.cpu_share)",
    )
    p.set_defaults(func=cmd_web)


def cmd_web(args: argparse.Namespace) -> int:
    from kozel.ladder.config import ConfigError, load_ladders

    duplicate: frozenset[str] = frozenset()
    if args.ladders is not None:
        try:
            duplicate = frozenset(s.name for s in load_ladders(args.ladders) if s.duplicate)
        except ConfigError as exc:
            print(f"error: {exc}")
            return 2
    from kozel.web.api import WebLimits

    try:
        defaults = WebLimits()
        limits = WebLimits(
            **{
                k: type(getattr(defaults, k))(v)
                for k, _, v in (x.partition("=") for x in args.limit)
            }
        )
    except (AttributeError, TypeError, ValueError) as exc:
        print(
            f"error: --limit KEY=N with KEY one of {', '.join(WebLimits.__dataclass_fields__)}"
            f" ({exc})"
        )
        return 2
    if not 0 <= args.cpu_share <= 64:  # also refuses nan
        print(f"error: --cpu-share must be between 0 and 64 (cores), not {args.cpu_share}")
        return 2
    try:
        return asyncio.run(_run(args, duplicate, limits))
    except OSError as exc:
        print(f"error: {exc}")
        return 1


async def _run(args: argparse.Namespace, duplicate: frozenset[str], limits) -> int:
    from kozel.server.replay.archive import FolderArchive, StoreArchive
    from kozel.web.app import WebServer, create_app
    from kozel.web.readonly import ReadOnlyStore
    from kozel.web.sources import StandaloneSources

    store = ReadOnlyStore(args.db) if args.db else None
    # With PostgreSQL the store has every ladder replay: a web pod needs no replay volume.
    archive = (
        StoreArchive(args.replays, store)
        if store is not None and store.keeps_replays
        else FolderArchive(args.replays)
    )
    sources = StandaloneSources(store, archive, referee=args.referee, duplicate_ladders=duplicate)
    from kozel.web.ops import OPS_TOKEN_ENV

    app = create_app(
        sources,
        limits,
        cpu_share=args.cpu_share,
        ops_token_sha256=os.environ.get(OPS_TOKEN_ENV, "").strip().lower(),
    )
    server = WebServer(app, args.listen)
    sock = None
    if args.listen_fd is not None:
        import socket

        sock = socket.socket(fileno=args.listen_fd)
    port = await server.start(sock)
    host = args.listen.rsplit(":", 1)[0]
    print(f"web pages on http://{host}:{port}/", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop()
    await sources.close()
    if store is not None:
        store.close()
    return 0
