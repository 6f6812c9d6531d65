"""``kozel demo``: a few engine-only matches between built-in random players.

The referee issue replaces this with house bots playing over gRPC.
"""

from __future__ import annotations

import argparse
import random

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from kozel.engine.match import Match
from kozel.engine.players import random_action
from kozel.engine.rules import Ruleset

DEMO_TABLES = (("classic", 2), ("classic", 3), ("classic", 4), ("balkan", 2), ("money", 3))


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="play a small demo of engine-only matches")
    p.add_argument("--matches", type=int, default=2, help="matches per table")
    p.add_argument("--seed", type=int, default=2026)
    p.set_defaults(func=cmd_demo)


def play_match(rules: Ruleset, players: int, seed: int) -> Match:
    """Play one match between random players to its end."""
    match = Match(rules, players, seed)
    rng = random.Random(seed)
    while not match.over:
        seat = match.deal.to_act[0]
        match.apply(seat, random_action(match.deal, seat, rng))
    return match


def cmd_demo(args: argparse.Namespace) -> int:
    console = Console()
    table = Table(title="Kozel demo: random players, engine only")
    for col in ("ruleset", "players", "seed", "deals", "result", "winner"):
        table.add_column(col)
    jobs = [(name, n, args.seed + i * 100 + k)
            for i, (name, n) in enumerate(DEMO_TABLES) for k in range(args.matches)]
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("playing", total=len(jobs))
        for name, n, seed in jobs:
            m = play_match(Ruleset.preset(name), n, seed)
            if m.rules.is_money:
                result = "chips " + " ".join(f"{c:+d}" for c in m.chips)
            else:
                result = "penalties " + " ".join(map(str, m.board.totals))
            winner = "draw" if m.winner is None else f"side {m.winner}"
            table.add_row(name, str(n), str(seed), str(len(m.records)), result, winner)
            progress.advance(task)
    console.print(table)
    return 0
