"""``kozel play``: play a bot against house bots or another bot, N matches, and say how strong
it is (wins, draws, losses, the score and the Elo difference with 95 % intervals, an optional
SPRT), as fastchess and cutechess do for chess engines."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

if TYPE_CHECKING:
    from kozel.tools.playoff import Fixture, PlaySpec, Tally
    from kozel.v1 import game_pb2 as pb


DESCRIPTION = (
    "Play --bot against --vs for --matches matches (seats rotated; two-sided matches in pairs "
    "on one seed with the sides swapped) and print wins, draws, losses, the score and Elo "
    "difference with 95 % intervals, then what went wrong for each bot (forfeits, timeouts, "
    "refused answers, exceptions, exit statuses, with the log and replay of the first match of "
    "each). A bot is a house bot name (random, greedy, ismcts) or a command, started once per "
    "match: {server} and {table} are filled in (else --server ADDR --table ID are appended), "
    "{name} optionally; a command starting with a .py file runs it with this Python. A bot "
    "that ends before its match starts stops the run at once."
)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "play",
        help="play a bot against others N times and measure its strength",
        description=DESCRIPTION,
    )
    p.add_argument(
        "--bot",
        required=True,
        help="house bot name or command, e.g. 'mybot.py {server} {table}'",
    )
    p.add_argument("--vs", default="greedy", help="the opponent(s): house bot or command")
    p.add_argument("--matches", type=int, default=100, help="matches to play (at most)")
    p.add_argument("--ruleset", default="classic", help="preset name (RULES.md)")
    p.add_argument("--options", default="{}", help="knob overrides as JSON")
    p.add_argument(
        "--players",
        type=int,
        default=2,
        help="seats; at four the bot plays one team (both its seats)",
    )
    p.add_argument("--concurrency", type=int, default=2, help="matches played at once")
    p.add_argument("--server", help="use this referee instead of starting one")
    p.add_argument(
        "--referees",
        type=int,
        help="referee processes to start (default: one per "
        "concurrent match when every seat is a house bot, else one)",
    )
    p.add_argument("--move-ms", type=int, help="per-move allowance (default: the referee's)")
    p.add_argument("--bank-ms", type=int, help="time bank per match (default: the referee's)")
    _add_sprt_args(p)
    p.add_argument("--seed", help="64 hex digits: repeatable match seeds")
    p.add_argument(
        "--replay-dir",
        type=Path,
        default=Path("data/play-replays"),
        help="where referees started here write replays (and bot logs, in play-logs/, named "
        "by match id)",
    )
    p.add_argument(
        "--max-time",
        type=float,
        metavar="SECONDS",
        help="start no match after this long (running ones finish and count)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_play)


def _add_sprt_args(p: argparse.ArgumentParser) -> None:
    """The sequential test's flags."""
    p.add_argument(
        "--sprt",
        nargs=2,
        type=float,
        metavar=("ELO0", "ELO1"),
        help="stop once a sequential test accepts Elo = ELO0 or Elo = ELO1",
    )
    p.add_argument(
        "--sprt-luck",
        action="store_true",
        help="run the SPRT on the luck-corrected score of each pair of matches (docs/luck.md)",
    )
    p.add_argument("--alpha", type=float, default=0.05, help="SPRT false-positive rate")
    p.add_argument("--beta", type=float, default=0.05, help="SPRT false-negative rate")


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def cmd_play(args: argparse.Namespace) -> int:
    """Play the matches and print the figures: 2 for bad arguments, 1 when a bot could not
    start or every match ended in an error, else 0."""
    from kozel.engine import RulesError

    try:
        spec, tally, todo = _plan(args)
    except (ValueError, RulesError) as exc:
        return _fail(str(exc))
    console = Console(stderr=args.json)
    if not args.json:
        console.print(f"bot logs: {spec.log_dir.resolve()}", highlight=False, soft_wrap=True)
    with contextlib.ExitStack() as stack:
        addresses = _referees(args, spec, stack)
        _play(args, spec, tally, todo, addresses, console)
    return _report(args, spec, tally, console)


