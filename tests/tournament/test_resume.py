"""A tournament's referee is killed (SIGKILL) in the middle of a round and started again: the
event goes on from its last finished game and ends with the standings, crosstable and every
game result of an uninterrupted run with the same seed (greedy and seeded random house bots
play the same game the same way), their luck-corrected figures included."""

from __future__ import annotations

import signal
from pathlib import Path

import yaml

from kozel.ladder import tournament_store as ts
from kozel.ladder.store import Store
from kozel.server.tournament_archive import results_json
from tests.ladder.fleet import wait
from tests.server.conftest import RefereeProcess, start_referee_process

EVENT = {
    "name": "resume",
    "seed": "5e" * 32,
    "ruleset": {"preset": "classic", "options": {"fixed_deals": 2}},
    "time_control": {"move_ms": 5000, "bank_ms": 20000, "grace_ms": 2000},
    "groups": 2,
    "max_concurrent_games": 4,
    "bots": [
        {"name": "greedy-a", "house": "greedy"},
        {"name": "greedy-b", "house": "greedy"},
        {"name": "random-a", "house": "random"},
        {"name": "random-b", "house": "random"},
        {"name": "random-c", "house": "random"},
        {"name": "greedy-c", "house": "greedy"},
    ],
    "stages": [{"format": "round_robin"}],
    "winners": ["standings", "total_score", "instant_runoff", "copeland"],
}


def _serve(home: Path, events: Path) -> RefereeProcess:
    return start_referee_process(
        home / "replays", "--tournaments", str(events), "--data-dir", str(home / "data")
    )


def _view(store: Store) -> ts.View:
    view = ts.view(store, "resume")
    assert view is not None
    return view


def _cut(store: Store, finished: int) -> bool:
    """At least ``finished`` games are over and some are in play: the moment to kill."""
    view = ts.view(store, "resume")
    assert view is not None
    states = [g.status for g in view.games.values()]
    return states.count("finished") >= finished and "running" in states


def _outcome(store: Store) -> tuple[dict, dict]:
    view = ts.view(store, "resume")
    assert view is not None and view.state.done
    results = {r.key: r.points for r in view.state.results}
    body = results_json(view)
    standings = [st["standings"] for st in body["stages"]]  # (match ids differ, of course)
    return results, {"standings": standings, "cross": body["crosstable"], "won": body["winners"]}


def _luck_known(view: ts.View) -> bool:
    return all(r.luck_corrected is not None for r in view.state.results)


def _fate(game: ts.GameRow, match_id: str | None) -> str:
    """What became of a game in play at the kill."""
    if game.attempts:
        return "again"
    return "kept" if game.match_id == match_id else "changed"


def _run(home: Path, events: Path, kill_after: int | None) -> tuple[dict, dict, dict]:
    """Play the event (killing its referee once ``kill_after`` games are over); returns the
    results, what is shown, and each game in play at the kill: whether it was played again
    or kept from its finished replay (its match id unchanged)."""
    ref = _serve(home, events)
    store = Store(f"sqlite:///{home / 'data' / 'kozel.db'}")
    cut: dict[str, str | None] = {}
    try:
        wait(lambda: ts.load(store, "resume") is not None, "the event is registered", 60)
        if kill_after is not None:
            wait(lambda: _cut(store, kill_after), "games finished and others in play", 300, 0.05)
            ref.proc.send_signal(signal.SIGKILL)
            ref.proc.wait(30)
            games = _view(store).games.values()
            cut = {g.key: g.match_id for g in games if g.status == "running"}
            ref = _serve(home, events)
        wait(lambda: _view(store).state.done, "the event ends", 600)
        # Every game's luck, computed by the referee after the game (the shown figures have it).
        wait(lambda: _luck_known(_view(store)), "every game's luck is computed", 120)
        after = _view(store).games
        how = {k: _fate(after[k], m) for k, m in cut.items()}
        results, shown = _outcome(store)
    finally:
        ref.proc.terminate()
        ref.proc.wait(60)
        store.close()
    return results, shown, how


def test_a_killed_referee_resumes_to_the_same_standings(tmp_path: Path) -> None:
    events = tmp_path / "t.yaml"
    events.write_text(yaml.safe_dump({"tournaments": [EVENT]}))
    whole, shown, _ = _run(tmp_path / "whole", events, None)
    cut, cut_shown, how = _run(tmp_path / "cut", events, kill_after=12)
    # A game in play at the kill is played again, or (when its replay was already written)
    # kept as it ended: never lost, never played twice.
    assert how and set(how.values()) <= {"again", "kept"}, how
    assert len(whole) == 15 * 2 * 2
    assert cut == whole
    assert cut_shown == shown
