"""Luck-corrected tournament standings (docs/luck.md, docs/tournaments.md): real events of
house bots with fixed seeds, played by a real referee process; every played game's corrected
points, each entrant's corrected score with its 95 % interval (clustered by seed group) and
each crosstable cell's are what its replays give when recomputed here, at two players and at
four (teams: a seat takes its side's luck); the referee's own luck worker fills them in while
it serves the event, on SQLite and PostgreSQL, and the match page's luck panel reads a game's
deals; the store keeps one result per game, counts a game without a replay by its reason, and
gives a lost host's games (orphans) to the living."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from kozel.engine.rules import Ruleset
from kozel.ladder import luck_store
from kozel.ladder import tournament_store as ts
from kozel.ladder.luck_store import MatchLuck, SideFigures
from kozel.ladder.store import Store
from kozel.server.luck_worker import LuckWorker
from kozel.server.replay.archive import FolderArchive
from kozel.server.replay.file import read_replay
from kozel.server.tournament_archive import results_json
from kozel.tools.replay_luck import ladder_luck
from kozel.tournament.crosstable import group_of
from kozel.tournament.intervals import cluster_mean
from kozel.web import luck as web_luck
from tests.server.served import luck_config, serve
from tests.tournament import sim
from tests.tournament.test_store import _finish, _poll, _spec

SEED = "5e" * 32


def _run(data: Path, *flags: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", "tournament", "run", "--data-dir", str(data)]
        + ["--seed", SEED, "--quiet", "--groups", "2", "--options", '{"fixed_deals": 2}']
        + list(flags),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if "--json" in flags else {"text": done.stdout}


def _games(event: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        g
        for st in event["stages"]
        for r in st["rounds"]
        for p in r["pairings"]
        for g in p["games"]
        if g["status"] == "finished"
    ]


def _recomputed(replays: Path, game: dict[str, Any], side_of: tuple[int, ...]) -> list[float]:
    """A game's corrected points by seat, from its replay alone."""
    luck = ladder_luck(read_replay(replays / f"{game['match_id']}.kzr"))
    assert not luck.error
    by_side = {f.side: f.score_luck for f in luck.sides}
    return [p - by_side[side_of[seat]] for seat, p in enumerate(game["points"])]


def _check(event: dict[str, Any], replays: Path, side_of: tuple[int, ...]) -> None:
    """Every figure of ``event`` against the replays."""
    games = _games(event)
    assert games and all(g["luck_corrected"] is not None for g in games)
    corrected = {g["key"]: _recomputed(replays, g, side_of) for g in games}
    for g in games:
        assert g["luck_corrected"] == pytest.approx(corrected[g["key"]], abs=1e-9)
        assert g["luck_corrected"] != g["points"]  # the cards' share was taken out
    (stage,) = event["stages"]
    for row in stage["standings"]:
        mine = [g for g in games if row["name"] in g["seats"]]
        groups: dict[str, list[float]] = {}
        for g in mine:
            seat = g["seats"].index(row["name"])
            groups.setdefault(group_of(g["key"]), []).append(corrected[g["key"]][seat])
        mean, low, high = cluster_mean(list(groups.values())) or (0, 0, 0)
        est = row["luck_corrected"]
        assert est["matches"] == len(mine) == row["games"] and est["groups"] == len(groups)
        assert est["value"] == pytest.approx(mean, abs=1e-4)
        assert est["low"] == pytest.approx(low, abs=1e-4)
        assert est["high"] == pytest.approx(high, abs=1e-4)
        plain = sum(g["points"][g["seats"].index(row["name"])] for g in mine) / len(mine)
        assert est["plain"] == pytest.approx(plain, abs=1e-4)
        assert est["plain"] * len(mine) == pytest.approx(row["game_points"])


def test_a_run_reports_each_entrants_luck_corrected_score(tmp_path: Path) -> None:
    data = tmp_path / "data"
    bots = ["--bots", "greedy,random,g2:greedy"]
    event = _run(data, *bots, "--json")
    _check(event, data / "replays", (0, 1))
    # A cell at two sides: the row bot's corrected game points (its score is its points).
    cells = event["crosstable"]["cells"]
    games = _games(event)
    for row, cols in cells.items():
        for col, c in cols.items():
            both = [g for g in games if row in g["seats"] and col in g["seats"]]
            mine = [g["luck_corrected"][g["seats"].index(row)] for g in both]
            assert c["luck_corrected"]["matches"] == len(both) == c["games"]
            assert c["luck_corrected"]["value"] == pytest.approx(sum(mine) / len(mine), abs=1e-4)
    # Greedy against greedy: each seed group is the same deals from both seats, so the two
    # rotations' luck cancels, and the corrected score is exactly one half.
    assert cells["greedy"]["g2"]["luck_corrected"]["value"] == pytest.approx(0.5, abs=1e-9)
    text = _run(data, *bots)["text"]  # over: read back, not played again
    assert "luck-corrected [95 %]" in text
    greedy = next(r for r in event["stages"][0]["standings"] if r["name"] == "greedy")
    est = greedy["luck_corrected"]
    assert f"{est['value']:.3f} [{est['low']:.2f}, {est['high']:.2f}]" in text


