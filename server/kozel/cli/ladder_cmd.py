"""``kozel ladder``: bot accounts, ladder control, standings, the store's check and voided
results. Every subcommand works through a referee with ``--server`` (AdminService and the admin
token for actions, LadderService for standings and matches) or straight on the store with
``--db`` (an operator with database access; SQLite in ``--data-dir`` by default)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rich.table import Table

from kozel.cli import match_details_cmd
from kozel.cli.ladder_store import open_store
from kozel.cli.out import console
from kozel.cli.tls import add_tls_args, open_channel
from kozel.server.text import escape, rich_text

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
    _add_account_commands(lsub)
    _add_ladder_commands(lsub)
    match_details_cmd.add_parser(lsub)


def _add_account_commands(lsub: argparse._SubParsersAction) -> None:
    """Bot accounts: register, status, plays people."""
    r = lsub.add_parser("register", help="create a bot and print its token once")
    r.add_argument("name")
    r.set_defaults(func=cmd_register)
    for status, verb in (("paused", "pause"), ("retired", "retire"), ("active", "activate")):
        s = lsub.add_parser(verb, help=f"mark a bot {status}")
        s.add_argument("name")
        s.set_defaults(func=cmd_status, status=status)
    pp = lsub.add_parser(
        "plays-people", help="let people play a bot in the browser while it is connected, or not"
    )
    pp.add_argument("name")
    pp.add_argument("state", choices=("on", "off"))
    pp.set_defaults(func=cmd_plays_people)


def _add_ladder_commands(lsub: argparse._SubParsersAction) -> None:
    """Ladders and their matches: standings, ratings, scheduling, the store's check."""
    st = lsub.add_parser("standings", help="a ladder's standings")
    st.add_argument("ladder")
    st.set_defaults(func=cmd_standings)
    rr = lsub.add_parser("reset-rating", help="start a bot again from the default rating")
    rr.add_argument("ladder")
    rr.add_argument("name")
    rr.set_defaults(func=cmd_reset)
    for verb in ("start", "stop"):
        c = lsub.add_parser(
            verb, help=f"{verb} scheduling matches on a ladder, on every referee sharing the store"
        )
        c.add_argument("ladder")
        c.add_argument("--reason", default="", help="why (kept with the ladder's state)")
        _operator_arg(c)
        c.set_defaults(func=cmd_ladder_control, verb=verb)
    ls = lsub.add_parser("ladders", help="the ladders and their state")
    ls.set_defaults(func=cmd_ladders)
    ck = lsub.add_parser(
        "check", help="the store's consistency check (rating chains, records); exit 1 on a problem"
    )
    ck.set_defaults(func=cmd_check)
    v = lsub.add_parser(
        "void", help="take a finished match's result back; later ratings are computed again"
    )
    v.add_argument("match_id")
    v.add_argument("--reason", required=True, help="why (kept with the match)")
    _operator_arg(v)
    v.set_defaults(func=cmd_void)
    m = lsub.add_parser("matches", help="matches, newest first")
    m.add_argument("--ladder")
    m.add_argument("--bot")
    m.add_argument("--limit", type=int, default=20)
    m.set_defaults(func=cmd_matches)


def _operator_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--operator",
        default=os.environ.get("KOZEL_OPERATOR", os.environ.get("USER", "")),
        help="who acts, kept with the change (default: $KOZEL_OPERATOR or $USER)",
    )


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


def cmd_plays_people(args: argparse.Namespace) -> int:
    """The operator's switch, on the store (the author's is ``kozel account plays-people``)."""
    if args.server:
        print("error: plays-people changes the store: give --db (or --data-dir), not --server")
        return 2
    on = args.state == "on"
    return _act(
        args,
        lambda store: store.set_plays_people(args.name, on),
        f"bot {args.name!r} {'plays people' if on else 'no longer plays people'}",
    )


def cmd_ladder_control(args: argparse.Namespace) -> int:
    from kozel.v1 import admin_pb2 as apb

    state = "running" if args.verb == "start" else "stopped"
    if not args.server:
        return _act(
            args,
            lambda store: store.set_ladder_state(args.ladder, state, args.operator, args.reason),
            f"ladder {args.ladder!r} is {state} for every referee (each obeys within one poll)",
        )
    kind = apb.StartLadderRequest if args.verb == "start" else apb.StopLadderRequest
    req = kind(ladder=args.ladder, reason=args.reason, operator=args.operator)
    try:
        lad = _admin(args, "StartLadder" if args.verb == "start" else "StopLadder", req).ladder
    except AdminError as exc:
        print(f"error: {exc}")
        return 1
    print(
        f"ladder {escape(lad.name)!r} {'schedules matches' if lad.running else 'is stopped'} "
        f"on every referee; {lad.running_matches} running here"
    )
    return 0


