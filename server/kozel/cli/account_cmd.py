"""``kozel account``: what a bot's author sets on the bot's account with its token, over the
referee's gRPC port (the operator's counterparts are ``kozel ladder``)."""

from __future__ import annotations

import argparse
import os

from kozel.cli.tls import add_tls_args, open_channel


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("account", help="a bot author's settings of their bot's account")
    asub = p.add_subparsers(dest="account_cmd", required=True)
    pp = asub.add_parser(
        "plays-people",
        help="let people play your bot in the browser while it is connected (on), or not (off)",
    )
    pp.add_argument("name", help="the bot's name")
    pp.add_argument("state", choices=("on", "off"))
    pp.add_argument("--server", required=True, help="referee address host:port")
    pp.add_argument(
        "--token",
        default=os.environ.get("KOZEL_BOT_TOKEN", ""),
        help="the bot's token (default: $KOZEL_BOT_TOKEN, which keeps it out of ps)",
    )
    add_tls_args(pp)
    pp.set_defaults(func=cmd_plays_people)


def cmd_plays_people(args: argparse.Namespace) -> int:
    import grpc

    from kozel.v1 import referee_pb2, referee_pb2_grpc

    if not args.token:
        print("error: give the bot's token (--token or $KOZEL_BOT_TOKEN)")
        return 2
    req = referee_pb2.SetPlaysPeopleRequest(
        bot_name=args.name, token=args.token, plays_people=args.state == "on"
    )
    with open_channel(args, args.server) as channel:
        try:
            referee_pb2_grpc.RefereeServiceStub(channel).SetPlaysPeople(req, timeout=30)
        except grpc.RpcError as exc:
            print(f"error: {exc.code().name}: {exc.details()}")
            return 1
    doing = "plays people" if args.state == "on" else "no longer plays people"
    print(f"bot {args.name!r} {doing}")
    return 0