def _plan(args: argparse.Namespace) -> tuple[PlaySpec, Tally, Iterator[Fixture]]:
    """What to play, its tally and its fixtures, from the arguments (ValueError or RulesError
    says what is wrong); makes the replay and bot log folders."""
    from kozel.engine import Ruleset
    from kozel.engine.shuffle import seed_from
    from kozel.sdk import HOUSE_BOTS
    from kozel.tools.elo import Sprt
    from kozel.tools.playoff import PlaySpec, Tally, entrant, fixtures

    options = json.loads(args.options)
    if not isinstance(options, dict):
        raise ValueError("must be a JSON object")
    rules = Ruleset.preset(args.ruleset, options)
    rules.check_players(args.players)
    bot = entrant(args.bot, set(HOUSE_BOTS))
    vs = entrant(args.vs, set(HOUSE_BOTS))
    sprt = Sprt(args.sprt[0], args.sprt[1], args.alpha, args.beta) if args.sprt else None
    seed = seed_from(args.seed) if args.seed else None
    if args.matches < 1 or args.concurrency < 1:
        raise ValueError("--matches and --concurrency must be at least 1")
    teams = rules.teams(args.players)
    two_sides = args.players == 2 or teams
    if sprt is not None and not two_sides:
        raise ValueError("--sprt needs two sides (two players, or four in teams)")
    if args.sprt_luck and sprt is None:
        raise ValueError("--sprt-luck needs --sprt")
    args.replay_dir.mkdir(parents=True, exist_ok=True)
    log_dir = args.replay_dir / "play-logs"
    log_dir.mkdir(exist_ok=True)
    ruleset, clock = _table_settings(args, options)
    spec = PlaySpec(bot, vs, ruleset, args.players, teams, clock, log_dir)
    todo = fixtures(args.players, teams, args.matches, seed)
    return spec, Tally(args.players, two_sides, sprt, sprt_luck=args.sprt_luck), todo


def _table_settings(
    args: argparse.Namespace, options: dict[str, object]
) -> tuple[pb.Ruleset, pb.TimeControl | None]:
    """The tables' ruleset and, when --move-ms or --bank-ms is given, their clock."""
    from kozel.core.convert import dict_to_struct
    from kozel.v1 import game_pb2 as pb

    ruleset = pb.Ruleset(preset=args.ruleset)
    if options:
        ruleset.options.CopyFrom(dict_to_struct(options))
    clock = None
    if args.move_ms is not None or args.bank_ms is not None:
        clock = pb.TimeControl(move_ms=args.move_ms or 0, bank_ms=args.bank_ms or 0)
    return ruleset, clock


def _referees(args: argparse.Namespace, spec: PlaySpec, stack: contextlib.ExitStack) -> list[str]:
    """The referees' addresses: --server, or referee processes started here until ``stack``
    closes (--referees of them; by default one per concurrent match when every seat is a
    house bot, else one)."""
    from kozel.tools.local import referee_process

    if args.server:
        return [args.server]
    house_only = not spec.bot.command and not spec.vs.command
    n_referees = args.referees or (args.concurrency if house_only else 1)
    data = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kozel-play-")))
    addresses = []
    for k in range(max(1, n_referees)):
        (data / str(k)).mkdir()
        addresses.append(
            stack.enter_context(referee_process(args.replay_dir, "--data-dir", str(data / str(k))))
        )
    return addresses


