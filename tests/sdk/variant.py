"""A house bot with some knobs set, as a remote client: for ``kozel play`` measurements of one
version of a bot against another (both as commands, so both run alike).

    kozel play --bot "python -m tests.sdk.variant ismcts {server} {table}" \\
               --vs "python -m tests.sdk.variant ismcts {server} {table} --set open_talon=4"
"""

from __future__ import annotations

import argparse
import json

from kozel.sdk import HOUSE_BOTS, Bot, run_bot


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kind", choices=sorted(HOUSE_BOTS))
    ap.add_argument("server")
    ap.add_argument("table")
    ap.add_argument("--set", action="append", default=[], help="ATTR=JSON on the bot")
    ap.add_argument("--name", default=None)
    args = ap.parse_args()
    attrs = {k: json.loads(v) for k, v in (s.split("=", 1) for s in args.set)}

    def make() -> Bot:
        bot = HOUSE_BOTS[args.kind]()
        for k, v in attrs.items():
            if not hasattr(bot, k):
                raise SystemExit(f"{args.kind} has no knob {k!r}")
            setattr(bot, k, v)
        return bot

    run_bot(make, args.server, name=args.name or args.kind, join_table=args.table, matches=1)


if __name__ == "__main__":
    main()
