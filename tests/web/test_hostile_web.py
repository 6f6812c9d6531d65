"""The web under odd input, over real sockets against the referee of the shared arena (its web
child): ids that only contain a valid id, a forged Host header on a redirect, cache headers,
and bot names that hold a slash."""

from __future__ import annotations

import http.client
import json
from urllib.parse import quote, urlsplit

from tests.web.conftest import LADDER, Arena, get

# Each holds a valid id somewhere inside: a search instead of a match let them through.
BAD_IDS = ["deadbeef..", "deadbeef%00", "deadbeef%0a", "0" * 65, "XXdeadbeefXX", "deadbeef%20"]
ROUTES = [
    "/api/matches/{}",
    "/api/matches/{}/replay.kzr",
    "/api/matches/{}/replay.json",
    "/api/live/{}/events",
    "/matches/{}",
    "/live/{}",
]


def test_ids_that_only_contain_an_id_are_refused_as_unknown(arena: Arena) -> None:
    seen = {}
    for bad in BAD_IDS:
        for route in ROUTES:
            path = route.format(bad)
            seen[path] = get(arena.url(path))[0]
    assert {path: s for path, s in seen.items() if s not in (404, 422)} == {}


def _raw_get(arena: Arena, path: str, host: str) -> http.client.HTTPResponse:
    where = urlsplit(arena.web)
    conn = http.client.HTTPConnection(str(where.hostname), where.port, timeout=30)
    conn.request("GET", path, headers={"Host": host})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


def test_a_trailing_slash_redirects_to_a_path_never_to_the_forged_host(arena: Arena) -> None:
    for path, target in [
        ("/matches/", "/matches"),
        ("/api/ladders/?x=1", "/api/ladders?x=1"),
        ("//evil.example/", "/evil.example"),
    ]:
        response = _raw_get(arena, path, "evil.example")
        assert response.status == 308, (path, response.status)
        assert response.getheader("Location") == target, response.getheaders()
    response = _raw_get(arena, "/\\evil.example/", "evil.example")
    assert response.status == 404 and response.getheader("Location") is None


def test_every_answer_says_how_it_may_be_cached(arena: Arena) -> None:
    for path in ("/", "/api/ladders", f"/api/ladders/{LADDER}/standings", "/api/matches", "/nope"):
        _, headers, _ = get(arena.url(path))
        assert headers.get("cache-control") == "no-cache", (path, headers)


def test_a_bot_whose_name_holds_a_slash_has_its_pages(arena: Arena) -> None:
    for name in ("team/bot-1", "x/ratings"):
        if arena.store.bot(name) is None:
            arena.store.register_bot(name)
        encoded = quote(name, safe="")
        status, _, body = get(arena.url(f"/api/bots/{encoded}"))
        assert status == 200 and json.loads(body)["name"] == name, (name, status, body)
        status, headers, _ = get(arena.url(f"/bots/{encoded}"))
        assert status == 200 and headers["content-type"].startswith("text/html"), name
        status, _, body = get(arena.url(f"/api/bots/{encoded}/ratings?ladder={LADDER}"))
        assert status == 200 and json.loads(body)["bot"] == name, (name, status, body)
    assert get(arena.url("/api/bots/greedy-a/ratings"))[0] == 422  # the ladder is required
