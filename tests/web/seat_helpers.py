"""A referee with its web (a child, as ``kozel serve`` runs it) and no ladder, for the tests of
a person's seat; HTTP helpers that speak the seat API as the page does."""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from tests.web.conftest import start, stop


def serve(tmp: Path, web: dict[str, Any] | None = None, **more: Any) -> Iterator[tuple[str, str]]:
    """``kozel serve`` with its web child (``web`` adds to its settings, ``more`` to the
    referee's); yields (gRPC address, web URL)."""
    config = {
        "listen": "127.0.0.1:0",
        "web": {"listen": "127.0.0.1:0", "nice": 0, "idle": False, "cpu_share": 0, **(web or {})},
        "storage": {"data_dir": str(tmp / "data"), "replay_dir": str(tmp / "replays")},
        "logging": {"level": "WARNING"},
        "drain_timeout_s": 5,
        **more,
    }
    tmp.mkdir(parents=True, exist_ok=True)
    path = tmp / "referee.yaml"
    path.write_text(yaml.safe_dump(config))
    proc, found, _ = start(
        [sys.executable, "-m", "kozel.cli.main", "serve", "--config", str(path)],
        {"grpc": r"kozel referee listening on \S+:(\d+)", "web": r"web pages on (http://\S+)"},
    )
    try:
        yield f"127.0.0.1:{found['grpc']}", found["web"].rstrip("/")
    finally:
        stop(proc)


def call(
    method: str, url: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    """One HTTP request as the page sends it (JSON); (status, decoded JSON body)."""
    data = json.dumps(body).encode() if body is not None else None
    h = {"Accept": "application/json", **({"Content-Type": "application/json"} if data else {})}
    req = urllib.request.Request(url, data=data, method=method, headers={**h, **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            return e.code, json.loads(raw)
        except ValueError:
            return e.code, raw.decode(errors="replace")


def open_seat(web: str, **body: Any) -> dict[str, Any]:
    """A seat opened, once the address's request rate allows it (a test that limits the rate
    spends it playing)."""
    body = {"name": "Ann", "opponents": ["greedy"], "clock": "quick", **body}
    deadline = time.monotonic() + 30
    while True:
        status, got = call("POST", web + "/api/seats", body)
        if status != 429 or not str(got.get("detail", "")).startswith("too many requests"):
            break
        assert time.monotonic() < deadline, got
        time.sleep(0.2)
    assert status == 201, got
    return got


def state(web: str, seat: dict[str, Any], after: int = -1) -> dict[str, Any]:
    """The seat's state (waiting for a version past ``after``), as the page polls it: after
    a 429 (the request rate) again a second later."""
    for _ in range(30):
        status, got = call(
            "GET",
            f"{web}/api/seats/{seat['seat_id']}?after={after}",
            headers={"X-Seat-Token": seat["token"]},
        )
        if status != 429:
            break
        time.sleep(1)
    assert status == 200, got
    return got


def pick(request: dict[str, Any]) -> int:
    """A legal action the tests like: the longest lead, else a discard (then a beat), else
    a declaration."""
    acts = request["legal_actions"]

    def score(a: dict[str, Any]) -> tuple[int, int]:
        kind = a.get("kind", "")
        first = {"ACTION_KIND_DECLARE": 3, "ACTION_KIND_DISCARD": 2, "ACTION_KIND_LEAD": 1}
        return first.get(kind, 0), len(a.get("cards", []))

    return max(range(len(acts)), key=lambda i: score(acts[i]))


def play_out(web: str, seat: dict[str, Any], limit_s: float = 300) -> dict[str, Any]:
    """Answer every decision through the API until the match ends; the last state."""
    deadline, version = time.monotonic() + limit_s, -1
    while time.monotonic() < deadline:
        s = state(web, seat, version)
        version = s["version"]
        if s["end"] or s["error"]:
            return s
        r = s["request"]
        if r is not None:
            body = {"request_id": r["request_id"], "index": pick(r)}
            url, token = f"{web}/api/seats/{seat['seat_id']}/action", seat["token"]
            while (got := call("POST", url, body, {"X-Seat-Token": token}))[0] == 429:
                time.sleep(1)  # faster than a person: slowed down
            assert got[0] in (200, 409), got  # 409: the request moved on meanwhile
    raise AssertionError("the match did not end in time")
