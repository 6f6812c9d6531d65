"""The HTTP JSON API of a real referee process (kozel serve) with house bots playing."""

from __future__ import annotations

import json

from kozel.engine.deal import Deal
from kozel.server.replay.file import read_replay
from tests.web.conftest import HOSTILE, LADDER, Arena, get


def _json(arena: Arena, path: str):
    status, _headers, body = get(arena.url(path))
    assert status == 200, (path, status, body[:300])
    return json.loads(body)


def test_openapi_schema_lists_every_route(arena: Arena) -> None:
    schema = _json(arena, "/api/openapi.json")
    assert schema["openapi"].startswith("3.")
    for path in (
        "/api/ladders",
        "/api/ladders/{ladder}/standings",
        "/api/bots/{name}",
        "/api/bots/{name}/ratings",
        "/api/matches",
        "/api/matches/{match_id}",
        "/api/matches/{match_id}/replay.kzr",
        "/api/matches/{match_id}/replay.json",
        "/api/live",
        "/api/live/{match_id}/events",
    ):
        assert path in schema["paths"], path
    assert "Standing" in schema["components"]["schemas"]


def test_every_response_carries_a_content_security_policy(arena: Arena) -> None:
    for path in ("/", "/api/ladders", "/static/js/viewer.js", "/matches/ffffffff", "/nope"):
        _, headers, _ = get(arena.url(path))
        csp = headers.get("content-security-policy", "")
        assert "script-src 'self'" in csp and "default-src 'none'" in csp, (path, headers)
        assert headers.get("x-content-type-options") == "nosniff"


def test_standings_match_the_store(arena: Arena) -> None:
    data = _json(arena, f"/api/ladders/{LADDER}/standings")
    want = arena.store.standings(LADDER)
    got = data["standings"]
    # The store moves on while bots play: compare what was committed at the same moment.
    assert [r["bot"] for r in got] and {r["bot"] for r in got} == {s.name for s in want}
    again = arena.store.standings(LADDER)
    for row in got:
        match = [s for s in want + again if s.name == row["bot"]]
        assert any(
            abs(s.mu - row["mu"]) < 1e-9 and s.matches == row["matches"] for s in match
        ) or row["matches"] <= max(s.matches for s in again)
    assert HOSTILE in {r["bot"] for r in got}
    ladders = _json(arena, "/api/ladders")
    assert [x["name"] for x in ladders] == [LADDER]
    assert ladders[0]["bots"] == 3


