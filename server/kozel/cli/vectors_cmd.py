"""``kozel vectors run|check``: the rule-vector runner for this engine and bot authors' own."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kozel.engine.errors import SetupError
from kozel.engine.vectors import compare, run


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("vectors", help="run or check rule vectors")
    vsub = p.add_subparsers(dest="vectors_cmd", required=True)
    r = vsub.add_parser("run", help="print the outcome JSON of one vector file")
    r.add_argument("file", type=Path)
    r.set_defaults(func=cmd_run)
    c = vsub.add_parser("check", help="check vector files or folders; non-zero exit on failure")
    c.add_argument("paths", type=Path, nargs="+")
    c.add_argument("-q", "--quiet", action="store_true", help="print failures and the summary only")
    c.set_defaults(func=cmd_check)


def _load(path: Path) -> dict:
    with path.open(encoding="utf-8") as f:
        return json.load(f)


def cmd_run(args: argparse.Namespace) -> int:
    try:
        outcome = run(_load(args.file))
    except (OSError, json.JSONDecodeError) as exc:
        print(f"{args.file}: cannot read: {exc}", file=sys.stderr)
        return 2
    except SetupError as exc:
        print(f"{args.file}: cannot set up: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(outcome, indent=1))
    return 0


def vector_files(paths: list[Path]) -> list[Path]:
    """Every ``*.json`` file named or below a named folder, sorted."""
    files: list[Path] = []
    for p in paths:
        files.extend(sorted(p.rglob("*.json")) if p.is_dir() else [p])
    return files


def cmd_check(args: argparse.Namespace) -> int:
    files = vector_files(args.paths)
    passed = failed = 0
    for path in files:
        try:
            vector = _load(path)
            diffs = compare(vector.get("expect", {}), run(vector))
        except (OSError, json.JSONDecodeError, SetupError) as exc:
            diffs = [f"cannot set up: {exc}"]
        if diffs:
            failed += 1
            print(f"FAIL {path}: " + "; ".join(diffs))
        else:
            passed += 1
            if not args.quiet:
                print(f"ok   {path}")
    print(f"vectors: {passed} passed, {failed} failed")
    if not files:
        print("no vector files found", file=sys.stderr)
        return 1
    return 1 if failed else 0
