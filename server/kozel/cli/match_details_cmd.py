"""``kozel ladder match ID``: one match's details, from a referee (``GetMatch``, with
``--referee``) or straight from the store and the replay on disk."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kozel.cli.ladder_store import open_store
from kozel.cli.tls import open_channel
from kozel.server.text import escape, rich_text
from kozel.v1 import game_pb2 as pb
from kozel.v1 import match_pb2 as mpb


def add_parser(lsub: argparse._SubParsersAction) -> None:
    """Add ``match`` to the ``kozel ladder`` sub-commands."""
    m = lsub.add_parser("match", help="one match's details (seats, result, rating changes)")
    m.add_argument("match_id")
    m.add_argument(
        "--referee",
        metavar="ADDR",
        help="ask this referee's MatchService (its bot port, host:port) instead of "
        "reading the store",
    )
    m.add_argument(
        "--replay-dir",
        type=Path,
        default=Path("data/replays"),
        help="where replays are when the store names none",
    )
    m.set_defaults(func=cmd_match)


def cmd_match(args: argparse.Namespace) -> int:
    if args.referee:
        import grpc

        from kozel.v1 import match_pb2_grpc

        try:
            channel = open_channel(args, args.referee)  # the ladder command's TLS flags
        except (ValueError, OSError) as exc:
            print(f"error: {exc}")
            return 2
        with channel:
            try:
                details = match_pb2_grpc.MatchServiceStub(channel).GetMatch(
                    mpb.GetMatchRequest(match_id=args.match_id)
                )
            except grpc.RpcError as exc:
                print(escape(f"error: {exc.code().name}: {exc.details()}"))
                return 1
    else:
        from kozel.server.lobby import REPLAY_ID
        from kozel.server.match_details import match_details
        from kozel.server.replay.archive import FolderArchive, StoreArchive

        if not REPLAY_ID.fullmatch(args.match_id):
            print("error: a match id is 8 to 64 lowercase hex digits")
            return 1
        store = open_store(args)
        archive = (
            StoreArchive(args.replay_dir, store)
            if store.keeps_replays
            else FolderArchive(args.replay_dir)
        )
        details = match_details(args.match_id, store=store, replays=archive)
        if details is None:
            print(f"error: no match {args.match_id}")
            return 1
    render(details, Console())
    return 0


def render(d: mpb.GetMatchResponse, console: Console) -> None:
    """Print a match's details: a header, then one row per seat."""
    r = d.result
    where = (
        f"ladder {rich_text(d.ladder)}"
        if d.ladder
        else f"table {rich_text(d.table_id)}"
        if d.table_id
        else "queue"
    )
    console.print(
        f"match {d.match_id} ({where}): {d.status}, {d.players} players, "
        f"{d.ruleset.preset or 'ruleset unknown'}"
    )
    if d.HasField("started_at"):
        ended = (
            f", ended {d.ended_at.ToDatetime():%Y-%m-%d %H:%M:%S}" if d.HasField("ended_at") else ""
        )
        console.print(f"started {d.started_at.ToDatetime():%Y-%m-%d %H:%M:%S}{ended} (UTC)")
    if d.status != "running":
        reason = pb.MatchEndReason.Name(r.reason).removeprefix("MATCH_END_REASON_").lower()
        winner = "draw" if r.draw else f"side {r.winner_side} wins"
        console.print(
            f"result: {winner} ({reason}), {r.deals} deals; replay {d.replay_id or 'not available'}"
        )
    money = bool(r.chips)
    table = Table(title="Seats")
    cols = (
        "seat",
        "bot",
        "side",
        "rank",
        "chips" if money else "penalty",
        "timeouts",
        "forfeited",
        "rating (mu)",
    )
    for col in cols:
        table.add_column(col, justify="left" if col == "bot" else "right")
    for s in d.seats:
        rating = (
            f"{s.rating.mu_before:.2f} -> {s.rating.mu_after:.2f}" if s.HasField("rating") else ""
        )
        table.add_row(
            str(s.seat),
            rich_text(s.bot),
            str(s.side),
            str(s.rank or "-"),
            str(s.chips if money else s.penalty),
            str(s.timeouts),
            "yes" if s.forfeited else "",
            rating,
        )
    console.print(table)
