"""``kozel tournament``: run an event (from a YAML file or flags) on a private referee, check
a file, show an event's standings, crosstable and winners, or download all its replays.

``run`` starts ``kozel serve --tournaments`` on this machine with the event's data folder,
follows the store until every event of the file is over, then stops the referee and prints
the results. Stopped (Ctrl-C) and started again with the same data folder, it goes on from
the last finished game.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kozel.ladder.store import Store

RUN_DIR = Path("data/tournament")
UNSEAL_WAIT_S = 30.0  # after the end, how long the last replays may take to be unsealed
LUCK_HEAD = "luck-corrected [95 %]"  # game points per game, the cards' share taken out


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tournament",
        help="run and read tournaments (round robin, gauntlet, Swiss, knockout)",
        description="Tournaments: docs/tournaments.md.",
    )
    tsub = p.add_subparsers(dest="action", required=True)
    run = tsub.add_parser("run", help="run events on a private referee, then print the results")
    run.add_argument("file", nargs="?", type=Path, help="a tournament file (YAML)")
    _flags(run)
    run.add_argument("--data-dir", type=Path, default=RUN_DIR, help="the events' store and replays")
    run.add_argument("--db", default="", help="a database URL (PostgreSQL) instead of SQLite")
    run.add_argument("--web-listen", default="", help="serve the web pages meanwhile (host:port)")
    run.add_argument("--archive", type=Path, help="write every replay to this zip file at the end")
    run.add_argument("--json", action="store_true", help="the results as JSON")
    run.add_argument("--quiet", action="store_true", help="no progress lines")
    run.set_defaults(func=cmd_run)
    check = tsub.add_parser("check", help="validate a tournament file")
    check.add_argument("file", type=Path)
    check.set_defaults(func=cmd_check)
    for name, func, text in (
        ("show", cmd_show, "an event's progress, standings, crosstable and winners"),
        ("replays", cmd_replays, "every replay of an event as one zip file"),
        ("list", cmd_list, "the events in a store"),
    ):
        q = tsub.add_parser(name, help=text)
        if name != "list":
            q.add_argument("name", help="the event's name")
        q.add_argument("--data-dir", type=Path, default=RUN_DIR, help="the store's folder")
        q.add_argument("--db", default="", help="a database URL instead of the data folder")
        if name == "show":
            q.add_argument("--json", action="store_true")
        if name == "replays":
            q.add_argument("-o", "--output", type=Path, required=True)
            q.add_argument("--replays", type=Path, help="the replay folder (default: data's)")
        q.set_defaults(func=func)


def _flags(p: argparse.ArgumentParser) -> None:
    """An event from flags, when no file is given."""
    p.add_argument("--name", default="cup", help="the event's name (flags)")
    p.add_argument(
        "--format", choices=("round_robin", "gauntlet", "swiss", "knockout"), default="round_robin"
    )
    p.add_argument(
        "--bots",
        default="",
        help="comma-separated: a house bot (greedy), NAME:KIND for a named one, "
        "NAME=COMMAND for a command ('{server} {table}' as in kozel play)",
    )
    p.add_argument("--players", type=int, default=2)
    p.add_argument("--ruleset", default="classic")
    p.add_argument("--options", default="{}", help="ruleset options as JSON")
    p.add_argument("--groups", type=int, default=1, help="seed groups per pairing")
    p.add_argument("--rounds", type=int, default=3, help="Swiss rounds")
    p.add_argument("--cycles", type=int, default=1, help="round robin or gauntlet cycles")
    p.add_argument("--challengers", default="", help="gauntlet: comma-separated bot names")
    p.add_argument("--elimination", choices=("single", "double"), default="single")
    p.add_argument("--seed", default="", help="64 hex digits (default: drawn once)")


def flag_event(args: argparse.Namespace) -> dict[str, Any]:
    """The tournament file that the flags describe."""
    bots: list[dict[str, Any]] = []
    names: set[str] = set()
    for item in [b.strip() for b in args.bots.split(",") if b.strip()]:
        if "=" in item:
            name, command = item.split("=", 1)
            bot: dict[str, Any] = {"name": name.strip(), "command": command.strip()}
        else:
            name, _, kind = item.rpartition(":")
            bot = {"name": name or kind, "house": kind}
        base, n = bot["name"], 1
        while bot["name"] in names:
            n += 1
            bot["name"] = f"{base}-{n}"
        names.add(bot["name"])
        bots.append(bot)
    stage: dict[str, Any] = {"format": args.format}
    if args.format == "swiss":
        stage["rounds"] = args.rounds
    if args.format in ("round_robin", "gauntlet"):
        stage["cycles"] = args.cycles
    if args.format == "gauntlet":
        stage["challengers"] = [c.strip() for c in args.challengers.split(",") if c.strip()]
    if args.format == "knockout":
        stage["elimination"] = args.elimination
    event = {
        "name": args.name,
        "players": args.players,
        "ruleset": {"preset": args.ruleset, "options": json.loads(args.options)},
        "groups": args.groups,
        "bots": bots,
        "stages": [stage],
        "winners": ["standings", "total_score", "instant_runoff"],
    }
    if args.seed:
        event["seed"] = args.seed
    return {"tournaments": [event]}


def cmd_check(args: argparse.Namespace) -> int:
    from kozel.ladder.config import ConfigError
    from kozel.ladder.tournament_file import load_tournaments

    try:
        events = load_tournaments(args.file)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for e in events:
        stages = " then ".join(s.format for s in e.stages)
        print(
            f"{e.name}: {len(e.bots)} bots, {e.players} a table, {stages}, {e.groups} seed group(s)"
        )
    return 0


def _event_file(args: argparse.Namespace) -> Path | int:
    """The tournament file to serve: the one given, or the flags' written to the data folder."""
    import yaml

    from kozel.ladder.config import ConfigError
    from kozel.ladder.tournament_file import load_tournaments, parse

    try:
        if args.file is not None:
            load_tournaments(args.file)
            return args.file.resolve()
        data = flag_event(args)
        parse(data, "flags")
    except (ConfigError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.data_dir.mkdir(parents=True, exist_ok=True)
    path = args.data_dir / "tournament.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path.resolve()


def cmd_run(args: argparse.Namespace) -> int:
    from kozel.ladder.tournament_file import load_tournaments
    from kozel.tools.local import referee_process

    path = _event_file(args)
    if isinstance(path, int):
        return path
    events = [e.name for e in load_tournaments(path)]
    extra = [
        "--tournaments",
        str(path),
        "--data-dir",
        str(args.data_dir),
        "--web-listen",
        args.web_listen,
    ]
    extra += ["--db", args.db] if args.db else []
    replays = args.data_dir / "replays"
    try:
        with referee_process(replays, *extra) as address:
            if not args.quiet:
                print(f"referee on {address}; events: {', '.join(events)}", file=sys.stderr)
            _follow(args, events)
    except KeyboardInterrupt:
        print(
            "\nstopped; run the same command again to go on from the last finished game",
            file=sys.stderr,
        )
        return 130
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return _results(args, events)


def _follow(args: argparse.Namespace, events: list[str]) -> None:
    """Wait for every event to end and its replays to be unsealed, printing progress when it
    changes."""
    from kozel.ladder import tournament_store as ts

    store = _store(args)
    try:
        last, over_at = "", None
        while True:
            views = [ts.view(store, name) for name in events]
            line = "; ".join(_progress(v) for v in views if v is not None)
            if line != last and not args.quiet:
                print(line, file=sys.stderr)
                last = line
            if views and all(v is not None and v.state.done for v in views):
                over_at = over_at or time.monotonic()
                if all(_unsealed(v) for v in views) or time.monotonic() - over_at > UNSEAL_WAIT_S:
                    return
            time.sleep(0.5)
    finally:
        store.close()


def _unsealed(view: Any) -> bool:
    """Every replay of the event is unsealed (its referee does that on its next poll)."""
    return not any(g.sealed for g in view.games.values())


def _progress(view: Any) -> str:
    state = view.state
    if state.done:
        return f"{view.name}: over"
    finished = sum(1 for g in view.games.values() if g.status == "finished")
    stage = state.stages[-1]
    rnd = stage.rounds[-1].label if stage.rounds else "-"
    running = sum(1 for g in view.games.values() if g.status in ("assigned", "running"))
    return (
        f"{view.name}: stage {stage.index + 1} ({stage.format}) round {rnd}: "
        f"{finished} games finished, {running} playing"
    )


def _results(args: argparse.Namespace, events: list[str]) -> int:
    from kozel.server.replay.archive import FolderArchive

    store = _store(args)
    try:
        _fill_luck(store, events, FolderArchive(args.data_dir / "replays"))
        if args.archive is not None:
            _archive(store, events[0], FolderArchive(args.data_dir / "replays"), args.archive)
        _print(store, events, args.json)
    finally:
        store.close()
    return 0


def _fill_luck(store: Store, events: list[str], replays: Any) -> None:
    """The luck of the games the referee's luck worker had not done when it stopped (the last
    ones: their replays are unsealed at the very end), computed here as it would have."""
    from kozel.server.luck_worker import LuckWorker
    from kozel.tools.replay_luck import ladder_luck

    worker = LuckWorker(store, replays, [], None, ladder_luck, tournaments=events)
    while worker.pass_once():
        pass


def _archive(store: Store, name: str, archive: Any, path: Path) -> None:
    from kozel.server import tournament_archive

    with path.open("wb") as fh:
        count = tournament_archive.write(store, name, archive, fh)
    print(f"{count} replays written to {path}", file=sys.stderr)


def _print(store: Store, events: list[str], as_json: bool) -> None:
    from kozel.ladder import tournament_store as ts
    from kozel.server.tournament_archive import results_json

    views = [v for v in (ts.view(store, n) for n in events) if v is not None]
    if as_json:
        body = [results_json(v) for v in views]
        print(json.dumps(body[0] if len(body) == 1 else body, indent=1))
        return
    for v in views:
        print(render(results_json(v)))


def render(event: dict[str, Any]) -> str:
    """An event's results as text: standings of each stage, the crosstable, the winners."""
    lines = [f"tournament {event['name']}: {'over' if event['done'] else 'under way'}"]
    for st in event["stages"]:
        lines.append(f"\n{st['name']} ({st['format']})")
        keys = list(st["standings"][0]["tie_breaks"]) if st["standings"] else []
        head = ["#", "bot", "score", "W-D-L", "games", "game pts", *keys, LUCK_HEAD]
        rows = [
            [
                str(r["place"] or r["rank"]),
                r["name"] + (" (withdrawn)" if r["withdrawn"] else ""),
                f"{r['score']:g}",
                f"{r['wins']}-{r['draws']:g}-{r['losses']}",
                str(r["games"]),
                f"{r['game_points']:g}",
                *(f"{r['tie_breaks'][k]:g}" for k in keys),
                _luck(r["luck_corrected"]),
            ]
            for r in st["standings"]
        ]
        lines += _table(head, rows)
    names = event["crosstable"]["names"]
    cells = event["crosstable"]["cells"]
    lines.append(
        "\ncrosstable: the row bot's score against the column bot, "
        "[95 % interval], P(row beats column); corrected for luck [95 % interval]"
    )
    for row in names:
        for col in names:
            c = cells.get(row, {}).get(col)
            if c is not None:
                lines.append(
                    f"  {row} vs {col}: {c['score']:.3f} [{c['low']:.2f}, {c['high']:.2f}] "
                    f"P={c['p_beats']:.2f} ({c['games']} games); "
                    f"luck-corrected {_luck(c['luck_corrected'])}"
                )
    if event["winners"]:
        lines.append("\nwinners: " + ", ".join(f"{k}: {v}" for k, v in event["winners"].items()))
    return "\n".join(lines)


def _luck(figures: dict[str, Any] | None) -> str:
    """A luck-corrected mean with its interval, as the tables show it."""
    if figures is None:
        return "-"
    if figures["low"] is None:
        return f"{figures['value']:.3f}"
    return f"{figures['value']:.3f} [{figures['low']:.2f}, {figures['high']:.2f}]"


def _table(head: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*head), *(fmt.format(*r) for r in rows)]


