"""The operators' page of a real referee's web child: behind the admin token (HTTP Basic),
never the token itself in the child, the cluster as ``kozel cluster status`` shows it."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

from tests.web.conftest import LADDER, OPS_TOKEN, Arena, get, shot


def _basic(password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"ops:{password}".encode()).decode()}


def test_the_ops_page_is_for_operators_only(arena: Arena) -> None:
    status, headers, _ = get(arena.url("/ops"))
    lowered = {k.lower(): v for k, v in headers.items()}
    assert status == 401 and lowered["www-authenticate"].startswith("Basic")
    for wrong in ("", OPS_TOKEN[:-1], OPS_TOKEN + "x", "ops"):
        assert get(arena.url("/api/ops/cluster"), _basic(wrong))[0] == 401
    status, _, body = get(arena.url("/api/ops/cluster"), _basic(OPS_TOKEN))
    assert status == 200
    got = json.loads(body)
    (ref,) = got["referees"]
    assert ref["live"] and not ref["draining"] and ref["capacity"] > 0
    (ladder,) = got["ladders"]
    assert ladder["name"] == LADDER and ladder["state"] == "running"
    assert ladder["scheduler"] == ref["id"]


def test_the_web_child_never_holds_the_admin_token(arena: Arena) -> None:
    children = [
        p for p in Path("/proc").iterdir() if p.name.isdigit() and _parent(p) == arena.proc.pid
    ]
    assert children, "the referee runs its web pages in a child process"
    for child in children:
        environ = (child / "environ").read_bytes()
        cmdline = (child / "cmdline").read_bytes()
        assert OPS_TOKEN.encode() not in environ + cmdline
        assert b"KOZEL_OPS_TOKEN_SHA256=" in environ


def _parent(proc: Path) -> int:
    try:
        stat = (proc / "stat").read_text()
    except OSError:
        return -1
    return int(stat.rsplit(")", 1)[1].split()[1])


def test_the_ops_page_shows_the_cluster_in_chromium(arena: Arena, browser) -> None:
    context = browser.new_context(
        viewport={"width": 1200, "height": 900},
        http_credentials={"username": "ops", "password": OPS_TOKEN},
    )
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(arena.url("/ops"))
    assert page.locator("h1").inner_text() == "Cluster"
    rows = page.locator("table").nth(1).locator("tbody tr")
    assert rows.count() == 1 and LADDER in rows.first.inner_text()
    assert "running" in rows.first.inner_text()
    shot(page, "ops")
    context.close()
    assert errors == []
    assert os.environ.get("KOZEL_OPS_TOKEN_SHA256") is None  # the tests' own process holds none
