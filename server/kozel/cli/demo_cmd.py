"""``kozel demo``: a referee with its embedded defaults and house bots, each a separate
process over gRPC, playing a small ladder; prints standings and every replay path."""

from __future__ import annotations

import argparse
import itertools
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kozel.tools.local import (
    create_table,
    describe_result,
    kozel_command,
    referee_process,
    sides_text,
    spawn_bot,
    wait_table,
)
from kozel.v1 import referee_pb2 as rpb

ENTRANTS = {"greedy-1": "greedy", "greedy-2": "greedy", "random-1": "random", "random-2": "random"}


@dataclass(frozen=True)
class Fixture:
    preset: str
    entrants: tuple[str, ...]  # by seat


def fixtures() -> list[Fixture]:
    """A round robin of two-player classic, plus a three-player and a team game."""
    pairs = [Fixture("classic", pair) for pair in itertools.combinations(ENTRANTS, 2)]
    return pairs + [
        Fixture("classic", ("greedy-1", "random-1", "random-2")),
        Fixture("classic", ("greedy-1", "random-1", "greedy-2", "random-2")),  # teams
        Fixture("balkan", ("random-2", "greedy-2")),
    ]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="a referee and house bots playing a small ladder")
    p.add_argument("--replay-dir", type=Path, default=Path("data/demo-replays"))
    p.add_argument("--parallel", type=int, default=2, help="matches played at once")
    p.set_defaults(func=cmd_demo)


def play_fixture(address: str, fx: Fixture) -> rpb.WaitTableResponse:
    table_id = create_table(address, fx.preset, len(fx.entrants))
    procs = [spawn_bot(ENTRANTS[name], address, table_id, name) for name in fx.entrants]
    try:
        return wait_table(address, table_id)
    finally:
        for proc in procs:
            proc.wait(timeout=30)


def cmd_demo(args: argparse.Namespace) -> int:
    console = Console()
    todo = fixtures()
    done: list[tuple[Fixture, rpb.WaitTableResponse]] = []
    console.print(
        f"[bold]Kozel Arena demo[/]: a referee and {len(ENTRANTS)} house bots "
        f"(each a separate process) play {len(todo)} matches over gRPC (about 10 s)"
    )
    with referee_process(args.replay_dir) as address:
        console.print(f"referee listening on {address}, replays in {args.replay_dir}/")
        columns = (
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
        )
        with (
            Progress(*columns, console=console) as progress,
            ThreadPoolExecutor(max_workers=args.parallel) as pool,
        ):
            task = progress.add_task("playing", total=len(todo))
            futures = {pool.submit(play_fixture, address, fx): fx for fx in todo}
            for fut, fx in futures.items():
                res = fut.result()
                done.append((fx, res))
                progress.console.print(
                    f"  {fx.preset} {sides_text(list(res.seating))}: "
                    f"{describe_result(res.result, list(res.seating))}"
                )
                progress.advance(task)
    console.print(standings(done))
    kozel = kozel_command()
    console.print(
        f"[bold]Replays[/] ({kozel} replay show FILE, {kozel} replay verify FILE):",
        highlight=False,
    )
    for _, res in done:
        console.print(f"  {res.replay_path}")
    _browser_hint(console, args.replay_dir, [Path(res.replay_path) for _, res in done])
    return 0


def _browser_hint(console: Console, replay_dir: Path, paths: list[Path]) -> None:
    """How to look at the replays in a browser: an HTML file per match, or the web pages."""
    from kozel.server.replay.file import read_replay
    from kozel.web.html_export import replay_html

    pages = []
    for path in paths:
        html = path.with_suffix(".html")
        html.write_text(replay_html(read_replay(path)), encoding="utf-8")
        pages.append(html)
    console.print(
        "[bold]In a browser[/]: open one of these files (each holds the viewer and "
        "its match, and works offline):",
        highlight=False,
    )
    for html in pages:
        console.print(f"  file://{html.resolve()}", markup=False, highlight=False, soft_wrap=True)
    console.print(
        "or serve the web pages over the replay folder:\n"
        f"  {kozel_command()} web --replays {replay_dir}\n"
        f"  then open http://127.0.0.1:8080/matches/{paths[0].stem if paths else 'ID'}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


def standings(done: list[tuple[Fixture, rpb.WaitTableResponse]]) -> Table:
    """Wins, draws and losses per entrant."""
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for _, res in done:
        for p in res.seating:
            row = rows[p.name]
            row[0] += 1
            if res.result.draw:
                row[2] += 1
            elif p.side == res.result.winner_side:
                row[1] += 1
            else:
                row[3] += 1
    table = Table(title="Standings")
    for col in ("bot", "played", "won", "drawn", "lost"):
        table.add_column(col, justify="right" if col != "bot" else "left")
    for name, (played, won, drawn, lost) in sorted(
        rows.items(), key=lambda kv: (-kv[1][1], kv[1][3])
    ):
        table.add_row(name, str(played), str(won), str(drawn), str(lost))
    return table