def cmd_ladders(args: argparse.Namespace) -> int:
    from kozel.v1 import admin_pb2 as apb

    table = Table(title="Ladders")
    for col in ("ladder", "players", "scheduling", "waiting", "running", "changed by", "reason"):
        table.add_column(col)
    if not args.server:
        from kozel.ladder.cluster_status import read_status

        for x in read_status(open_store(args)).ladders:
            table.add_row(
                rich_text(x.name),
                str(x.players),
                "yes" if x.state == "running" else "no",
                str(x.waiting_bots),
                str(x.running_matches),
                rich_text(x.changed_by),
                rich_text(x.reason),
            )
        console().print(table)
        return 0
    try:
        ladders = _admin(args, "ListLadders", apb.ListLaddersRequest()).ladders
    except AdminError as exc:
        print(f"error: {exc}")
        return 1
    for lad in ladders:
        table.add_row(
            rich_text(lad.name),
            str(lad.players),
            "yes" if lad.running else "no",
            str(lad.waiting),
            str(lad.running_matches),
            rich_text(lad.changed_by),
            rich_text(lad.reason),
        )
    console().print(table)
    return 0


def cmd_standings(args: argparse.Namespace) -> int:
    try:
        rows = _standings(args)
    except AdminError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    table = Table(title=f"Standings: {rich_text(args.ladder)}")
    for col in STANDING_COLUMNS:  # names fold, never cut: a narrow terminal shows them whole
        table.add_column(col, justify="left" if col == "bot" else "right", overflow="fold")
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
    console().print(table)
    return 0


STANDING_COLUMNS = (
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
)


def _standings(args: argparse.Namespace) -> list:
    """A ladder's standings from ``--server``'s LadderService or the store; an unknown
    ladder is an error."""
    if args.server:
        import grpc

        from kozel.ladder.store import Standing
        from kozel.v1 import ladder_pb2, ladder_pb2_grpc

        with open_channel(args, args.server) as channel:
            stub = ladder_pb2_grpc.LadderServiceStub(channel)
            try:
                got = stub.GetStandings(
                    ladder_pb2.GetStandingsRequest(ladder=args.ladder), timeout=10
                )
            except grpc.RpcError as exc:
                raise AdminError(f"{exc.code().name}: {exc.details()}") from None
        return [
            Standing(
                r.bot,
                r.ordinal,
                r.mu,
                r.sigma,
                r.matches,
                r.wins,
                r.avg_penalty,
                r.timeouts,
                r.forfeits,
            )
            for r in got.standings
        ]
    store = open_store(args)
    rows = store.standings(args.ladder)
    if not rows:
        known = ", ".join(store.rated_ladders()) or "none"
        raise AdminError(
            f"no standings for ladder {args.ladder!r} in this store (ladders with standings: "
            f"{known})"
        )
    return rows


def cmd_check(args: argparse.Namespace) -> int:
    from kozel.v1 import admin_pb2 as apb

    try:
        if args.server:
            got = _admin(args, "CheckStore", apb.CheckStoreRequest())
            problems, finished = list(got.problems), got.finished_matches
        else:
            store = open_store(args)
            problems = store.check_consistency()
            finished = store.match_counts().get("finished", 0)
    except AdminError as exc:
        print(f"error: {exc}")
        return 2
    for p in problems:
        print(f"problem: {escape(p)}")
    print(
        f"{len(problems)} problem(s) in {finished} finished matches"
        if problems
        else f"store consistent: {finished} finished matches, rating chains whole"
    )
    return 1 if problems else 0


def cmd_void(args: argparse.Namespace) -> int:
    from kozel.ladder.store import StoreError
    from kozel.v1 import admin_pb2 as apb

    try:
        if args.server:
            req = apb.VoidMatchRequest(
                match_id=args.match_id, reason=args.reason, operator=args.operator
            )
            bots = list(_admin(args, "VoidMatch", req).bots)
        else:
            bots = open_store(args).void_match(args.match_id, args.operator, args.reason)
    except (StoreError, AdminError) as exc:
        print(f"error: {exc}")
        return 1
    names = ", ".join(escape(b) for b in sorted(bots))
    print(f"match {args.match_id} voided; ratings computed again for {names}")
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
    table = Table(title="Matches")
    for col in ("match", "ladder", "status", "started", "reason", "replay"):
        table.add_column(col)
    if args.server:
        try:
            rows = _remote_matches(args)
        except AdminError as exc:
            print(f"error: {exc}")
            return 1
        for m in rows:
            table.add_row(
                m.match_id,
                rich_text(m.ladder),
                m.status,
                m.started_at.ToDatetime().strftime("%Y-%m-%d %H:%M:%S"),
                m.reason,
                "",
            )
        console().print(table)
        return 0
    for r in open_store(args).matches(ladder=args.ladder, bot=args.bot, limit=args.limit):
        table.add_row(
            r.id,
            rich_text(r.ladder),
            r.status,
            r.started_at.strftime("%Y-%m-%d %H:%M:%S"),
            r.reason or "",
            rich_text(r.replay_path or ""),
        )
    console().print(table)
    return 0


def _remote_matches(args: argparse.Namespace) -> list:
    import grpc

    from kozel.v1 import ladder_pb2, ladder_pb2_grpc

    req = ladder_pb2.ListMatchesRequest(
        ladder=args.ladder or "", bot=args.bot or "", limit=args.limit
    )
    with open_channel(args, args.server) as channel:
        try:
            return list(
                ladder_pb2_grpc.LadderServiceStub(channel).ListMatches(req, timeout=10).matches
            )
        except grpc.RpcError as exc:
            raise AdminError(f"{exc.code().name}: {exc.details()}") from None
