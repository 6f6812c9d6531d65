"""Luck-corrected tournament standings (docs/luck.md, docs/tournaments.md): real events of
house bots with fixed seeds, played by a real referee process; every played game's corrected
points, each entrant's corrected score with its 95 % interval (clustered by seed group) and
each crosstable cell's are what its replays give when recomputed here, at two players and at
four (teams: a seat takes its side's luck); the referee's own luck worker fills them in while
it serves the event, on SQLite and PostgreSQL, and the match page's luck panel reads a game's
deals."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kozel.engine.rules import Ruleset
from kozel.ladder import tournament_store as ts
from kozel.ladder.store import Store
from kozel.server.replay.file import read_replay
from kozel.server.tournament_archive import results_json
from kozel.tools.replay_luck import ladder_luck
from kozel.tournament.crosstable import group_of
from kozel.tournament.intervals import cluster_mean
from kozel.web import luck as web_luck
from tests.server.served import luck_config, serve

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
