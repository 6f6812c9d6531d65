"""The seat API over a real referee and its web child: writes from other sites are refused,
a seat answers only to its token, names are checked, the limits hold (seats per address and
in all, matches per hour, requests per second), and a person's match is never rated."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kozel.ladder.store import Store
from tests.web.conftest import get, start, stop
from tests.web.seat_helpers import call, open_seat, play_out, serve, state

pytestmark = pytest.mark.timeout(600)
LADDER = "classic-2p"
ACCOUNT: list[str] = []  # the token of the bot account greedy-a


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Store, str]]:
    """A referee with a ladder and its store (no bot on it), trusting its own address as a
    proxy so each test speaks for addresses of its own (X-Forwarded-For)."""
    tmp = tmp_path_factory.mktemp("seat-api")
    url = f"sqlite:///{tmp / 'kozel.db'}"
    store = Store(url)
    store.migrate()
    ACCOUNT.append(store.register_bot("greedy-a"))
    ladder = {"name": LADDER, "players": 2, "ruleset": {"preset": "classic"}}
    storage = {"data_dir": str(tmp / "data"), "replay_dir": str(tmp / "replays")}
    for grpc_address, web in serve(
        tmp,
        trusted_proxies="127.0.0.1",
        ladders=[ladder],
        storage={**storage, "database_url": url},
    ):
        yield web, store, grpc_address
    store.close()


def by(address: str) -> dict[str, str]:
    return {"X-Forwarded-For": address}


def test_writes_from_other_sites_are_refused(arena: tuple[str, Store, str]) -> None:
    web, _, _ = arena
    body = {"name": "Ann", "opponents": ["greedy"]}
    cases = [
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
        {"Origin": "http://evil.example"},
    ]
    for headers in cases:
        status, got = call("POST", web + "/api/seats", body, {**headers, **by("10.0.1.1")})
        assert status == 403, (headers, got)
    # A form post (not JSON) is refused before its body is read.
    status, _ = call(
        "POST", web + "/api/seats", None, {"Content-Type": "text/plain", **by("10.0.1.1")}
    )
    assert status == 403
    host = web.removeprefix("http://")
    ok = {"Sec-Fetch-Site": "same-origin", "Origin": f"http://{host}", **by("10.0.1.1")}
    status, seat = call("POST", web + "/api/seats", body | {"deals": 1}, ok)
    assert status == 201, seat
    s = _asked(web, seat)
    r = s["request"]
    answer = {"request_id": r["request_id"], "index": 0}
    headers = {"X-Seat-Token": seat["token"], **by("10.0.1.1")}
    url = f"{web}/api/seats/{seat['seat_id']}/action"
    status, _ = call("POST", url, answer, {**headers, "Sec-Fetch-Site": "cross-site"})
    assert status == 403
    assert state(web, seat)["request"]["request_id"] == r["request_id"]  # not taken
    status, _ = call("POST", url, answer, {**headers, "X-Seat-Token": "x" * 32})
    assert status == 404
    status, _ = call("POST", url, answer, by("10.0.1.1"))
    assert status == 404
    status, _ = call("POST", url, {**answer, "index": 999}, headers)
    assert status == 422
    status, _ = call("POST", url, answer, headers)
    assert status == 200
    status, _ = call("POST", url, answer, headers)  # answered already
    assert status == 409


def _asked(web: str, seat: dict[str, Any]) -> dict[str, Any]:
    version = -1
    for _ in range(100):
        s = state(web, seat, version)
        if s["request"] is not None:
            return s
        version = s["version"]
    raise AssertionError("no decision came")


def test_the_state_needs_the_token(arena: tuple[str, Store, str]) -> None:
    web, _, _ = arena
    seat = open_seat(web, deals=1, opponents=["random"])
    for token in ("", "wrong", seat["token"][:-1]):
        status, _ = call(
            "GET", f"{web}/api/seats/{seat['seat_id']}", headers={"X-Seat-Token": token}
        )
        assert status == 404
    assert get(web + "/play/not-a-seat")[0] == 404
    assert get(web + f"/play/{seat['seat_id']}")[0] == 200


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("", "1 to 64 characters"),
        ("a\x1b[31mb", "\\x1b"),
        ("evil\u202e", "\\u202e"),
        ("x" * 65, "64"),
    ],
)
def test_bad_names_are_refused(arena: tuple[str, Store, str], name: str, fragment: str) -> None:
    web, _, _ = arena
    status, got = call("POST", web + "/api/seats", {"name": name, "opponents": ["greedy"]})
    assert status == 422 and fragment in str(got), got


def test_bad_tables_are_refused(arena: tuple[str, Store, str]) -> None:
    web, _, _ = arena
    cases: list[tuple[dict[str, Any], str]] = [
        ({"opponents": ["nobody"]}, "house bots"),
        ({"opponents": ["greedy"] * 4}, "at most 3"),
        ({"opponents": ["greedy"], "clock": "bullet"}, "clock must be"),
        ({"opponents": ["greedy"], "ruleset": "money"}, "ruleset must be"),
        ({"opponents": ["greedy"], "deals": 99}, "less than or equal"),
    ]
    for body, fragment in cases:
        status, got = call("POST", web + "/api/seats", {"name": "Ann", **body}, by("10.0.2.1"))
        assert status == 422 and fragment in str(got), (body, got)


def test_a_person_match_plays_to_its_end_and_is_not_rated(arena: tuple[str, Store, str]) -> None:
    web, store, _ = arena
    seat = open_seat(web, deals=2, name="<b>Ann</b>")
    last = play_out(web, seat)
    end = last["end"]
    assert end and not last["error"], last["error"]
    assert last["match"]["seating"][0]["name"] == "<b>Ann</b>"
    assert len(last["deal_ends"]) == 2
    match_id = end["match_id"]
    status, detail = call("GET", f"{web}/api/matches/{match_id}")
    assert status == 200, detail
    assert not detail.get("ladder")
    assert all("rating" not in str(k) for s in detail["seats"] for k in s), detail
    assert store.match_detail(match_id) is None  # never on a ladder
    assert store.match_counts(LADDER).get("finished", 0) == 0
    assert get(web + f"/api/matches/{match_id}/replay.json")[0] == 200


def test_limits(tmp_path: Path) -> None:
    """Seats per address and in all, matches per address per hour, requests per second."""
    web_limits = {"max_seats": 3, "max_seats_per_address": 2, "seat_matches_per_hour": 4}
    for _, web in serve(tmp_path, web_limits, trusted_proxies="127.0.0.1"):
        mine = by("10.0.3.1")
        for _ in range(2):  # own-bot tables: they wait for a bot that never comes
            status, _ = call("POST", web + "/api/seats", {"name": "A", "opponents": [""]}, mine)
            assert status == 201
        status, got = call("POST", web + "/api/seats", {"name": "A", "opponents": [""]}, mine)
        assert status == 429 and "2 matches already" in got["detail"], got
        other = by("10.0.3.2")
        status, _ = call("POST", web + "/api/seats", {"name": "B", "opponents": [""]}, other)
        assert status == 201
        status, got = call(
            "POST", web + "/api/seats", {"name": "C", "opponents": [""]}, by("10.0.3.3")
        )
        assert status == 429 and "3 people are playing" in got["detail"], got
    for _, web in serve(tmp_path / "2", {"seat_matches_per_hour": 2, "seat_requests_per_s": 5}):
        for _ in range(2):
            play_out(web, open_seat(web, deals=1))
        body = {"name": "A", "opponents": ["greedy"]}
        while (got := call("POST", web + "/api/seats", body))[1]["detail"].startswith("too many"):
            time.sleep(0.5)  # the request rate, spent by play_out: wait for the bucket
        assert got[0] == 429 and "2 matches this hour" in got[1]["detail"], got
        statuses = [call("GET", web + "/api/seats/0123456789abcdef")[0] for _ in range(30)]
        assert 429 in statuses and set(statuses) <= {404, 429}, statuses


def test_an_author_plays_their_own_bot_by_hand(arena: tuple[str, Store, str]) -> None:
    web, _, grpc_address = arena
    seat = open_seat(web, deals=1, opponents=[""], name="author")
    waiting = state(web, seat)
    assert waiting["own_bot"] and waiting["match"] is None
    assert waiting["table_id"] == seat["table_id"]
    cmd = [sys.executable, "-m", "kozel.cli.main", "bot", "greedy", "--server", grpc_address]
    bot = subprocess.Popen(
        [*cmd, "--table", seat["table_id"], "--name", "my-bot", "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        last = play_out(web, seat)
    finally:
        assert bot.wait(timeout=60) == 0
    assert last["end"], last["error"]
    assert [p["name"] for p in last["match"]["seating"]] == ["author", "my-bot"]


def test_an_account_token_plays_under_its_bot_name(arena: tuple[str, Store, str]) -> None:
    web, _, _ = arena
    body = {"name": "greedy-a", "opponents": ["greedy"], "deals": 1, "token": ACCOUNT[0]}
    status, seat = call("POST", web + "/api/seats", body, by("10.0.4.1"))
    assert status == 201 and seat["name"] == "greedy-a", seat
    assert state(web, seat)["name"] == "greedy-a"
    status, got = call("POST", web + "/api/seats", {**body, "token": "kz_wrong"}, by("10.0.4.2"))
    assert status == 401 and "no active bot account" in got["detail"], got


def test_leaving_frees_the_seat_and_forfeits(arena: tuple[str, Store, str]) -> None:
    web, _, _ = arena
    me = by("10.0.5.1")
    status, seat = call("POST", web + "/api/seats", {"name": "L", "opponents": ["greedy"]}, me)
    assert status == 201
    _asked(web, seat)
    url, token = f"{web}/api/seats/{seat['seat_id']}", {"X-Seat-Token": seat["token"], **me}
    assert call("POST", url + "/leave", {}, {**token, "Sec-Fetch-Site": "cross-site"})[0] == 403
    assert call("POST", url + "/leave", {}, token)[0] == 200
    left = state(web, seat)
    assert left["error"].startswith("you left") and left["request"] is None


def test_a_web_in_the_referees_process_seats_people_too(tmp_path: Path) -> None:
    for _, web in serve(tmp_path, {"in_process": True}):
        last = play_out(web, open_seat(web, deals=1))
        assert last["end"] and len(last["deal_ends"]) == 1, last["error"]


def test_a_web_without_a_referee_seats_nobody(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "kozel.cli.main", "web", "--replays", str(tmp_path)]
    proc, found, _ = start([*cmd, "--listen", "127.0.0.1:0"], {"web": r"web pages on (\S+)"})
    try:
        web = found["web"].rstrip("/")
        assert call("GET", web + "/api/seats/options")[1]["enabled"] is False
        status, got = call("POST", web + "/api/seats", {"name": "A", "opponents": ["greedy"]})
        assert status == 503 and "follows no referee" in got["detail"], got
    finally:
        stop(proc)