def test_four_at_a_table_each_seat_takes_its_sides_luck(tmp_path: Path) -> None:
    data = tmp_path / "data"
    flags = ["--players", "4", "--bots", "greedy,random,g2:greedy,r2:random", "--json"]
    event = _run(data, *flags)
    side_of = Ruleset.preset("classic").side_of(4)
    assert side_of == (0, 1, 0, 1)
    _check(event, data / "replays", side_of)
    for g in _games(event):  # partners share their side's luck
        luck = [p - c for p, c in zip(g["points"], g["luck_corrected"])]
        assert math.isclose(luck[0], luck[2]) and math.isclose(luck[1], luck[3])


EVENT = {
    "name": "lucky-cup",
    "players": 2,
    "ruleset": {"preset": "classic", "options": {"fixed_deals": 2}},
    "seed": SEED,
    "groups": 2,
    "bots": [{"name": "greedy", "house": "greedy"}, {"name": "random", "house": "random"}],
    "stages": [{"format": "round_robin", "cycles": 1}],
}


def test_the_referees_worker_fills_them_in(tmp_path: Path, store_url: str) -> None:
    """While the referee serves the event, not afterwards from the command line."""
    store = Store(store_url)
    store.migrate()
    ref = serve(luck_config(tmp_path, store_url, tournaments=[EVENT]), tmp_path)
    try:
        deadline = time.monotonic() + 120
        while not _all_known(store):
            assert time.monotonic() < deadline, "the worker did not fill every game's luck"
            time.sleep(0.2)
        view = ts.view(store, "lucky-cup")
        assert view is not None
        event = results_json(view)
        some = _games(event)[0]["match_id"]
        split = web_luck.match_luck(store, some)  # the match page's luck panel
        assert split["status"] == "computed" and len(split["deals"]) == 2
        assert [x["side"] for x in split["sides"]] == [0, 1]
    finally:
        assert ref.stop() == 0
        store.close()
    assert len(_games(event)) == 2 * 2
    _check(event, tmp_path / "replays", (0, 1))


def _all_known(store: Store) -> bool:
    view = ts.view(store, "lucky-cup")
    if view is None or not view.state.done:
        return False
    return all(r.luck_corrected is not None for r in view.state.results)


def test_the_store_keeps_one_result_and_gives_orphans_to_the_living(
    store: Store, tmp_path: Path
) -> None:
    """The SQL alone (SQLite and PostgreSQL): a game's luck is stored once and makes its
    ``luck_corrected``; a game without luck (no replay: counted by reason) has none and stays
    out of the figures; a live host's games are its own, a lost host's anyone's."""
    spec = _spec()
    ts.register(store, spec, sim.SEED, spec.names, {})
    store.register_referee("r1", [], 60.0)
    games = _poll(store, "r1").assignments  # round one, all hosted by r1
    store.register_referee("r2", [], 60.0)
    for a in games:
        ts.start(store, a.match_id, "r1")
        assert _finish(store, spec, a)
    _poll(store, "r1")  # unseals the finished seed groups
    ids = sorted(a.match_id for a in games)
    assert sorted(luck_store.pending_games(store, ["t"], "r1", 10)) == ids
    assert luck_store.pending_games(store, ["t"], "r2", 10) == [], "r1 lives: they are its"
    first, second = ids[:2]
    luck = MatchLuck(1, (SideFigures(0, 1, 0.25, 3, 2, 1), SideFigures(1, 0, -0.25, -3, -2, 1)))
    assert luck_store.save_game(store, first, luck)
    assert not luck_store.save_game(store, first, luck), "the first result stays"
    store.release_referee("r1")  # gone: its games are anyone's
    assert sorted(luck_store.pending_games(store, ["t"], "r2", 10)) == ids[1:]
    missing = REGISTRY.get_sample_value("kozel_luck_missing_total", {"reason": "no_replay"})
    worker = LuckWorker(store, FolderArchive(tmp_path), [], "r2", ladder_luck, tournaments=["t"])
    assert worker.pass_once() == len(ids) - 1 and worker.pass_once() == 0
    after = REGISTRY.get_sample_value("kozel_luck_missing_total", {"reason": "no_replay"})
    assert after == (missing or 0) + len(ids) - 1
    view = ts.view(store, "t")
    assert view is not None
    results = {r.match_id: r for r in view.state.results}
    r = results[first]
    assert r.luck_corrected == tuple(
        p - (0.25 if s == 0 else -0.25) for s, p in enumerate(r.points)
    )
    assert results[second].luck_corrected is None  # no replay: no figures
    by_bot = {row.name: row.luck_corrected for row in view.state.stages[0].standings}
    for seat, name in enumerate(r.seats):
        est, corrected = by_bot[name], r.luck_corrected
        assert est is not None and corrected is not None and est["matches"] == 1
        assert est["value"] == pytest.approx(corrected[seat], abs=1e-4)
