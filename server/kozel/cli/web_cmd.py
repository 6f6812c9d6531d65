"""``kozel web``: the web pages and HTTP API on their own, over a ladder store and a replay
folder (on Kubernetes they scale apart from the referees)."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kozel.web.api import WebLimits


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
        "(sqlite:///path/kozel.db or postgresql+psycopg://...); none: replays only. A URL "
        "with a password is better given in KOZEL_WEB_DATABASE_URL: any local user can read "
        "a command line",
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
    _add_ladder_args(p)
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


def _add_ladder_args(p: argparse.ArgumentParser) -> None:
    """What the web must know of the referees' ladders and of its clients' proxies."""
    p.add_argument(
        "--ladders",
        type=Path,
        help="the referees' ladder file: a duplicate "
        "ladder's first halves stay sealed until their twin is on record",
    )
    p.add_argument(
        "--duplicate-ladder",
        action="append",
        default=[],
        metavar="NAME",
        help="a duplicate ladder (as --ladders names them; kozel serve gives its web child "
        "its own): its first halves stay sealed until their twin is on record",
    )
    p.add_argument(
        "--trusted-proxies",
        default="",
        metavar="ADDRS",
        help="proxies (addresses or networks, comma-separated) whose X-Forwarded-For names "
        "the client: per-address limits then count clients, not the proxy (default: none)",
    )


def cmd_web(args: argparse.Namespace) -> int:
    from kozel.ladder.config import ConfigError, load_ladders

    duplicate = frozenset(args.duplicate_ladder)
    if args.ladders is not None:
        try:
            duplicate |= {s.name for s in load_ladders(args.ladders) if s.duplicate}
        except ConfigError as exc:
            print(f"error: {exc}")
            return 2
    from pydantic import ValidationError

    from kozel.server.replay.limits import ReplayLimits, parse_pairs
    from kozel.web.api import WebLimits

    try:
        pairs = parse_pairs(args.limit)
        replay_keys = ReplayLimits.keys()
        limits = _web_limits([(k, v) for k, v in pairs if k not in replay_keys])
        replay_limits = ReplayLimits().with_pairs((k, v) for k, v in pairs if k in replay_keys)
    except ValidationError as exc:  # a known key out of its range
        error = exc.errors()[0]
        print(f"error: --limit {'.'.join(map(str, error['loc']))}: {error['msg'].lower()}")
        return 2
    except (AttributeError, TypeError, ValueError) as exc:
        keys = [*WebLimits.model_fields, *ReplayLimits.keys()]
        print(f"error: --limit KEY=N with KEY one of {', '.join(keys)} ({exc})")
        return 2
    if not 0 <= args.cpu_share <= 64:  # also refuses nan
        print(f"error: --cpu-share must be between 0 and 64 (cores), not {args.cpu_share}")
        return 2
    try:
        return asyncio.run(_run(args, duplicate, limits, replay_limits))
    except OSError as exc:
        print(f"error: {exc}")
        return 1


async def _run(args: argparse.Namespace, duplicate: frozenset[str], limits, replay_limits) -> int:
    from kozel.server.replay.archive import FolderArchive, StoreArchive
    from kozel.web.app import create_app
    from kozel.web.readonly import DATABASE_URL_ENV, ReadOnlyStore
    from kozel.web.serving import WebServer
    from kozel.web.sources import StandaloneSources

    url = args.db or os.environ.get(DATABASE_URL_ENV, "")
    store = ReadOnlyStore(url) if url else None
    # With PostgreSQL the store has every ladder replay: a web pod needs no replay volume.
    archive = (
        StoreArchive(args.replays, store, replay_limits)
        if store is not None and store.keeps_replays
        else FolderArchive(args.replays, replay_limits)
    )
    from kozel.server.peers import PROXY_KEY_ENV

    sources = StandaloneSources(
        store,
        archive,
        referee=args.referee,
        duplicate_ladders=duplicate,
        proxy_key=os.environ.get(PROXY_KEY_ENV, ""),
    )
    from kozel.web.ops import OPS_TOKEN_ENV

    app = create_app(
        sources,
        limits,
        cpu_share=args.cpu_share,
        ops_token_sha256=os.environ.get(OPS_TOKEN_ENV, "").strip().lower(),
    )
    from kozel.web.conns import quiet_repeats

    quiet_repeats(asyncio.get_running_loop())
    server = WebServer(app, args.listen, limits, args.trusted_proxies)
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


def _web_limits(pairs: list[tuple[str, int | float]]) -> WebLimits:
    """The web's limits with ``pairs`` applied, each of its field's type (a share may be a
    decimal; a count must be whole)."""
    from kozel.web.api import WebLimits

    defaults, values = WebLimits(), {}
    for key, value in pairs:
        kind = type(getattr(defaults, key))  # AttributeError: not a web limit
        if kind is int and value != int(value):
            raise ValueError(f"{key} must be a whole number, not {value}")
        values[key] = kind(value)
    return WebLimits(**values)
