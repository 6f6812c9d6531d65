"""Tournament pages in Chromium against a real referee that played a Swiss and a double-
elimination bracket with house bots: the event page (stages, rounds, standings, the bracket
drawn as SVG, the crosstable, the winners, links to every replay), the list page, the JSON API
and the zip of every replay."""

from __future__ import annotations

import io
import json
import sys
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import yaml

from kozel.ladder import tournament_store as ts
from kozel.ladder.store import Store
from tests.web.conftest import get, shot, start, stop

EVENT = {
    "name": "web-cup",
    "ruleset": {"preset": "classic", "options": {"fixed_deals": 1}},
    "time_control": {"move_ms": 3000, "bank_ms": 10000, "grace_ms": 1000},
    "groups": 1,
    "bots": [{"name": f"{k}-{i}", "house": k} for i in (1, 2, 3) for k in ("greedy", "random")],
    "stages": [
        {"format": "swiss", "rounds": 2},
        {"format": "knockout", "top": 4, "elimination": "double"},
    ],
    "winners": ["standings", "total_score", "instant_runoff"],
}


@dataclass
class Served:
    web: str
    store: Store

    def url(self, path: str) -> str:
        return self.web.rstrip("/") + path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("tournament-web")
    events = tmp / "t.yaml"
    events.write_text(yaml.safe_dump({"tournaments": [EVENT]}))
    proc, found, _ = start(
        [
            sys.executable, "-m", "kozel.cli.main", "serve", "--listen", "127.0.0.1:0",
            "--web-listen", "127.0.0.1:0", "--data-dir", str(tmp / "data"),
            "--tournaments", str(events), "--log-level", "WARNING",
        ],
        {"web": r"web pages on (http://\S+)"},
    )  # fmt: skip
    store = Store(f"sqlite:///{tmp / 'data' / 'kozel.db'}")
    try:
        deadline = time.monotonic() + 300
        while (v := ts.view(store, "web-cup")) is None or not v.state.done:
            assert time.monotonic() < deadline and proc.poll() is None, "the event did not end"
            time.sleep(0.5)
        while not all(r.luck_corrected is not None for r in v.state.results if r.played):
            assert time.monotonic() < deadline, "the referee did not compute every game's luck"
            time.sleep(0.5)
            v = ts.view(store, "web-cup")
            assert v is not None
        yield Served(found["web"], store)
    finally:
        stop(proc)
        store.close()


def test_event_page_shows_stages_bracket_crosstable_and_replays(served: Served, page) -> None:
    api = json.loads(get(served.url("/api/tournaments/web-cup"))[2])
    page.goto(served.url("/tournaments/web-cup"))
    page.wait_for_selector("table.cross")
    assert page.text_content(".event-name") == "web-cup"
    assert "over" in page.text_content(".event-state")
    winners = page.text_content(".winners")
    assert api["winners"]["standings"] in winners and "instant runoff" in winners
    bracket = api["stages"][1]["bracket"]
    assert page.locator("svg.bracket g[data-match]").count() == len(bracket)
    champion = api["stages"][1]["standings"][0]["name"]
    assert page.locator("svg.bracket text.won", has_text=champion).count() >= 2
    names = api["crosstable"]["names"]
    played = sum(len(cols) for cols in api["crosstable"]["cells"].values())
    assert page.locator("table.cross td.cell").count() == played
    assert page.locator("table.cross tbody tr").count() == len(names)
    rows = [r for st in api["stages"] for r in st["standings"]]
    assert all(r["luck_corrected"] is not None for r in rows)
    assert page.locator("table.standings [data-luck]").count() == len(rows)
    first_row = api["stages"][0]["standings"][0]
    shown = page.locator("table.standings [data-luck]").first.text_content() or ""
    assert abs(float(shown.split()[0]) - first_row["luck_corrected"]["value"]) <= 0.0051
    assert page.locator("table.cross td.cell .corrected [data-luck]").count() == played
    links = page.locator("a.game.done")
    games = [
        g for st in api["stages"] for r in st["rounds"] for p in r["pairings"] for g in p["games"]
    ]
    assert links.count() == len(games) == sum(g["replay"] for g in games)
    first = links.first.get_attribute("href")
    assert first is not None and first.startswith("/matches/")
    shot(page, "tournament-event")
    page.goto(served.url(first))
    page.wait_for_selector("[data-board]")
    assert page.errors == [], page.errors