def test_match_list_filters_and_cursor_paging(arena: Arena) -> None:
    seen: list[str] = []
    cursor = None
    for _ in range(50):
        q = "/api/matches?status=finished&limit=2" + (f"&cursor={cursor}" if cursor else "")
        page = _json(arena, q)
        assert len(page["matches"]) <= 2
        seen += [m["match_id"] for m in page["matches"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len(set(seen)) >= 6  # no match twice across pages
    finished = [
        m.id for m in arena.store.matches(ladder=LADDER, limit=10_000) if m.status == "finished"
    ]
    assert set(seen) <= set(finished)
    starts = [_json(arena, f"/api/matches/{m}")["started_at"] for m in seen[:6]]
    assert starts == sorted(starts, reverse=True)  # newest first
    by_bot = _json(arena, "/api/matches?bot=greedy-a&limit=200")["matches"]
    assert by_bot and all("greedy-a" in [s["bot"] for s in m["seats"]] for m in by_bot)
    reason = _json(arena, "/api/matches?reason=MATCH_END_REASON_LIMIT&limit=5")["matches"]
    assert all(m["reason"] == "MATCH_END_REASON_LIMIT" for m in reason)
    assert _json(arena, "/api/matches?since=2999-01-01T00:00:00Z")["matches"] == []
    status, _, _ = get(arena.url("/api/matches?limit=100000"))
    assert status == 422  # page sizes are bounded
    status, _, body = get(arena.url("/api/matches?cursor=bm9wZQ"))
    assert status == 400 and b"cursor" in body


def test_one_match_and_its_replay_with_etag(arena: Arena) -> None:
    row = next(m for m in arena.store.matches(ladder=LADDER, limit=100) if m.status == "finished")
    d = _json(arena, f"/api/matches/{row.id}")
    assert d["status"] == "finished" and d["ladder"] == LADDER and not d["sealed"]
    assert [s["seat"] for s in d["seats"]] == [0, 1]
    assert all(s["rank"] in (1, 2) and "rating" in s for s in d["seats"])
    status, headers, body = get(arena.url(f"/api/matches/{row.id}/replay.kzr"))
    assert status == 200 and body == (arena.replay_dir / f"{row.id}.kzr").read_bytes()
    etag = headers["etag"]
    status, _, body = get(arena.url(f"/api/matches/{row.id}/replay.kzr"), {"If-None-Match": etag})
    assert status == 304 and body == b""
    status, headers, body = get(arena.url(f"/api/matches/{row.id}/replay.json"))
    assert status == 200
    data = json.loads(body)
    replay = read_replay(arena.replay_dir / f"{row.id}.kzr")
    assert data["match_id"] == row.id and len(data["deals"]) == len(replay.deals)
    assert [len(x["steps"]) for x in data["deals"]] == [len(x.steps) for x in replay.deals]
    assert (
        get(arena.url(f"/api/matches/{row.id}/replay.json"), {"If-None-Match": headers["etag"]})[0]
        == 304
    )


def test_bot_page_data(arena: Arena) -> None:
    from urllib.parse import quote

    bot = _json(arena, f"/api/bots/{quote(HOSTILE, safe='')}")
    assert bot["name"] == HOSTILE and bot["ladders"][0]["ladder"] == LADDER
    assert bot["recent_matches"] and bot["opponents"]
    assert {o["opponent"] for o in bot["opponents"]} <= {"greedy-a", "greedy-b"}
    for o in bot["opponents"]:
        assert o["wins"] + o["losses"] + o["draws"] == o["matches"]
    hist = _json(arena, f"/api/bots/greedy-a/ratings?ladder={LADDER}")
    assert hist["points"], hist
    last = hist["points"][-1]
    rating = next(s for s in arena.store.standings(LADDER) if s.name == "greedy-a")
    assert last["mu"] == rating.mu or len(hist["points"]) <= rating.matches


def test_unknown_ids_are_404_and_bad_ones_refused(arena: Arena) -> None:
    assert get(arena.url("/api/matches/ffffffffffff"))[0] == 404
    assert get(arena.url("/api/matches/ffffffffffff/replay.kzr"))[0] == 404
    assert get(arena.url("/api/bots/nobody"))[0] == 404
    assert get(arena.url("/api/ladders/nope/standings"))[0] == 404
    assert get(arena.url("/api/matches/..%2f..%2fetc"))[0] in (404, 422)
    assert get(arena.url("/api/live/ffffffffffff/events"))[0] == 404
    for path in (
        "/matches/ffffffffffff",
        "/bots/nobody",
        "/ladders/nope",
        "/live/ffffffff",
        "/no/such/page",
    ):
        status, headers, body = get(arena.url(path))
        assert status == 404 and headers["content-type"].startswith("text/html"), path
        assert b"There is no such" in body


def test_replay_json_frames_come_from_the_engine(arena: Arena) -> None:
    """Spot check: the first deal's hands as dealt are the engine's."""
    row = next(m for m in arena.store.matches(ladder=LADDER, limit=100) if m.status == "finished")
    data = _json(arena, f"/api/matches/{row.id}/replay.json")
    replay = read_replay(arena.replay_dir / f"{row.id}.kzr")
    from tests.web.engine_views import start_deal

    deal: Deal = start_deal(replay, replay.deals[0])
    first = data["deals"][0]["frames"][0]
    from kozel.engine.cards import codes

    assert [s["known"] for s in first["all"]["seats"]] == [codes(h) for h in deal.hands]
    assert first["seats"][0]["hand"] == codes(deal.hands[0])
    assert first["seats"][0]["seats"][1]["known"] == []
