"""A person plays a connected ladder bot that plays people, from the bot's page, in Chromium,
over a real referee (its web a child process) with real bot processes on its ladders: the
page's "Play this bot" opens /play with the bot chosen, the person plays the match out by
clicking, and the bot's rating is untouched. The API refuses a bot that does not play people,
one that is not connected, and a bad name, and offers only the connected bots that do."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from kozel.ladder.store import Store
from tests.web.seat_helpers import call, serve
from tests.web.test_seat_page import answer_one, check_end

pytestmark = [
    pytest.mark.timeout(900),
    pytest.mark.skipif(
        not os.environ.get("CI") and not Path("/usr/bin/chromium").exists(),
        reason="needs Chromium",
    ),
]
# Each bot on a ladder of its own: alone there, it waits (free) and is never paired.
BOTS = {"lad-a": "ladder-a", "lad-b": "ladder-b"}  # lad-a plays people, lad-b does not
ABSENT = "lad-c"  # plays people, never connected
RULESET = "classic-no-combos"  # the ladders' game: a person's table for their bots plays it
KOZEL_BOT = [sys.executable, "-m", "kozel.cli.main", "bot", "greedy", "--server"]


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Store]]:
    tmp = tmp_path_factory.mktemp("play-bot")
    url = f"sqlite:///{tmp / 'kozel.db'}"
    store = Store(url)
    store.migrate()
    tokens = {name: store.register_bot(name) for name in [*BOTS, ABSENT]}
    for name in ("lad-a", ABSENT):
        store.set_plays_people(name, True)
    ladders = [{"name": lad, "players": 2, "ruleset": {"preset": RULESET}} for lad in BOTS.values()]
    storage = {"data_dir": str(tmp / "data"), "replay_dir": str(tmp / "replays")}
    for grpc_address, web in serve(tmp, ladders=ladders, storage={**storage, "database_url": url}):
        bots = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "kozel.cli.main",
                    "bot",
                    "greedy",
                    "--server",
                    grpc_address,
                    "--ladder",
                    ladder,
                    "--name",
                    name,
                    "--quiet",
                ],
                env={**os.environ, "KOZEL_BOT_TOKEN": tokens[name]},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for name, ladder in BOTS.items()
        ]
        try:
            deadline = time.monotonic() + 60
            while not [b for b in options(web)["bots"] if b["name"] == "lad-a" and b["free"]]:
                assert time.monotonic() < deadline, "lad-a never offered"
                time.sleep(0.5)
            yield web, store
        finally:
            for bot in bots:
                bot.terminate()
            for bot in bots:
                bot.wait(timeout=30)
    store.close()


def options(web: str) -> dict[str, Any]:
    status, got = call("GET", web + "/api/seats/options")
    assert status == 200, got
    return got


def test_only_connected_bots_that_play_people_are_offered_and_others_refused(
    arena: tuple[str, Store],
) -> None:
    web, _ = arena
    assert options(web)["bots"] == [
        {"name": "lad-a", "ladder": "ladder-a", "free": True, "players": 2, "ruleset": RULESET}
    ]
    assert call("GET", web + "/api/bots/lad-a")[1]["plays_people"] is True
    assert call("GET", web + "/api/bots/lad-b")[1]["plays_people"] is False
    cases = [
        ("bot:lad-b", 409, "does not play people"),
        (f"bot:{ABSENT}", 409, "not connected"),
        ("bot:a\x1bb", 422, "opponents are"),
        ("bot:" + "x" * 65, 422, ""),
    ]
    for opponent, status, words in cases:
        body = {"name": "Ann", "opponents": [opponent], "ruleset": RULESET}
        got = call("POST", web + "/api/seats", body)
        assert got[0] == status and words in str(got[1]), (opponent, got)
    # It plays its ladder's game only (any number of deals).
    for other in (
        {"ruleset": "classic"},
        {"ruleset": RULESET, "opponents": ["bot:lad-a", "greedy"]},
    ):
        body = {"name": "Ann", "opponents": ["bot:lad-a"], **other}
        got = call("POST", web + "/api/seats", body)
        assert got[0] == 409 and f"plays 2-player '{RULESET}'" in got[1]["detail"], got
    # Two seats of a 3-player table for one bot: refused by the referee, nothing left behind.
    body = {"name": "A", "opponents": ["bot:lad-a"] * 2, "ruleset": RULESET}
    got = call("POST", web + "/api/seats", body)
    assert got[0] == 422 and "one seat" in got[1]["detail"], got
    assert [b["free"] for b in options(web)["bots"]] == [True]


def test_a_person_plays_the_bot_from_its_page(page, arena: tuple[str, Store]) -> None:
    web, store = arena
    before = [(s.name, s.mu, s.sigma, s.matches) for s in store.standings("ladder-a")]
    page.goto(web + "/bots/lad-b")
    page.wait_for_selector("#plays-people", timeout=30_000)
    assert "Plays people: no" in page.inner_text("#plays-people")
    assert page.query_selector("#play-this-bot") is None
    page.goto(web + "/bots/lad-a")
    page.wait_for_selector("#play-this-bot", timeout=30_000)
    assert "Plays people: yes" in page.inner_text("#plays-people")
    page.click("#play-this-bot")
    page.wait_for_selector("#opponents select", timeout=30_000)
    assert page.url.endswith("/play?opponent=" + quote("bot:lad-a", safe=""))
    assert page.eval_on_selector("#opponents select", "s => s.value") == "bot:lad-a"
    assert page.eval_on_selector("#ruleset", "s => s.value") == RULESET  # the bot's game
    assert page.eval_on_selector("#players", "s => s.value") == "2"
    page.fill("#name", "<b>Ann</b>")
    page.select_option("#clock", "relaxed")
    page.select_option("#deals", "1")
    page.click("#open")
    page.wait_for_selector(".seat-hand", timeout=30_000)
    assert "lad-a" in page.inner_text(".seat-list")
    played: dict[str, int] = {}
    while answer_one(page, played):
        assert sum(played.values()) < 1000
    assert sum(played.values()) >= 3, played
    seating = page.evaluate("() => Seat.state.match.seating.map((s) => s.name)")
    assert seating == ["<b>Ann</b>", "lad-a"]
    check_end(page, web)
    assert not page.errors, page.errors
    # Never rated, not on the ladder; the bot is free on its ladder again.
    assert store.match_counts("ladder-a") == {}
    assert [(s.name, s.mu, s.sigma, s.matches) for s in store.standings("ladder-a")] == before
    deadline = time.monotonic() + 30
    while not options(web)["bots"][0]["free"]:
        assert time.monotonic() < deadline, options(web)
        time.sleep(0.5)