def _play(
    args: argparse.Namespace,
    spec: PlaySpec,
    tally: Tally,
    todo: Iterator[Fixture],
    addresses: list[str],
    console: Console,
) -> None:
    """Play the fixtures under a progress bar showing the tally; SIGTERM or Ctrl-C stops
    the run, and the matches finished by then count."""
    from kozel.tools.playoff import run

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    title = f"{spec.bot.label} vs {spec.vs.label}"
    with Progress(*columns, console=console, transient=args.json) as progress:
        task = progress.add_task(title, total=args.matches)

        def on_done(out: object) -> None:
            w, d, lo = tally.wdl
            llr = tally.llr()
            extra = f" LLR {llr:+.2f}" if llr is not None else ""
            progress.update(task, advance=1, description=f"{title}: +{w} ={d} -{lo}{extra}")

        with _stop_on_sigterm(console) as stop:
            try:
                run(
                    spec,
                    addresses,
                    todo,
                    args.concurrency,
                    tally,
                    on_done,
                    max_time_s=args.max_time,
                    stop=stop,
                )
            except KeyboardInterrupt:
                console.print("interrupted: the figures cover the finished matches")


@contextlib.contextmanager
def _stop_on_sigterm(console: Console) -> Iterator[threading.Event]:
    """An event that SIGTERM sets while in the block (start nothing new, report what
    finished); the previous handler is back afterwards."""
    stop = threading.Event()

    def finish(signum: int, frame: object) -> None:
        stop.set()
        console.print("stopping: the running matches finish and count")

    previous = signal.signal(signal.SIGTERM, finish)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGTERM, previous)


def _report(args: argparse.Namespace, spec: PlaySpec, tally: Tally, console: Console) -> int:
    """Print the summary (JSON, or the table and what went wrong) and why the run stopped if
    a bot could not start; the exit status."""
    summary = tally.summary()
    summary.update(
        bot=spec.bot.label,
        vs=spec.vs.label,
        ruleset=args.ruleset,
        players=args.players,
        teams=spec.teams,
    )
    if args.json:
        print(json.dumps(summary, indent=2))
    elif summary["matches"] or tally.stopped is None:
        console.print(render(summary))
        print("\n".join(plain_lines(summary, spec.log_dir.resolve())))
    if tally.stopped is not None:
        print("\n".join(stopped_lines(summary["stopped"])), file=sys.stderr)  # type: ignore[arg-type]
        return 1
    errors = summary["errors"]
    return 1 if errors and len(errors) == summary["matches"] else 0  # type: ignore[arg-type]


def stopped_lines(stopped: dict) -> list[str]:
    """Why the run stopped: the bot that could not start, its log and its last lines."""
    role = "bot" if stopped["role"] == "bot" else "opponent"
    lines = [
        (
            f"error: the {role} could not start: {stopped['command']!r} ended "
            f"({stopped['exit']}) before its match started"
        ),
        f"its log: {stopped['log']}" + (", last lines:" if stopped["last_lines"] else " (empty)"),
    ]
    return lines + [f"  {line}" for line in stopped["last_lines"]]


def plain_lines(s: dict, log_dir: Path) -> list[str]:
    """What follows the table, printed whole (paths are never cut): the lost matches'
    replays, errors, and each bot's failures."""
    from kozel.tools.local import kozel_command
    from kozel.tools.play_diag import render_lines

    lines = []
    lost = s["losses_replays"]
    if lost:
        lines.append(f"Lost matches ({kozel_command()} replay show FILE):")
        lines += [f"  {path}" for path in lost[:10]]
        if len(lost) > 10:
            lines.append(f"  ... {len(lost) - 10} more (--json lists all)")
    if s["errors"]:
        lines.append("Errors:")
        lines += [f"  {err}" for err in s["errors"][:5]]
    lines.append(f"What went wrong (bot logs in {log_dir}):")
    labels = {"bot": f"  bot {s['bot']}", "vs": f"  opponent {s['vs']}"}
    return lines + render_lines(s["failures"], labels)


def _num(x: object, fmt: str = "{:.1f}") -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float) and math.isinf(x):
        return "+inf" if x > 0 else "-inf"
    return fmt.format(x)


