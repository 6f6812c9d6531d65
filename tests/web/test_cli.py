"""The commands around the web: kozel replay fetch (gRPC and HTTP), kozel replay html, the
demo's browser hint, and kozel web over a replay folder alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.web.conftest import LADDER, Arena, get, start, stop

ROOT = Path(__file__).resolve().parents[2]


def kozel(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``kozel`` run from the checkout, with ``.venv/bin`` not on PATH (as after make setup)."""
    return subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def test_replay_fetch_by_id_over_grpc_and_http(arena: Arena, tmp_path: Path) -> None:
    row = next(m for m in arena.store.matches(ladder=LADDER, limit=50) if m.status == "finished")
    want = (arena.replay_dir / f"{row.id}.kzr").read_bytes()
    for server, name in ((arena.grpc, "grpc.kzr"), (arena.web, "http.kzr")):
        out = tmp_path / name
        res = kozel("replay", "fetch", row.id, "--server", server, "-o", str(out))
        assert res.returncode == 0, res.stdout + res.stderr
        assert out.read_bytes() == want
    res = kozel(
        "replay", "fetch", "ffffffffffff", "--server", arena.grpc, "-o", str(tmp_path / "x.kzr")
    )
    assert res.returncode == 1 and "NOT_FOUND" in res.stderr
    res = kozel("replay", "fetch", "ffffffffffff", "--server", arena.web)
    assert res.returncode == 1 and "404" in res.stderr
    res = kozel("replay", "fetch", "../../etc/passwd", "--server", arena.grpc)
    assert res.returncode == 2 and "hex" in res.stderr


def test_replay_html_refuses_what_is_not_a_replay(tmp_path: Path) -> None:
    bad = tmp_path / "bad.kzr"
    bad.write_bytes(b"not a replay")
    res = kozel("replay", "html", str(bad), "-o", str(tmp_path / "bad.html"))
    assert res.returncode == 2 and "cannot read the replay" in res.stderr
    assert not (tmp_path / "bad.html").exists()


def test_demo_ends_with_how_to_view_the_replays_in_a_browser(tmp_path: Path) -> None:
    replays = tmp_path / "replays"
    res = kozel("demo", "--replay-dir", str(replays), timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    kzr = sorted(replays.glob("*.kzr"))
    html = sorted(replays.glob("*.html"))
    assert len(kzr) == 9 and [p.stem for p in html] == [p.stem for p in kzr]
    out = res.stdout.replace("\n", "")
    assert "In a browser" in res.stdout and f"file://{html[0].resolve()}" in out
    hint = next(ln.split()[0] for ln in res.stdout.splitlines() if " web --replays " in ln)
    assert hint == ".venv/bin/kozel" and (ROOT / hint).exists(), res.stdout  # typed as shown
    assert f"{hint} web --replays {replays}" in out
    # ... and that command serves them: the match list comes from the replay folder.
    web, found, _ = start(
        [
            sys.executable,
            "-m",
            "kozel.cli.main",
            "web",
            "--replays",
            str(replays),
            "--listen",
            "127.0.0.1:0",
        ],
        {"web": r"web pages on (http://\S+)"},
    )
    try:
        base = found["web"].rstrip("/")
        page = json.loads(get(f"{base}/api/matches?limit=5")[2])
        assert len(page["matches"]) == 5 and page["next_cursor"] == "5"
        rest = json.loads(get(f"{base}/api/matches?limit=50&cursor=5")[2])
        ids = {m["match_id"] for m in page["matches"] + rest["matches"]}
        assert ids == {p.stem for p in kzr}
        status, _, body = get(f"{base}/matches/{kzr[0].stem}")
        assert status == 200
        status, _, body = get(f"{base}/api/matches/{kzr[0].stem}/replay.json")
        assert status == 200 and json.loads(body)["match_id"] == kzr[0].stem
    finally:
        stop(web)


def test_a_web_address_in_use_stops_kozel_serve_with_a_clear_error(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        res = kozel(
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--web-listen",
            f"127.0.0.1:{port}",
            "--data-dir",
            str(tmp_path / "data"),
            "--log-level",
            "WARNING",
            timeout=120,
        )
    assert res.returncode == 1
    assert f"error: the web server cannot listen on 127.0.0.1:{port}" in res.stderr


def test_kozel_web_refuses_a_limit_out_of_its_range_or_unknown(tmp_path: Path) -> None:
    res = kozel("web", "--replays", str(tmp_path), "--limit", "max_page=0")
    assert res.returncode == 2
    assert "--limit max_page: input should be greater than or equal to 1" in res.stdout
    res = kozel("web", "--replays", str(tmp_path), "--limit", "no_such_limit=3")
    assert res.returncode == 2 and "KEY one of max_page" in res.stdout
