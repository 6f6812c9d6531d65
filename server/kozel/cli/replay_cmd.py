"""``kozel replay show|verify``: read a match replay (``.kzr``) and check it with the engine."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from google.protobuf import json_format

from kozel.cli import replay_web_cmd
from kozel.cli.limit_args import add_limit_flag, limits_of
from kozel.server.replay.file import ReplayError, read_replay
from kozel.server.replay.limits import ReplayLimits
from kozel.server.replay.render import replay_to_text
from kozel.server.replay.verify import verify_replay
from kozel.v1 import replay_pb2


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="show, verify, fetch a match replay or write it as HTML")
    rsub = p.add_subparsers(dest="replay_cmd", required=True)
    s = rsub.add_parser("show", help="print a replay as text (or JSON)")
    s.add_argument("file", type=Path)
    s.add_argument("--json", action="store_true", help="print the replay message as JSON")
    add_limit_flag(s)
    s.set_defaults(func=cmd_show)
    v = rsub.add_parser(
        "verify", help="re-play replays from their seeds; non-zero exit on problems"
    )
    v.add_argument("file", type=Path, nargs="+")
    add_limit_flag(v)
    v.set_defaults(func=cmd_verify)
    replay_web_cmd.add_subparsers(rsub)  # html, fetch


def _load(path: Path, limits: ReplayLimits) -> replay_pb2.Replay | None:
    """The replay in ``path``, or None after printing why it cannot be read."""
    try:
        return read_replay(path, limits)
    except (OSError, ReplayError) as exc:
        print(f"{path}: cannot read the replay: {exc}", file=sys.stderr)
        return None


def cmd_show(args: argparse.Namespace) -> int:
    limits = limits_of(args)
    if limits is None:
        return 2
    replay = _load(args.file, limits)
    if replay is None:
        return 2
    if args.json:
        print(json_format.MessageToJson(replay))
    else:
        sys.stdout.write(replay_to_text(replay))
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    limits = limits_of(args)
    if limits is None:
        return 2
    worst = 0
    for path in args.file:
        prefix = f"{path}: " if len(args.file) > 1 else ""
        replay = _load(path, limits)
        if replay is None:
            worst = 2
            continue
        problems = verify_replay(replay)
        for problem in problems:
            print(prefix + problem)
        if problems:
            print(f"{prefix}replay FAILED: {len(problems)} problem(s)", file=sys.stderr)
            worst = max(worst, 1)
        else:
            print(f"{prefix}replay OK: {len(replay.deals)} deals verified")
    return worst
