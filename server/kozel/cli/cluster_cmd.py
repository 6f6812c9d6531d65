"""``kozel cluster status``: every referee sharing a store and every ladder, read from the store
(``--db``) or through a referee's AdminService (``--server``): leases, load, draining, which
referee schedules each ladder, waiting bots and why nothing starts."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import asdict
from pathlib import Path

from rich.table import Table

from kozel.cli.ladder_store import open_store
from kozel.cli.out import console
from kozel.cli.tls import add_tls_args, open_channel
from kozel.server.text import escape, rich_text


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cluster", help="the referees sharing a ladder store")
    csub = p.add_subparsers(dest="cluster_cmd", required=True)
    st = csub.add_parser("status", help="referees, ladders, schedulers, waiting bots, stalls")
    st.add_argument(
        "--db",
        default=os.environ.get("KOZEL_DATABASE_URL", ""),
        help="database URL (default: $KOZEL_DATABASE_URL or SQLite in --data-dir)",
    )
    st.add_argument("--data-dir", type=Path, default=Path("data"))
    st.add_argument("--server", help="a referee's AdminService (its operator port)")
    st.add_argument(
        "--admin-token",
        default=os.environ.get("KOZEL_ADMIN_TOKEN", ""),
        help="admin token for --server (default: $KOZEL_ADMIN_TOKEN)",
    )
    st.add_argument("--json", action="store_true", help="one JSON object instead of tables")
    add_tls_args(st)
    st.set_defaults(func=cmd_status)


def cmd_status(args: argparse.Namespace) -> int:
    from kozel.ladder.cluster_status import ClusterStatus

    try:
        status = _remote(args) if args.server else _local(args)
    except _Refused as exc:
        print(f"error: {exc}")
        return 1
    assert isinstance(status, ClusterStatus)
    if args.json:
        out = {**asdict(status), "problems": status.problems}
        print(json.dumps(out, indent=2, sort_keys=True))
        return 0
    _print(status)
    return 0


class _Refused(Exception):
    pass


def _local(args: argparse.Namespace):
    from kozel.ladder.cluster_status import read_status

    return read_status(open_store(args))


def _remote(args: argparse.Namespace):
    import grpc

    from kozel.ladder.cluster_status import ClusterStatus, LadderInfo, RefereeInfo
    from kozel.v1 import admin_pb2 as apb
    from kozel.v1 import admin_pb2_grpc

    with open_channel(args, args.server) as channel:
        stub = admin_pb2_grpc.AdminServiceStub(channel)
        try:
            got = stub.GetClusterStatus(
                apb.GetClusterStatusRequest(),
                timeout=10,
                metadata=[("authorization", f"Bearer {args.admin_token}")],
            )
        except grpc.RpcError as exc:
            raise _Refused(f"{exc.code().name}: {exc.details()}") from None
    return ClusterStatus(
        tuple(RefereeInfo(**_fields(r, RefereeInfo)) for r in got.referees),
        tuple(LadderInfo(**_fields(x, LadderInfo)) for x in got.ladders),
    )


def _fields(msg, cls) -> dict:
    """The dataclass's fields the message has (the others keep their defaults)."""
    return {name: getattr(msg, name) for name in cls.__dataclass_fields__ if hasattr(msg, name)}


def _print(status) -> None:
    out = console()
    refs = Table(title="Referees")
    for col in ("referee", "address", "live", "lease age", "draining", "running", "cap"):
        refs.add_column(col)
    for col in ("streams", "waiting", "admits", "version"):
        refs.add_column(col)
    for r in status.referees:
        refs.add_row(
            rich_text(r.id),
            rich_text(r.address),
            "yes" if r.live else "NO",
            f"{r.lease_age_s:.1f} s",
            "yes" if r.draining else "",
            str(r.running_matches),
            str(r.capacity),
            str(r.streams),
            str(r.waiting),
            "yes" if r.admits else "no",
            rich_text(r.version),
        )
    out.print(refs)
    lads = Table(title="Ladders")
    for col in ("ladder", "state", "scheduler", "waiting", "running", "assigned", "why idle"):
        lads.add_column(col, overflow="fold")
    for x in status.ladders:
        lads.add_row(
            rich_text(x.name),
            x.state,
            rich_text(x.scheduler) or "none",
            str(x.waiting_bots),
            str(x.running_matches),
            str(x.assigned),
            rich_text(x.stalled),
        )
    out.print(lads)
    for p in status.problems:
        print(f"problem: {escape(p)}")
