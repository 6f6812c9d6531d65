"""``--limit KEY=N`` of the commands that read replays: the replay read limits
(:mod:`kozel.server.replay.limits`)."""

from __future__ import annotations

import argparse
import sys

from kozel.server.replay.limits import ReplayLimits, parse_pairs


def add_limit_flag(p: argparse.ArgumentParser) -> None:
    """``--limit KEY=N``: the replay read limits (:mod:`kozel.server.replay.limits`)."""
    p.add_argument(
        "--limit",
        action="append",
        default=[],
        metavar="KEY=N",
        help="a bigger replay is refused: "
        + ", ".join(ReplayLimits.keys())
        + " (defaults "
        + ", ".join(f"{k}={v}" for k, v in ReplayLimits().pairs())
        + ")",
    )


def limits_of(args: argparse.Namespace) -> ReplayLimits | None:
    """The limits ``--limit`` asks for, or None after printing why they are wrong."""
    try:
        return ReplayLimits().with_pairs(parse_pairs(args.limit))
    except ValueError as exc:
        print(f"error: --limit: {exc}", file=sys.stderr)
        return None