def test_list_page_and_a_missing_event(served: Served, page) -> None:
    page.goto(served.url("/tournaments"))
    page.wait_for_selector("table.tournaments")
    assert page.locator("table.tournaments a", has_text="web-cup").count() == 1
    shot(page, "tournament-list")
    status, _, body = get(served.url("/tournaments/nope"))
    assert status == 404 and b"no such tournament" in body
    assert get(served.url("/api/tournaments/nope"))[0] == 404
    assert get(served.url("/api/tournaments/%3Cx%3E"))[0] == 422
    assert page.errors == [], page.errors


def test_api_and_replay_archive(served: Served) -> None:
    events = json.loads(get(served.url("/api/tournaments"))[2])
    assert events == [
        {
            "name": "web-cup",
            "done": True,
            "stages": ["swiss", "knockout"],
            "bots": 6,
            "games_finished": events[0]["games_finished"],
        }
    ]
    status, headers, body = get(served.url("/api/tournaments/web-cup/replays.zip"))
    assert (
        status == 200
        and {k.lower(): v for k, v in headers.items()}["content-type"] == "application/zip"
    )
    with zipfile.ZipFile(io.BytesIO(body)) as zf:
        kzr = [n for n in zf.namelist() if n.endswith(".kzr")]
        results = json.loads(zf.read("web-cup/results.json"))
    assert len(kzr) == events[0]["games_finished"] == len(results["replays"])
    assert (
        results["winners"] == json.loads(get(served.url("/api/tournaments/web-cup"))[2])["winners"]
    )
    from kozel.server.replay.file import decode_replay

    with zipfile.ZipFile(io.BytesIO(body)) as zf:
        replay = decode_replay(zf.read(kzr[0]))
    assert replay.table_id.startswith("tournament:web-cup:")
    schema = json.loads(get(served.url("/api/openapi.json"))[2])
    assert "/api/tournaments/{name}" in schema["paths"]


def test_running_games_are_linked_live(tmp_path, page) -> None:
    """A game whose registered bot is absent runs until its clock or its grace time is over
    (a minute here): meanwhile the event page links it as live, and the link opens the live
    page of that match."""
    event = {
        "name": "live-cup",
        "ruleset": {"preset": "classic", "options": {"fixed_deals": 1}},
        "time_control": {"move_ms": 60_000, "bank_ms": 0, "grace_ms": 60_000},
        "bots": [{"name": "greedy", "house": "greedy"}, {"name": "ghost"}],
        "forfeits": {"absent_wait_s": 0},
        "stages": [{"format": "round_robin"}],
    }
    events = tmp_path / "t.yaml"
    events.write_text(yaml.safe_dump({"tournaments": [event]}))
    (tmp_path / "data").mkdir()
    store = Store(f"sqlite:///{tmp_path / 'data' / 'kozel.db'}")
    store.migrate()
    store.register_bot("ghost")  # registered, never connects: its seat starts absent
    proc, found, _ = start(
        [
            sys.executable, "-m", "kozel.cli.main", "serve", "--listen", "127.0.0.1:0",
            "--web-listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "data"),
            "--tournaments", str(events), "--log-level", "WARNING", "--drain-timeout", "1",
        ],
        {"web": r"web pages on (http://\S+)"},
    )  # fmt: skip
    web = found["web"].rstrip("/")
    try:
        page.goto(web + "/tournaments/live-cup")
        page.wait_for_selector("a.game.live", timeout=60_000)
        api = json.loads(get(web + "/api/tournaments/live-cup")[2])
        games = [g for r in api["stages"][0]["rounds"] for p in r["pairings"] for g in p["games"]]
        live = {g["match_id"] for g in games if g["live"]}
        assert live and all(g["status"] == "running" for g in games if g["live"])
        hrefs = set(page.locator("a.game.live").evaluate_all("els => els.map(e => e.href)"))
        assert {h.rsplit("/live/", 1)[1] for h in hrefs} <= live
        page.locator("a.game.live").first.click()
        page.wait_for_url("**/live/*")
        page.wait_for_selector("[data-board]")
        assert page.errors == [], page.errors
    finally:
        stop(proc)
        store.close()
