"""``kozel bot NAME --server ADDR``: run a house bot as a real remote client;
``kozel bot --policy module:callable``: serve a policy trained on ``kozel.env``."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from kozel.cli.tls import add_tls_args, channel_security

if TYPE_CHECKING:
    from kozel.sdk.bot import Bot


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bot", help="run a house bot or a trained policy against a referee")
    p.add_argument("kind", nargs="?", help="which house bot: random, greedy, ismcts or ismcts-fast")
    p.add_argument(
        "--policy",
        metavar="MODULE:CALLABLE",
        help="instead of a house bot, play policy(observation, mask) -> action index, written "
        "against kozel.env's encoding (a module on the path, or file.py:callable)",
    )
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

    if (args.kind is None) == (args.policy is None):
        print("error: name a house bot or give --policy MODULE:CALLABLE (one of them)")
        return 2
    if args.policy is not None:
        factory = _policy_factory(args.policy)
        if factory is None:
            return 2
    elif args.kind not in HOUSE_BOTS:
        print(f"unknown house bot {args.kind!r}; choose from {', '.join(sorted(HOUSE_BOTS))}")
        return 2
    else:
        factory = HOUSE_BOTS[args.kind]
    try:
        creds, options = channel_security(args)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}")
        return 2
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO)
    import grpc

    try:
        ends = run_bot(
            factory,
            args.server,
            name=args.name or args.kind or "policy",
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


def _policy_factory(spec: str) -> Callable[[], Bot] | None:
    """A factory of PolicyBots playing the policy ``spec`` names (None after printing why it
    cannot be loaded)."""
    try:
        from kozel.sdk.policy import PolicyBot, PolicyError, load_policy
    except ImportError as exc:
        print(f"error: {exc}")
        return None
    try:
        policy = load_policy(spec)
    except PolicyError as exc:
        print(f"error: {exc}")
        return None
    return lambda: PolicyBot(policy)
