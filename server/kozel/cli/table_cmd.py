"""``kozel table create``: open a table on a referee (the ``CreateTable`` RPC) and print its
id, so a bot can join it (``Hello.join_table``), house bots seated in-process or not."""

from __future__ import annotations

import argparse
import json
import sys

from kozel.cli.tls import add_tls_args, open_channel


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("table", help="open a table on a referee")
    tsub = p.add_subparsers(dest="table_command", required=True)
    c = tsub.add_parser(
        "create",
        help="open a table and print its id",
        description="Open a table and print its id (one line), for a bot's "
        "--table / Hello.join_table.",
    )
    c.add_argument("--server", default="127.0.0.1:50051", help="referee address host:port")
    c.add_argument("--ruleset", default="classic", help="preset name (RULES.md)")
    c.add_argument("--options", default="{}", help="knob overrides as JSON")
    c.add_argument("--players", type=int, default=2, help="seats at the table")
    c.add_argument(
        "--house",
        action="append",
        default=[],
        metavar="BOT",
        help="a house bot the referee seats in-process (random, greedy, ismcts); "
        "repeat or comma-separate for several; remote bots fill the rest",
    )
    c.add_argument("--id", default="", help="table id (default: the referee picks one)")
    c.add_argument("--move-ms", type=int, help="per-move allowance (default: the referee's)")
    c.add_argument("--bank-ms", type=int, help="time bank per match (default: the referee's)")
    c.add_argument("--timeout", type=float, default=10, help="seconds to wait for the referee")
    add_tls_args(c)
    c.set_defaults(func=cmd_table_create)


def house_list(values: list[str]) -> list[str]:
    """``--house a --house b,c`` as ``[a, b, c]``."""
    return [h.strip() for v in values for h in v.split(",") if h.strip()]


def cmd_table_create(args: argparse.Namespace) -> int:
    import grpc

    from kozel.core.convert import dict_to_struct
    from kozel.v1 import game_pb2 as pb
    from kozel.v1 import referee_pb2 as rpb
    from kozel.v1 import referee_pb2_grpc

    try:
        options = json.loads(args.options)
        if not isinstance(options, dict):
            raise ValueError("--options must be a JSON object")
    except ValueError as exc:
        print(f"error: --options: {exc}", file=sys.stderr)
        return 2
    ruleset = pb.Ruleset(preset=args.ruleset)
    if options:
        ruleset.options.CopyFrom(dict_to_struct(options))
    request = rpb.CreateTableRequest(
        table_id=args.id, ruleset=ruleset, players=args.players, house_bots=house_list(args.house)
    )
    if args.move_ms is not None or args.bank_ms is not None:
        request.time_control.SetInParent()
        if args.move_ms is not None:
            request.time_control.move_ms = args.move_ms
        if args.bank_ms is not None:
            request.time_control.bank_ms = args.bank_ms
    try:
        with open_channel(args, args.server) as channel:
            stub = referee_pb2_grpc.RefereeServiceStub(channel)
            reply = stub.CreateTable(request, timeout=args.timeout)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except grpc.RpcError as exc:
        code = exc.code()
        details = exc.details()
        if code == grpc.StatusCode.UNAVAILABLE:
            details = f"no referee reachable at {args.server}"
        print(f"error: {code.name}: {details}", file=sys.stderr)
        return 1
    print(reply.table_id)
    return 0
