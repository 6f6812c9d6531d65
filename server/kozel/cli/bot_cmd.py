"""``kozel bot NAME --server ADDR``: run a house bot as a real remote client;
``kozel bot --policy module:callable``: serve a policy trained on ``kozel.env``."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from kozel.cli.tls import add_tls_args, channel_security

if TYPE_CHECKING:
    from kozel.sdk.bot import Bot
    from kozel.v1 import referee_pb2

T = TypeVar("T")


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
    p.add_argument(
        "--matches",
        type=int,
        default=None,
        help="leave after this many matches (default: a table's one match; on a queue or "
        "ladder, until Ctrl-C or SIGTERM, which let the running matches finish)",
    )
    p.add_argument("--max-matches", type=int, default=1, help="matches played at once")
    add_tls_args(p)
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_bot)


def cmd_bot(args: argparse.Namespace) -> int:
    from kozel.sdk import HOUSE_BOTS, Report, play  # the SDK loads grpc: only when needed
    from kozel.tools.local import END_REASONS

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

    report = Report()

    def run(stop: asyncio.Event) -> Awaitable[list[referee_pb2.MatchEnd]]:
        return play(
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
            report=report,
            stop=stop,
        )

    code = 0
    ends: list[referee_pb2.MatchEnd] = []
    try:
        ends = asyncio.run(until_signalled(run))
    except grpc.aio.AioRpcError as exc:
        details = exc.details() or ""
        if exc.code() == grpc.StatusCode.UNAVAILABLE:
            details = f"no referee reachable at {args.server}"
        print(f"error: {exc.code().name}: {details}", file=sys.stderr)
        code = 1
    except ConnectionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        code = 1
    except asyncio.CancelledError:
        print("stopped at once: a running match is forfeited after its grace", file=sys.stderr)
        code = 130
    if not args.quiet:
        for end in ends:
            why = END_REASONS.get(end.result.reason, "")
            verdict = report.verdicts.get(end.match_id, "ended")
            print(f"match {end.match_id}: {verdict} ({why}); replay {end.replay_id}")
    if not args.quiet:
        print(report.summary())
    return code


async def until_signalled(run: Callable[[asyncio.Event], Awaitable[T]]) -> T:
    """``run(stop)``, where the first SIGINT or SIGTERM sets ``stop`` (the running matches
    finish, no new one starts) and the second cancels it at once."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    task = asyncio.current_task()
    assert task is not None

    def on_signal() -> None:
        if stop.is_set():
            task.cancel()
            return
        print(
            "stopping: running matches finish, no new one starts (signal again to stop at once)",
            file=sys.stderr,
            flush=True,
        )
        stop.set()

    signals = (signal.SIGINT, signal.SIGTERM)
    for sig in signals:
        loop.add_signal_handler(sig, on_signal)
    try:
        return await run(stop)
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)


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
