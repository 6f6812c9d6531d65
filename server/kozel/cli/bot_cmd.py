"""``kozel bot NAME --server ADDR``: run a house bot as a real remote client."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from kozel.cli.tls import add_tls_args, channel_security


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bot", help="run a house bot against a referee")
    p.add_argument("kind", help="which house bot: random, greedy, ismcts or ismcts-fast")
    p.add_argument("--server", required=True, help="referee address host:port")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--table", help="join this table")
    where.add_argument("--queue", metavar="PRESET", help="queue for matches of this preset")
    where.add_argument("--ladder", help="play rated matches on this ladder (needs --token)")
    p.add_argument("--players", type=int, default=2, help="player count when queueing")
    p.add_argument("--name", help="display name (default: the kind)")
    p.add_argument(
        "--token",
        default=os.environ.get("KOZEL_BOT_TOKEN", ""),
        help="ladder credential (default: $KOZEL_BOT_TOKEN, which keeps it out of ps)",
    )
    p.add_argument("--matches", type=int, default=None, help="leave after this many matches")
    p.add_argument("--max-matches", type=int, default=1, help="matches played at once")
    add_tls_args(p)
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_bot)


def cmd_bot(args: argparse.Namespace) -> int:
    from kozel.sdk import HOUSE_BOTS, run_bot  # the SDK loads grpc: only when needed

    if args.kind not in HOUSE_BOTS:
        print(f"unknown house bot {args.kind!r}; choose from {', '.join(sorted(HOUSE_BOTS))}")
        return 2
    try:
        creds, options = channel_security(args)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}")
        return 2
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO)
    import grpc

    try:
        ends = run_bot(
            HOUSE_BOTS[args.kind],
            args.server,
            name=args.name or args.kind,
            token=args.token,
            join_table=args.table,
            join_queue=(args.queue, args.players) if args.queue else None,
            join_ladder=args.ladder,
            matches=args.matches,
            max_matches=args.max_matches,
            credentials=creds,
            channel_options=options,
        )
    except grpc.aio.AioRpcError as exc:
        details = exc.details() or ""
        if exc.code() == grpc.StatusCode.UNAVAILABLE:
            details = f"no referee reachable at {args.server}"
        print(f"error: {exc.code().name}: {details}", file=sys.stderr)
        return 1
    except ConnectionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if not args.quiet:
        for end in ends:
            print(f"match {end.match_id}: replay {end.replay_id}")
    return 0
