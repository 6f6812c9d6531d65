"""A match's analysis on the web: ``GET /api/matches/{id}/analysis`` answers 202 with the
progress, then the cached result; the money game and a full queue are refused with reasons;
the viewer's analysis panel (in Chromium) shows each decision's actions coloured by their loss
with the played one marked, the biggest mistakes one click away, the per-seat summary and the
graph; ``kozel replay html --analysis`` works from disk under its CSP."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kozel.server.replay.file import encode_replay
from kozel.web.analysis import analyze_replay
from kozel.web.html_export import replay_html
from tests.analysis.replays import small_replay, write_small_replay
from tests.web.conftest import get, shot, start, stop

IDS = {
    "one": "a1a1a1a1a1a1a1a1",
    "long": "b2b2b2b2b2b2b2b2",
    "money": "c3c3c3c3c3c3c3c3",
    "two": "d4d4d4d4d4d4d4d4",
}
LIMITS = ["analysis_budget_ms=5", "analysis_open_nodes=20000", "analysis_queue=1"]


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``kozel web`` over a folder of replays: one deal (twice), three deals, the money game."""
    folder = tmp_path_factory.mktemp("replays")
    write_small_replay(folder, f"{IDS['one']}.kzr", match_id=IDS["one"], deals=1, seed=4)
    write_small_replay(folder, f"{IDS['long']}.kzr", match_id=IDS["long"], deals=3, seed=6)
    write_small_replay(folder, f"{IDS['two']}.kzr", match_id=IDS["two"], deals=1, seed=9)
    write_small_replay(
        folder, f"{IDS['money']}.kzr", match_id=IDS["money"], preset="money", deals=1
    )
    limits = [x for limit in LIMITS for x in ("--limit", limit)]
    proc, found, _ = start(
        [sys.executable, "-m", "kozel.cli.main", "web", "--listen", "127.0.0.1:0",
         "--replays", str(folder), *limits],
        {"web": r"web pages on (http://\S+)"},
    )  # fmt: skip
    try:
        yield found["web"].rstrip("/")
    finally:
        stop(proc)


def _analysis(base: str, match_id: str, deadline_s: float = 300) -> dict:
    """Ask until the analysis is ready; every answer before is a 202 with the progress."""
    url = f"{base}/api/matches/{match_id}/analysis"
    deadline = time.monotonic() + deadline_s
    seen: list[dict] = []
    while time.monotonic() < deadline:
        status, _, body = get(url)
        if status == 200:
            return {"result": json.loads(body), "progress": seen}
        assert status == 202, (status, body)
        progress = json.loads(body)
        assert progress["status"] in ("queued", "running")
        assert 0 <= progress["done"] <= progress["total"]
        seen.append(progress)
        time.sleep(0.2)
    raise AssertionError(f"no analysis of {match_id} in {deadline_s} s: {seen[-3:]}")


def test_the_api_computes_on_demand_then_serves_the_cache(web: str) -> None:
    got = _analysis(web, IDS["one"])
    assert got["progress"], "the first answer is a 202"
    a = got["result"]
    assert a["format"] == "kozel-analysis/1" and a["match_id"] == IDS["one"]
    assert a["settings"]["budget_ms"] == 5 and a["settings"]["open_nodes"] == 20000
    status, headers, body = get(f"{web}/api/matches/{IDS['one']}/analysis")
    assert status == 200 and json.loads(body) == a
    assert {k.lower(): v for k, v in headers.items()}["content-type"] == "application/json"


def test_refusals(web: str) -> None:
    _analysis(web, IDS["one"])  # cached, so that its page is ready below
    status, _, body = get(f"{web}/api/matches/{IDS['money']}/analysis")
    assert status == 422 and b"money game is not analysed" in body
    status, _, _ = get(f"{web}/api/matches/eeeeeeeeeeeeeeee/analysis")
    assert status == 404
    status, _, _ = get(f"{web}/api/matches/not-an-id/analysis")
    assert status == 422
    # One analysis at a time may wait (analysis_queue=1): a second is refused meanwhile.
    status, _, _ = get(f"{web}/api/matches/{IDS['long']}/analysis")
    assert status == 202
    status, _, body = get(f"{web}/api/matches/{IDS['two']}/analysis")
    assert status == 503 and b"queued already" in body
    _analysis(web, IDS["long"])
    _analysis(web, IDS["two"])  # the queue has room again


def test_the_viewer_shows_every_decision_scored(web: str, page) -> None:
    page.goto(f"{web}/matches/{IDS['one']}#d=0&s=1&v=all")
    page.wait_for_selector("main[data-ready='1']")
    page.click("[data-action='analyse']")
    page.wait_for_selector("[data-analysis][data-ready='1']", timeout=300_000)
    summary = page.inner_text("[data-a-summary]")
    assert "bot0" in summary and "bot1" in summary and "Accuracy" in summary
    rows = page.query_selector_all("[data-a-decision] tr[data-a-action]")
    assert rows, "the decision at this step lists its actions"
    played = page.query_selector_all("[data-a-decision] tr[data-a-played='1']")
    assert len(played) == 1 and "played" in played[0].inner_text()
    classes = {r.get_attribute("class").split()[1] for r in rows}
    assert classes <= {"a-best", "a-good", "a-inaccuracy", "a-mistake", "a-blunder"}
    assert "a-best" in classes
    assert page.query_selector("[data-a-graph] svg polyline") is not None
    assert page.query_selector("[data-a-match-graph] svg polyline") is not None
    before = page.inner_text("[data-a-decision]")
    page.keyboard.press("ArrowRight")
    page.wait_for_function("document.querySelector('[data-where]').dataset.step === '2'")
    assert page.inner_text("[data-a-decision]") != before
    link = page.query_selector("[data-a-goto]")
    if link is not None:  # the biggest mistakes, one click away
        deal, step = link.get_attribute("data-a-goto").split(":")
        link.click()
        where = "document.querySelector('[data-where]').dataset"
        page.wait_for_function(f"{where}.step === '{step}' && {where}.deal === '{deal}'")
        assert page.query_selector("[data-a-decision] tr[data-a-played='1']") is not None
    shot(page, "analysis-viewer")
    assert page.errors == []


def test_the_html_file_embeds_the_analysis_and_runs_offline(tmp_path: Path, page) -> None:
    replay = small_replay(deals=1, seed=8)
    from kozel.analysis.review import Settings

    analysis = analyze_replay(encode_replay(replay), Settings(budget_ms=5, open_nodes=20_000))
    out = tmp_path / "match.html"
    out.write_text(replay_html(replay, analysis), encoding="utf-8")
    page.goto(out.as_uri() + "#d=0&s=2&v=all")
    page.wait_for_selector("[data-analysis][data-ready='1']")
    assert page.query_selector("[data-a-decision] tr[data-a-played='1']") is not None
    assert page.query_selector("[data-action='analyse']") is None  # embedded: no request
    assert page.errors == []  # nothing refused by the file's CSP


def test_kozel_analyze_takes_a_replay_id_on_a_web_server(web: str, tmp_path: Path) -> None:
    import subprocess

    res = subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", "analyze", IDS["one"], "--server", web,
         "--budget", "5", "--open-nodes", "20000", "--json", "--no-cache"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["match_id"] == IDS["one"]
