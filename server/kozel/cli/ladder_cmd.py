"""``kozel ladder``: bot accounts, ladder control and standings. Account actions go through a
referee's AdminService with ``--server`` and the admin token, or straight to the store (an
operator with database access) without it."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kozel.cli import match_details_cmd
from kozel.cli.ladder_store import open_store
from kozel.cli.tls import add_tls_args, open_channel
from kozel.server.text import rich_text

DEFAULT_DB = os.environ.get("KOZEL_DATABASE_URL", "")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ladder", help="ladder accounts and standings")
    p.add_argument(
        "--db",
        default=DEFAULT_DB,
        help="database URL (default: $KOZEL_DATABASE_URL or SQLite in --data-dir)",
    )
    p.add_argument("--data-dir", type=Path, default=Path("data"))
    p.add_argument(
        "--server", help="a referee's AdminService (its operator port) instead of the database"
    )
    p.add_argument(
        "--admin-token",
        default=os.environ.get("KOZEL_ADMIN_TOKEN", ""),
        help="admin token for --server (default: $KOZEL_ADMIN_TOKEN)",
    )
    add_tls_args(p)
    lsub = p.add_subparsers(dest="ladder_cmd", required=True)
    r = lsub.add_parser("register", help="create a bot and print its token once")
    r.add_argument("name")
    r.set_defaults(func=cmd_register)
    for status, verb in (("paused", "pause"), ("retired", "retire"), ("active", "activate")):
        s = lsub.add_parser(verb, help=f"mark a bot {status}")
        s.add_argument("name")
        s.set_defaults(func=cmd_status, status=status)
    st = lsub.add_parser("standings", help="a ladder's standings")
    st.add_argument("ladder")
    st.set_defaults(func=cmd_standings)
    rr = lsub.add_parser("reset-rating", help="start a bot again from the default rating")
    rr.add_argument("ladder")
    rr.add_argument("name")
    rr.set_defaults(func=cmd_reset)
    for verb in ("start", "stop"):
        c = lsub.add_parser(verb, help=f"{verb} scheduling matches on a ladder (needs --server)")
        c.add_argument("ladder")
        c.set_defaults(func=cmd_ladder_control, verb=verb)
    ls = lsub.add_parser("ladders", help="the ladders a referee serves (needs --server)")
    ls.set_defaults(func=cmd_ladders)
    m = lsub.add_parser("matches", help="matches, newest first")
    m.add_argument("--ladder")
    m.add_argument("--bot")
    m.add_argument("--limit", type=int, default=20)
    m.set_defaults(func=cmd_matches)
    match_details_cmd.add_parser(lsub)


def _admin(args: argparse.Namespace, method: str, request):
    """Call one AdminService method on ``--server``; raises ``AdminError`` with its message."""
    import grpc

    from kozel.v1 import admin_pb2_grpc

    with open_channel(args, args.server) as channel:
        stub = admin_pb2_grpc.AdminServiceStub(channel)
        try:
            return getattr(stub, method)(
                request, timeout=10, metadata=[("authorization", f"Bearer {args.admin_token}")]
            )
        except grpc.RpcError as exc:
            raise AdminError(f"{exc.code().name}: {exc.details()}") from None


class AdminError(Exception):
    """An AdminService call the referee refused."""


def cmd_register(args: argparse.Namespace) -> int:
    from kozel.ladder.store import StoreError
    from kozel.v1 import admin_pb2 as apb

    try:
        if args.server:
            token = _admin(args, "RegisterBot", apb.RegisterBotRequest(name=args.name)).token
        else:
            token = open_store(args, create=True).register_bot(args.name)
    except (StoreError, AdminError) as exc:
        print(f"error: {exc}")
        return 1
    print(f"bot {args.name!r} registered; its token (shown only now, stored as a hash):")
    print(token)
    return 0


def _act(args: argparse.Namespace, action, done: str, remote=None) -> int:
    """Run one action, on ``--server`` (``remote()``) or the store; print ``done`` or why not."""
    from kozel.ladder.store import StoreError

    try:
        if args.server and remote is not None:
            remote()
        else:
            action(open_store(args))
    except (StoreError, AdminError) as exc:
        print(f"error: {exc}")
        return 1
    print(done)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from kozel.v1 import admin_pb2 as apb

    status = f"BOT_STATUS_{args.status.upper()}"  # the enum value by name
    return _act(
        args,
        lambda store: store.set_status(args.name, args.status),
        f"bot {args.name!r} is {args.status}",
        lambda: _admin(
            args, "SetBotStatus", apb.SetBotStatusRequest(name=args.name, status=status)
        ),
    )


def cmd_ladder_control(args: argparse.Namespace) -> int:
    from kozel.v1 import admin_pb2 as apb

    if not args.server:
        print("error: starting and stopping a ladder needs --server (the referee runs it)")
        return 2
    method, req = (
        ("StartLadder", apb.StartLadderRequest(ladder=args.ladder))
        if args.verb == "start"
        else ("StopLadder", apb.StopLadderRequest(ladder=args.ladder))
    )
    try:
        state = _admin(args, method, req).ladder
    except AdminError as exc:
        print(f"error: {exc}")
        return 1
    print(
        f"ladder {state.name!r} {'schedules matches' if state.running else 'is stopped'}; "
        f"{state.running_matches} running"
    )
    return 0


def cmd_ladders(args: argparse.Namespace) -> int:
    from kozel.v1 import admin_pb2 as apb

    if not args.server:
        print("error: listing the ladders a referee runs needs --server")
        return 2
    try:
        ladders = _admin(args, "ListLadders", apb.ListLaddersRequest()).ladders
    except AdminError as exc:
        print(f"error: {exc}")
        return 1
    table = Table(title="Ladders")
    for col in ("ladder", "ruleset", "players", "scheduling", "waiting", "running"):
        table.add_column(col)
    for lad in ladders:
        table.add_row(
            rich_text(lad.name),
            lad.ruleset,
            str(lad.players),
            "yes" if lad.running else "no",
            str(lad.waiting),
            str(lad.running_matches),
        )
    Console().print(table)
    return 0


def cmd_standings(args: argparse.Namespace) -> int:
    store = open_store(args)
    rows = store.standings(args.ladder)
    if not rows:
        known = ", ".join(store.rated_ladders()) or "none"
        print(
            f"error: no standings for ladder {args.ladder!r} in this store "
            f"(ladders with standings: {known})",
            file=sys.stderr,
        )
        return 1
    table = Table(title=f"Standings: {args.ladder}")
    for col in (
        "#",
        "bot",
        "ordinal",
        "mu",
        "sigma",
        "matches",
        "wins",
        "avg penalty",
        "timeouts",
        "forfeits",
    ):
        table.add_column(col, justify="left" if col == "bot" else "right")
    for i, r in enumerate(rows, 1):
        table.add_row(
            str(i),
            rich_text(r.name),
            f"{r.ordinal:.2f}",
            f"{r.mu:.2f}",
            f"{r.sigma:.2f}",
            str(r.matches),
            str(r.wins),
            f"{r.avg_penalty:.1f}",
            str(r.timeouts),
            str(r.forfeits),
        )
    Console().print(table)
    return 0


def cmd_reset(args: argparse.Namespace) -> int:
    from kozel.v1 import admin_pb2 as apb

    return _act(
        args,
        lambda store: store.reset_rating(args.ladder, args.name),
        f"bot {args.name!r} starts again from the default rating on {args.ladder!r}",
        lambda: _admin(
            args, "ResetRating", apb.ResetRatingRequest(ladder=args.ladder, bot=args.name)
        ),
    )


def cmd_matches(args: argparse.Namespace) -> int:
    rows = open_store(args).matches(ladder=args.ladder, bot=args.bot, limit=args.limit)
    table = Table(title="Matches")
    for col in ("match", "ladder", "status", "started", "reason", "replay"):
        table.add_column(col)
    for r in rows:
        table.add_row(
            r.id,
            r.ladder,
            r.status,
            r.started_at.strftime("%Y-%m-%d %H:%M:%S"),
            r.reason or "",
            r.replay_path or "",
        )
    Console().print(table)
    return 0
