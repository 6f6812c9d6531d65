"""``kozel ladder``: bot accounts and standings, straight on the store (operator-local)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from rich.console import Console
from rich.table import Table

DEFAULT_DB = os.environ.get("KOZEL_DATABASE_URL", "")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ladder", help="ladder accounts and standings")
    p.add_argument("--db", default=DEFAULT_DB,
                   help="database URL (default: $KOZEL_DATABASE_URL or SQLite in --data-dir)")
    p.add_argument("--data-dir", type=Path, default=Path("data"))
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
    m = lsub.add_parser("matches", help="matches, newest first")
    m.add_argument("--ladder")
    m.add_argument("--bot")
    m.add_argument("--limit", type=int, default=20)
    m.set_defaults(func=cmd_matches)


def _store(args: argparse.Namespace):
    from kozel.ladder.store import Store, default_url

    store = Store(args.db or default_url(args.data_dir))
    store.migrate()
    return store


def cmd_register(args: argparse.Namespace) -> int:
    from kozel.ladder.store import StoreError

    store = _store(args)
    try:
        token = store.register_bot(args.name)
    except StoreError as exc:
        print(f"error: {exc}")
        return 1
    print(f"bot {args.name!r} registered; its token (shown only now, stored as a hash):")
    print(token)
    return 0


def _act(args: argparse.Namespace, action, done: str) -> int:
    """Run one store action; print ``done`` or the store's refusal."""
    from kozel.ladder.store import StoreError

    try:
        action(_store(args))
    except StoreError as exc:
        print(f"error: {exc}")
        return 1
    print(done)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    return _act(args, lambda store: store.set_status(args.name, args.status),
                f"bot {args.name!r} is {args.status}")


def cmd_standings(args: argparse.Namespace) -> int:
    rows = _store(args).standings(args.ladder)
    table = Table(title=f"Standings: {args.ladder}")
    for col in ("#", "bot", "ordinal", "mu", "sigma", "matches", "wins", "avg penalty",
                "timeouts", "forfeits"):
        table.add_column(col, justify="left" if col == "bot" else "right")
    for i, r in enumerate(rows, 1):
        table.add_row(str(i), r.name, f"{r.ordinal:.2f}", f"{r.mu:.2f}", f"{r.sigma:.2f}",
                      str(r.matches), str(r.wins), f"{r.avg_penalty:.1f}", str(r.timeouts),
                      str(r.forfeits))
    Console().print(table)
    return 0


def cmd_reset(args: argparse.Namespace) -> int:
    return _act(args, lambda store: store.reset_rating(args.ladder, args.name),
                f"bot {args.name!r} starts again from the default rating on {args.ladder!r}")


def cmd_matches(args: argparse.Namespace) -> int:
    rows = _store(args).matches(ladder=args.ladder, bot=args.bot, limit=args.limit)
    table = Table(title="Matches")
    for col in ("match", "ladder", "status", "started", "reason", "replay"):
        table.add_column(col)
    for r in rows:
        table.add_row(r.id, r.ladder, r.status, r.started_at.strftime("%Y-%m-%d %H:%M:%S"),
                      r.reason or "", r.replay_path or "")
    Console().print(table)
    return 0
