"""A round robin across three referees sharing one PostgreSQL: registered bots connected to
different referees and house bots; one referee schedules the event, its games are spread over
the referees, bots are redirected to the host of each game (none misses one: no forfeit), and
the event ends complete."""

from __future__ import annotations

from pathlib import Path

import yaml

from kozel.ladder import tournament_store as ts
from kozel.ladder.store import Store
from kozel.server.tournament_archive import results_json
from tests.ladder.fleet import bots, stop, wait
from tests.server.conftest import RefereeProcess, start_referee_process

ACCOUNTS = ["greedy-1", "greedy-2", "random-1", "random-2"]


def _event() -> dict:
    house = [
        {"name": "house-greedy", "house": "greedy"},
        {"name": "house-random", "house": "random"},
    ]
    return {
        "name": "rr3",
        "ruleset": {"preset": "classic", "options": {"fixed_deals": 1}},
        "time_control": {"move_ms": 3000, "bank_ms": 10000, "grace_ms": 3000},
        "groups": 1,
        "max_concurrent_games": 6,
        "bots": [{"name": n} for n in ACCOUNTS] + house,
        "forfeits": {"absent_wait_s": 120},
        "stages": [{"format": "round_robin"}],
        "winners": ["standings", "total_score", "instant_runoff"],
    }


def _referee(home: Path, name: str, events: Path, db: str) -> RefereeProcess:
    return start_referee_process(
        home / name / "replays",
        "--tournaments", str(events), "--db", db, "--referee-id", name, "--cluster",
        "--data-dir", str(home / name / "data"), "--lease", "3",
    )  # fmt: skip


def test_round_robin_across_three_referees(tmp_path: Path, pg_url: str) -> None:
    events = tmp_path / "t.yaml"
    events.write_text(yaml.safe_dump({"tournaments": [_event()]}))
    store = Store(pg_url)
    store.migrate()
    tokens = {n: store.register_bot(n) for n in ACCOUNTS}
    refs = {n: _referee(tmp_path, n, events, pg_url) for n in ("ref-a", "ref-b", "ref-c")}
    home = {bot: sorted(refs)[i % 3] for i, bot in enumerate(ACCOUNTS)}
    procs = []
    try:
        for bot, ref in home.items():
            procs += bots(refs[ref].address, "rr3", {bot: tokens[bot]})
        wait(lambda: (v := ts.view(store, "rr3")) is not None and v.state.done, "the end", 600)
        view = ts.view(store, "rr3")
    finally:
        stop(procs)
        stop(r.proc for r in refs.values())
    assert view is not None
    games = list(view.games.values())
    assert len(games) == 15 * 2 and all(g.status == "finished" for g in games)
    forfeited = [g.key for g in games if g.result is None or any(g.result["forfeited"])]
    assert not forfeited, "every bot was there: redirected bots reached their games"
    # Spread over the referees (a bot redirected to a game stays at its host, so the referee
    # it left may host nothing more: which ones do depends on timing).
    hosts = {g.host_id for g in games}
    assert hosts <= set(refs) and len(hosts) >= 2, f"games spread over the referees: {hosts}"
    moved = [
        g for g in games
        if len({home[n] for n in g.seats if n in home}) == 2  # bots waiting on two referees
    ]  # fmt: skip
    assert moved, "some games brought bots of two referees together (a redirect)"
    body = results_json(view)
    cells = body["crosstable"]["cells"]
    names = body["crosstable"]["names"]
    assert all(cells[a][b]["games"] == 2 for a in names for b in names if a != b)
    standings = body["stages"][0]["standings"]
    assert sum(r["game_points"] for r in standings) == 30
    assert body["winners"]["standings"] == standings[0]["name"]
    store.close()