def _store(args: argparse.Namespace) -> Store:
    from kozel.ladder.store import Store, default_url

    if not args.db and not (Path(args.data_dir) / "kozel.db").exists():
        raise SystemExit(
            f"error: no store at {Path(args.data_dir) / 'kozel.db'} (give --data-dir or --db)"
        )
    store = Store(args.db or default_url(args.data_dir))
    store.migrate()
    return store


def _with_event(args: argparse.Namespace, then: Callable[[Store], None]) -> int:
    """Open the store, check it holds the event ``args.name``, and run ``then`` on it."""
    from kozel.ladder import tournament_store as ts

    store = _store(args)
    try:
        if ts.load(store, args.name) is None:
            print(f"error: no tournament {args.name!r} in this store", file=sys.stderr)
            return 1
        then(store)
    finally:
        store.close()
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    return _with_event(args, lambda store: _print(store, [args.name], args.json))


def cmd_replays(args: argparse.Namespace) -> int:
    from kozel.server.replay.archive import FolderArchive

    replays = FolderArchive(args.replays or args.data_dir / "replays")
    return _with_event(args, lambda store: _archive(store, args.name, replays, args.output))


def cmd_list(args: argparse.Namespace) -> int:
    from kozel.ladder import tournament_store as ts

    store = _store(args)
    try:
        for name in ts.names(store):
            view = ts.view(store, name)
            if view is not None:
                print(_progress(view))
    finally:
        store.close()
    return 0
