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
    import grpc

    from kozel.sdk import Report
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
    """Play as the house bot or policy named, then print each match's end and a summary: 2
    for bad arguments, 1 when the referee is out of reach or drops the stream, 130 when
    stopped at once."""
    from kozel.sdk import Report  # the SDK loads grpc: only when needed
    from kozel.tools.local import END_REASONS

    factory = _bot_factory(args)
    if factory is None:
        return 2
    try:
        creds, options = channel_security(args)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}")
        return 2
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO)
    report = Report()
    ends, code = _play(args, factory, report, creds, options)
    if not args.quiet:
        for end in ends:
            why = END_REASONS.get(end.result.reason, "")
            verdict = report.verdicts.get(end.match_id, "ended")
            print(f"match {end.match_id}: {verdict} ({why}); replay {end.replay_id}")
        print(report.summary())
    return code


def _bot_factory(args: argparse.Namespace) -> Callable[[], Bot] | None:
    """What makes the bot: the house bot named or the --policy (None after printing why
    neither or both are given, or the one given cannot be had)."""
    from kozel.sdk import HOUSE_BOTS

    if (args.kind is None) == (args.policy is None):
        print("error: name a house bot or give --policy MODULE:CALLABLE (one of them)")
        return None
    if args.policy is not None:
        return _policy_factory(args.policy)
    if args.kind not in HOUSE_BOTS:
        print(f"unknown house bot {args.kind!r}; choose from {', '.join(sorted(HOUSE_BOTS))}")
        return None
    return HOUSE_BOTS[args.kind]


def _play(
    args: argparse.Namespace,
    factory: Callable[[], Bot],
    report: Report,
    credentials: grpc.ChannelCredentials | None,
    channel_options: list[tuple[str, str]],
) -> tuple[list[referee_pb2.MatchEnd], int]:
    """Play until the matches asked for are done or a signal stops it (see
    :func:`until_signalled`): the matches' ends and the exit status, with one line for an
    error."""
    import grpc

    from kozel.sdk import play

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
            credentials=credentials,
            channel_options=channel_options,
            report=report,
            stop=stop,
        )

    try:
        return asyncio.run(until_signalled(run)), 0
    except grpc.aio.AioRpcError as exc:
        details = exc.details() or ""
        if exc.code() == grpc.StatusCode.UNAVAILABLE:
            details = f"no referee reachable at {args.server}"
        print(f"error: {exc.code().name}: {details}", file=sys.stderr)
        return [], 1
    except ConnectionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return [], 1
    except asyncio.CancelledError:
        print("stopped at once: a running match is forfeited after its grace", file=sys.stderr)
        return [], 130


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
