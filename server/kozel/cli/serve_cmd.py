"""``kozel serve``: run a referee."""

from __future__ import annotations

import argparse
import asyncio
import logging
from pathlib import Path

from kozel.server.app import serve
from kozel.server.config import Clock, ServerConfig


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="run a referee")
    d, c = ServerConfig(), Clock()
    p.add_argument("--listen", default=d.listen, help="host:port (port 0 picks a free one)")
    p.add_argument("--replay-dir", type=Path, default=d.replay_dir)
    p.add_argument("--move-ms", type=int, default=c.move_ms, help="default per-move allowance")
    p.add_argument("--bank-ms", type=int, default=c.bank_ms, help="default time bank per match")
    p.add_argument("--max-strikes", type=int, default=c.max_strikes)
    p.add_argument("--max-retries", type=int, default=c.max_retries)
    p.add_argument("--grace-ms", type=int, default=c.grace_ms, help="reconnect grace period")
    p.add_argument("--hello-timeout", type=float, default=d.hello_timeout_s,
                   help="seconds a new stream has to send Hello")
    p.add_argument("--max-streams", type=int, default=d.max_streams)
    p.add_argument("--max-message-bytes", type=int, default=d.max_receive_message_bytes,
                   help="largest message accepted from a bot")
    p.add_argument("--ladders", type=Path, help="YAML file of ladders to serve")
    p.add_argument("--data-dir", type=Path, default=d.data_dir, help="where the SQLite store is")
    p.add_argument("--db", default="", help="database URL (PostgreSQL), instead of SQLite")
    p.add_argument("--log-level", default="INFO")
    p.set_defaults(func=cmd_serve)


def config_from_args(args: argparse.Namespace) -> ServerConfig:
    clock = Clock(move_ms=args.move_ms, bank_ms=args.bank_ms, max_strikes=args.max_strikes,
                  max_retries=args.max_retries, grace_ms=args.grace_ms)
    ladders: tuple = ()
    if args.ladders is not None:
        from kozel.ladder.config import load_ladders

        ladders = tuple(load_ladders(args.ladders))
    return ServerConfig(listen=args.listen, replay_dir=args.replay_dir, clock=clock,
                        hello_timeout_s=args.hello_timeout, max_streams=args.max_streams,
                        max_receive_message_bytes=args.max_message_bytes, ladders=ladders,
                        data_dir=args.data_dir, database_url=args.db)


def cmd_serve(args: argparse.Namespace) -> int:
    from kozel.ladder.config import ConfigError

    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        config = config_from_args(args)
    except ConfigError as exc:
        print(f"error: {exc}")
        return 2
    asyncio.run(serve(config))
    return 0
