"""Answers compressed for clients that accept it, and the accessibility details: a heading on
404 pages, Space on a focused button presses it, the step description is announced."""

from __future__ import annotations

import gzip

from tests.web.conftest import LADDER, Arena, get


def _finished(arena: Arena) -> str:
    rows = [m.id for m in arena.store.matches(ladder=LADDER, limit=50) if m.status == "finished"]
    assert rows
    return rows[0]


def test_replay_json_is_gzipped_when_the_client_accepts_it(arena: Arena) -> None:
    match_id = _finished(arena)
    url = arena.url(f"/api/matches/{match_id}/replay.json")
    status, plain_headers, plain = get(url)
    assert status == 200 and "content-encoding" not in {k.lower() for k in plain_headers}
    status, headers, body = get(url, {"Accept-Encoding": "gzip"})
    headers = {k.lower(): v for k, v in headers.items()}
    assert status == 200 and headers["content-encoding"] == "gzip", headers
    assert "accept-encoding" in headers["vary"].lower()
    assert gzip.decompress(body) == plain
    assert len(body) * 5 < len(plain), (len(body), len(plain))
    # The ETag still answers 304, compressed or not.
    assert get(url, {"Accept-Encoding": "gzip", "If-None-Match": headers["etag"]})[0] == 304
    # Pages and the API's lists are compressed too; small answers and replay files are not.
    _, page_headers, _ = get(arena.url("/api/openapi.json"), {"Accept-Encoding": "gzip"})
    assert page_headers.get("content-encoding") == "gzip"
    for path in ("/healthz", f"/api/matches/{match_id}/replay.kzr"):
        _, h, _ = get(arena.url(path), {"Accept-Encoding": "gzip"})
        assert "content-encoding" not in {k.lower() for k in h}, (path, h)


def test_a_404_page_has_a_heading(arena: Arena, page) -> None:
    status, _, body = get(arena.url("/no/such/page"))
    assert status == 404 and b"<h1>Not found</h1>" in body
    page.goto(arena.url("/bots/" + "x" * 40))
    assert page.locator("h1").inner_text() == "Not found"
    assert "no such bot" in page.inner_text("main")


def test_space_on_a_focused_button_presses_it_and_steps_are_announced(arena: Arena, page) -> None:
    match_id = _finished(arena)
    page.goto(arena.url(f"/matches/{match_id}#d=0&s=0&v=all"))
    page.wait_for_selector("main[data-ready]")
    assert page.get_attribute("[data-stepinfo]", "aria-live") == "polite"
    page.focus("button[data-action='next play']")
    page.keyboard.press(" ")
    page.keyboard.press(" ")
    assert page.get_attribute("[data-where]", "data-step") == "2"
    assert "pause" not in page.inner_text("button[data-action='play/pause']")  # not playing
    page.focus("button[data-action='play/pause']")
    page.keyboard.press("Enter")  # the play button, pressed from the keyboard
    assert "pause" in page.inner_text("button[data-action='play/pause']")
    page.keyboard.press(" ")
    assert "play" in page.inner_text("button[data-action='play/pause']")
    assert page.errors == [], page.errors
