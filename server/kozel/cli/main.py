"""Entry point of the ``kozel`` command."""

from __future__ import annotations

import argparse
import os
import sys

# Before gRPC loads: the commands start processes by fork and exec only (the referee its web
# server, kozel play its bots), which need none of gRPC's fork handlers; with them on, gRPC
# logs "Other threads are currently calling into gRPC, skipping fork() handlers" at each start.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

from kozel.cli import (  # after the environment above
    account_cmd,
    analyze_cmd,
    bench_cmd,
    bot_cmd,
    cluster_cmd,
    conformance_cmd,
    demo_cmd,
    health_cmd,
    ladder_cmd,
    match_cmd,
    play_cmd,
    replay_cmd,
    serve_cmd,
    table_cmd,
    tournament_cmd,
    vectors_cmd,
    watch_cmd,
    web_cmd,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kozel", description="Kozel Arena")
    sub = parser.add_subparsers(dest="command", required=True)
    vectors_cmd.add_parser(sub)
    bench_cmd.add_parser(sub)
    demo_cmd.add_parser(sub)
    serve_cmd.add_parser(sub)
    health_cmd.add_parser(sub)
    bot_cmd.add_parser(sub)
    match_cmd.add_parser(sub)
    replay_cmd.add_parser(sub)
    conformance_cmd.add_parser(sub)
    ladder_cmd.add_parser(sub)
    account_cmd.add_parser(sub)
    cluster_cmd.add_parser(sub)
    watch_cmd.add_parser(sub)
    table_cmd.add_parser(sub)
    play_cmd.add_parser(sub)
    web_cmd.add_parser(sub)
    analyze_cmd.add_parser(sub)
    tournament_cmd.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
