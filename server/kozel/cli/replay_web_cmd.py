"""``kozel replay html|fetch``: a replay as one self-contained HTML file, and a replay
downloaded by id from a referee (gRPC) or a web server (HTTP)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kozel.cli.limit_args import add_limit_flag, limits_of
from kozel.cli.replay_fetch import REPLAY_ID, fetch_for


def add_subparsers(rsub: argparse._SubParsersAction) -> None:
    h = rsub.add_parser(
        "html",
        help="write one self-contained HTML file (viewer + match) "
        "that works from disk with no network",
    )
    h.add_argument("file", type=Path)
    h.add_argument("-o", "--output", type=Path, help="the HTML file (default: FILE with .html)")
    add_limit_flag(h)
    h.add_argument(
        "--analysis",
        action="store_true",
        help="analyse the match and embed it: every decision's values in the viewer "
        "(as kozel analyze, with its cache; docs/analysis.md)",
    )
    h.add_argument("--budget", type=int, default=200, metavar="MS", help="as kozel analyze")
    h.add_argument("--open-nodes", type=int, default=1_000_000, help="as kozel analyze")
    h.add_argument("--jobs", type=int, default=1, help="as kozel analyze")
    h.set_defaults(func=cmd_html)
    f = rsub.add_parser("fetch", help="download a replay by id")
    f.add_argument("replay_id")
    f.add_argument(
        "--server",
        required=True,
        help="a referee's gRPC address host:port, or a web server's http(s):// URL",
    )
    f.add_argument("-o", "--output", type=Path, help="where to write it (default: ID.kzr)")
    add_limit_flag(f)
    f.set_defaults(func=cmd_fetch)


def cmd_html(args: argparse.Namespace) -> int:
    from kozel.server.replay.file import ReplayError, read_replay
    from kozel.web.html_export import replay_html

    limits = limits_of(args)
    if limits is None:
        return 2
    try:
        replay = read_replay(args.file, limits)
    except (OSError, ReplayError) as exc:
        print(f"{args.file}: cannot read the replay: {exc}", file=sys.stderr)
        return 2
    analysis = None
    if args.analysis:
        from kozel.cli.analyze_cmd import analysis_of

        found = analysis_of(args.file.read_bytes(), args.budget, args.open_nodes, args.jobs)
        if isinstance(found, str):
            print(f"{args.file}: cannot analyse the replay: {found}", file=sys.stderr)
            return 1
        analysis = found
    out = args.output or args.file.with_suffix(".html")
    out.write_text(replay_html(replay, analysis), encoding="utf-8")
    print(f"wrote {out} (open it in a browser: file://{out.resolve()})")
    return 0


def cmd_fetch(args: argparse.Namespace) -> int:
    from kozel.server.replay.file import ReplayError, decode_replay

    if not REPLAY_ID.match(args.replay_id):
        print("error: a replay id is 8 to 64 lowercase hex digits", file=sys.stderr)
        return 2
    limits = limits_of(args)
    if limits is None:
        return 2
    fetch = fetch_for(args.server)
    try:
        data = fetch(args.server, args.replay_id, limits.max_bytes)
        replay = decode_replay(data, limits)
    except (LookupError, OSError, ReplayError) as exc:
        print(f"error: cannot fetch replay {args.replay_id}: {exc}", file=sys.stderr)
        return 1
    out = args.output or Path(f"{args.replay_id}.kzr")
    out.write_bytes(data)
    print(f"wrote {out} ({len(data)} bytes, {len(replay.deals)} deals)")
    return 0
