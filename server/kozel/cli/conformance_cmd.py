"""``kozel conformance --bot-cmd 'COMMAND'``: put a bot through the conformance checks."""

from __future__ import annotations

import argparse
import asyncio

# The checker (and the referee it stages) loads only when the command runs: every `kozel`
# command builds this parser, and `kozel health` must start fast.
TABLE = "conformance"  # the table a hand-started bot must join (kozel.tools.conformance.TABLE)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("conformance", help="check that a bot handles every situation")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--bot-cmd",
        help="command that starts the bot; {server} and {table} "
        "are filled in, else --server ADDR --table conformance are appended",
    )
    where.add_argument(
        "--listen",
        help="serve on this address and wait for a bot started by "
        f"hand (it must join table {TABLE!r})",
    )
    p.add_argument("--move-ms", type=int, default=2000, help="the deadline of every request")
    p.add_argument("--show-output", action="store_true", help="print the bot's output")
    p.set_defaults(func=cmd_conformance)


def cmd_conformance(args: argparse.Namespace) -> int:
    output = ""
    if args.bot_cmd:
        from kozel.tools.conformance import check_command

        checks, output = check_command(args.bot_cmd, move_ms=args.move_ms)
    else:
        from kozel.tools.conformance import run_checks

        runs = 0

        def ready(address: str) -> None:
            nonlocal runs
            runs += 1
            again = " again, for the redirect checks" if runs > 1 else ""
            print(f"start the bot{again}: waiting on {address} (table {TABLE!r}) ...", flush=True)

        checks = asyncio.run(run_checks(ready, move_ms=args.move_ms, connect_timeout=600))
    for check in checks:
        print(check.line())
    failed = sum(not c.passed for c in checks)
    print(f"conformance: {len(checks) - failed} passed, {failed} failed")
    if (args.show_output or failed) and output:
        print("--- bot output ---")
        print(output.rstrip())
    return 1 if failed else 0