def render(s: dict) -> Table:
    """The final table."""
    table = Table(
        title=f"{s['bot']} vs {s['vs']}: {s['ruleset']}, {s['players']} players"
        f"{' (teams)' if s['teams'] else ''}",
        show_header=False,
    )
    table.add_column("what")
    table.add_column("value")
    table.add_row(
        "matches", f"{s['matches']} ({s['aborted']} aborted)" if s["aborted"] else str(s["matches"])
    )
    table.add_row("wins / draws / losses", f"{s['wins']} / {s['draws']} / {s['losses']}")
    if "average_penalty" in s:
        table.add_row("average penalty (bot's side)", _num(s["average_penalty"], "{:.2f}"))
    if "average_chips" in s:
        table.add_row("average chips (bot)", _num(s["average_chips"], "{:.2f}"))
    table.add_row("timeouts / forfeits (bot)", f"{s['timeouts']} / {s['forfeits']}")
    table.add_row(
        "timeouts / forfeits (opponents)", f"{s['opponent_timeouts']} / {s['opponent_forfeits']}"
    )
    sc = s["score"]
    table.add_row(
        "score (95 % interval)",
        f"{_num(sc['value'], '{:.3f}')} "
        f"[{_num(sc['low'], '{:.3f}')}, {_num(sc['high'], '{:.3f}')}]",
    )
    if "elo" in s:
        table.add_row("Elo difference (95 %)", _elo(s["elo"], sc["value"]))
        table.add_row("pairs LL LD WL+DD WD WW", " ".join(map(str, s["pentanomial"])))
    else:
        table.add_row(
            "win rate (equal share)", f"{_num(s['win_rate'], '{:.3f}')} ({s['fair_share']:.3f})"
        )
    if "luck" in s:
        _luck_rows(table, s["luck"])
    if "sprt" in s:
        t = s["sprt"]
        low, high = t["bounds"]
        table.add_row(
            f"SPRT [{t['elo0']:g}, {t['elo1']:g}] a={t['alpha']:g} b={t['beta']:g}"
            + (" (luck-corrected)" if t.get("statistic") == "luck-corrected pairs" else ""),
            f"LLR {t['llr']:.2f} ({low:.2f}, {high:.2f}): "
            + (
                f"{t['result']} accepted after {t['decided_after']} matches "
                f"(LLR {t['decided_llr']:.2f})"
                if t["result"]
                else "undecided"
            ),
        )
    return table


def _elo(e: dict, score: float | None) -> str:
    """The Elo difference and its interval; "n/a" says why (a score of 0 or 1 has no
    finite Elo, and an interval reaching 0 or 1 has no finite bound)."""
    if e["value"] is None:
        if score is None:
            return "n/a (no match finished)"
        return f"n/a (every match {'won' if score >= 0.5 else 'lost'}: no finite Elo fits)"
    low = _num(e["low"]) if e["low"] is not None else "-inf"
    high = _num(e["high"]) if e["high"] is not None else "+inf"
    return f"{_num(e['value'])} [{low}, {high}]"


def _interval(e: dict, fmt: str = "{:.3f}") -> str:
    return f"{_num(e['value'], fmt)} [{_num(e['low'], fmt)}, {_num(e['high'], fmt)}]"


def _luck_rows(table: Table, luck: dict) -> None:
    """The luck-corrected figures (docs/luck.md): the score, its Elo, and how many plain
    matches one corrected match was worth in this run."""
    table.add_row("score, luck-corrected (95 %)", _interval(luck["score"]["corrected"]))
    if "elo" in luck:
        corrected = luck["score"]["corrected"]["value"]
        table.add_row("Elo, luck-corrected (95 %)", _elo(luck["elo"], corrected))
    elif luck["score"]["corrected"]["value"] is None:
        table.add_row("Elo, luck-corrected (95 %)", "n/a (too few matches)")
    table.add_row(
        "luck: effective matches per match",
        f"{_interval(luck['score']['multiplier'], '{:.2f}')} "
        f"(per deal, card points: {_interval(luck['deal_points']['multiplier'], '{:.2f}')})",
    )
