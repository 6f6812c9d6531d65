"""``kozel conformance --bot-cmd 'COMMAND'``: put a bot through the conformance checks."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

# The checker (and the referee it stages) loads only when the command runs: every `kozel`
# command builds this parser, and `kozel health` must start fast.
TABLE = "conformance"  # the table a hand-started bot must join (kozel.tools.conformance.TABLE)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "conformance",
        help="check that a bot handles every situation",
        description="Play a scripted match with the bot (staged situations, a refused answer, "
        "a dropped stream, then whole deals), then redirect it twice; print PASS, FAIL or "
        "SKIP with the reason for each check, and exit 1 if any failed.",
    )
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--bot-cmd",
        help="command that starts the bot; {server} and {table} "
        "are filled in, else --server ADDR --table conformance are appended; a command "
        "starting with a .py file runs it with this Python",
    )
    where.add_argument(
        "--listen",
        help="serve on this address and wait for a bot started by "
        f"hand (it must join table {TABLE!r})",
    )
    p.add_argument("--move-ms", type=int, default=2000, help="the deadline of every request")
    p.add_argument(
        "--log-dir",
        type=Path,
        default=Path("data/conformance"),
        help="where the bot's output goes (run1.log, run2.log; replaced on each run)",
    )
    p.add_argument("--show-output", action="store_true", help="print the end of the bot's output")
    p.set_defaults(func=cmd_conformance)


SHOWN_LINES = 40  # of each run's log, printed after a failure or with --show-output


def cmd_conformance(args: argparse.Namespace) -> int:
    from kozel.tools.conformance import CHECKS, EXITS, NO_EXCEPTION, check_command, run_checks

    logs: list[Path] = []
    if args.bot_cmd:
        checks, logs = check_command(args.bot_cmd, move_ms=args.move_ms, log_dir=args.log_dir)
    else:
        runs = 0

        def ready(address: str) -> None:
            nonlocal runs
            runs += 1
            again = " again, for the redirect checks" if runs > 1 else ""
            print(f"start the bot{again}: waiting on {address} (table {TABLE!r}) ...", flush=True)

        results = asyncio.run(run_checks(ready, move_ms=args.move_ms, connect_timeout=600))
        for name in (EXITS, NO_EXCEPTION):
            results.skip(name, "the bot was started by hand")
        checks = results.report(CHECKS, results.stopped)
    for check in checks:
        print(check.line())
    failed = sum(c.status == "FAIL" for c in checks)
    skipped = sum(c.status == "SKIP" for c in checks)
    print(
        f"conformance: {len(checks) - failed - skipped} passed, {failed} failed, "
        f"{skipped} skipped of {len(checks)} checks"
    )
    for log in logs:
        print(f"bot output: {log.resolve()}")
        if args.show_output or failed:
            lines = log.read_text(encoding="utf-8", errors="replace").rstrip().splitlines()
            print("\n".join(f"  {line}" for line in lines[-SHOWN_LINES:]))
    return 1 if failed else 0
