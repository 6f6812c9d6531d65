"""Sealed duplicate halves stay hidden on the web as over gRPC: while the twin is played, the
first half's replay (which holds the twin's decks) is refused, over the referee's own web
server and over a standalone one that knows the ladder is a duplicate one."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from kozel.ladder.store import Store
from kozel.sdk import play
from kozel.sdk.house import RandomBot
from kozel.v1 import referee_pb2 as rpb
from tests.web.conftest import get, start, stop

LADDER = {
    "name": "dup",
    "players": 2,
    "ruleset": {"preset": "classic"},
    "duplicate": True,
    "time_control": {"move_ms": 2000, "bank_ms": 4000},
}

pytestmark = pytest.mark.timeout(300)


class Slow(RandomBot):
    ends: ClassVar[list[rpb.MatchEnd]] = []

    def choose(self, request: rpb.DecisionRequest) -> int:
        time.sleep(0.02)
        return super().choose(request)

    def on_match_end(self, msg: rpb.MatchEnd) -> None:
        Slow.ends.append(msg)


def _run(scenario) -> BaseException | None:
    try:
        asyncio.run(scenario())
    except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
        return exc
    return None


def test_a_sealed_half_is_refused_until_its_twin_ends(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'kozel.db'}"
    store = Store(url)
    store.migrate()
    tokens = {n: store.register_bot(n) for n in ("dup-a", "dup-b")}
    (tmp_path / "ladders.yaml").write_text(yaml.safe_dump({"ladders": [LADDER]}))
    # The referee's own web server runs in its event loop here (LobbySources: the lobby's set
    # of sealed halves); the standalone one asks the referee (DownloadReplay).
    config = {
        "listen": "127.0.0.1:0",
        "web": {"listen": "127.0.0.1:0", "in_process": True},
        "storage": {
            "data_dir": str(tmp_path / "data"),
            "replay_dir": str(tmp_path / "replays"),
            "database_url": url,
        },
        "logging": {"level": "WARNING"},
        "ladders_file": str(tmp_path / "ladders.yaml"),
    }
    (tmp_path / "referee.yaml").write_text(yaml.safe_dump(config))
    ref, found, _ = start(
        [
            sys.executable,
            "-m",
            "kozel.cli.main",
            "serve",
            "--config",
            str(tmp_path / "referee.yaml"),
        ],
        {"grpc": r"kozel referee listening on \S+:(\d+)", "web": r"web pages on (http://\S+)"},
    )
    web = found["web"].rstrip("/")
    grpc_addr = f"127.0.0.1:{found['grpc']}"
    alone, alone_found, _ = start(
        [
            sys.executable,
            "-m",
            "kozel.cli.main",
            "web",
            "--db",
            url,
            "--replays",
            str(tmp_path / "replays"),
            "--ladders",
            str(tmp_path / "ladders.yaml"),
            "--listen",
            "127.0.0.1:0",
            "--referee",
            grpc_addr,
        ],
        {"web": r"web pages on (http://\S+)"},
    )
    standalone = alone_found["web"].rstrip("/")
    Slow.ends = []
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        tasks = [
            asyncio.create_task(
                play(
                    Slow, grpc_addr, name=n, join_ladder="dup", token=t, matches=2, reconnect=False
                )
            )
            for n, t in tokens.items()
        ]
        while not Slow.ends:
            await asyncio.sleep(0.005)
        first = Slow.ends[0].match_id
        seen["first"] = first
        for base in (web, standalone):  # the twin is being played now
            seen[base] = [
                await asyncio.to_thread(get, f"{base}/api/matches/{first}/{what}")
                for what in ("replay.kzr", "replay.json")
            ]
            seen[base + "/detail"] = await asyncio.to_thread(get, f"{base}/api/matches/{first}")
        await asyncio.gather(*tasks)

    try:
        # In a thread of its own: Playwright's sync API may hold this thread's event loop.
        worker = threading.Thread(target=lambda: seen.update(error=_run(scenario)))
        worker.start()
        worker.join(240)
        assert seen.get("error") is None, seen.get("error")
        first = seen["first"]
        if len({e.match_id for e in Slow.ends}) < 2:
            pytest.fail("the twin was not played")
        for base in (web, standalone):
            statuses = [s for s, _, _ in seen[base]]
            assert statuses == [403, 403], (base, seen[base])
            assert b"sealed" in seen[base][0][2]
            status, _, body = seen[base + "/detail"]
            assert status == 200 and json.loads(body)["sealed"] is True
        # Both halves played: the first half is public everywhere.
        deadline = time.monotonic() + 30
        while store.match_counts("dup").get("finished", 0) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        for base in (web, standalone):
            status, _, body = get(f"{base}/api/matches/{first}/replay.kzr")
            assert status == 200, (base, body[:200])
            assert json.loads(get(f"{base}/api/matches/{first}")[2])["sealed"] is False
    finally:
        stop(alone)
        stop(ref)
        store.close()


def _closed_port() -> str:
    """A loopback address nothing listens on: a referee that cannot be reached."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


def _web(*args: str) -> tuple[subprocess.Popen[str], str]:
    proc, found, _ = start(
        [sys.executable, "-m", "kozel.cli.main", "web", "--listen", "127.0.0.1:0", *args],
        {"web": r"web pages on (http://\S+)"},
    )
    return proc, found["web"].rstrip("/")


def test_a_sealed_half_stays_sealed_wherever_its_seal_cannot_be_checked(tmp_path: Path) -> None:
    """The referee's web child (default, as kozel serve starts it), and standalone web servers
    that were told nothing of the ladders: one follows a referee that cannot answer, one
    follows none. While the twin is played none of them gives the first half's replay; once
    both halves are played the referee's child does."""
    url = f"sqlite:///{tmp_path / 'kozel.db'}"
    store = Store(url)
    store.migrate()
    tokens = {n: store.register_bot(n) for n in ("dup-a", "dup-b")}
    config = {
        "listen": "127.0.0.1:0",
        "web": {"listen": "127.0.0.1:0", "nice": 0, "idle": False, "cpu_share": 0},
        "storage": {
            "data_dir": str(tmp_path / "data"),
            "replay_dir": str(tmp_path / "replays"),
            "database_url": url,
        },
        "logging": {"level": "WARNING"},
        "ladders": [LADDER],
    }
    (tmp_path / "referee.yaml").write_text(yaml.safe_dump(config))
    ref, found, _ = start(
        [
            sys.executable,
            "-m",
            "kozel.cli.main",
            "serve",
            "--config",
            str(tmp_path / "referee.yaml"),
        ],
        {"grpc": r"kozel referee listening on \S+:(\d+)", "web": r"web pages on (http://\S+)"},
    )
    child = found["web"].rstrip("/")
    grpc_addr = f"127.0.0.1:{found['grpc']}"
    replays = str(tmp_path / "replays")
    unreachable, lost = _web("--db", url, "--replays", replays, "--referee", _closed_port())
    alone, blind = _web("--db", url, "--replays", replays)
    Slow.ends = []
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        tasks = [
            asyncio.create_task(
                play(
                    Slow, grpc_addr, name=n, join_ladder="dup", token=t, matches=2, reconnect=False
                )
            )
            for n, t in tokens.items()
        ]
        while not Slow.ends:
            await asyncio.sleep(0.005)
        first = seen["first"] = Slow.ends[0].match_id
        for base in (child, lost, blind):  # the twin is being played now
            seen[base] = [
                await asyncio.to_thread(get, f"{base}/api/matches/{first}/{what}")
                for what in ("replay.kzr", "replay.json")
            ]
            seen[base + "/detail"] = await asyncio.to_thread(get, f"{base}/api/matches/{first}")
        seen["twin_running"] = len({e.match_id for e in Slow.ends}) < 2
        await asyncio.gather(*tasks)

    try:
        worker = threading.Thread(target=lambda: seen.update(error=_run(scenario)))
        worker.start()
        worker.join(240)
        assert seen.get("error") is None, seen.get("error")
        assert seen["twin_running"], "the twin ended before the pages were asked"
        first = seen["first"]
        for base, refused in ((child, 403), (lost, 503), (blind, 403)):
            assert [s for s, _, _ in seen[base]] == [refused, refused], (base, seen[base])
            status, _, body = seen[base + "/detail"]
            assert status == 200 and json.loads(body)["sealed"] is True, (base, body)
        deadline = time.monotonic() + 30
        while store.match_counts("dup").get("finished", 0) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        status, _, body = get(f"{child}/api/matches/{first}/replay.kzr")
        assert status == 200, body[:200]
        assert get(f"{blind}/api/matches/{first}/replay.kzr")[0] == 200  # the twin is on record
    finally:
        stop(alone)
        stop(unreachable)
        stop(ref)
        store.close()


def test_standalone_web_serves_the_store_and_the_referees_replays_and_live_matches(
    arena, tmp_path: Path
) -> None:
    url = str(arena.store.engine.url)
    empty = tmp_path / "no-replays-here"  # replays come from the referee (DownloadReplay)
    alone, found, _ = start(
        [
            sys.executable,
            "-m",
            "kozel.cli.main",
            "web",
            "--db",
            url,
            "--replays",
            str(empty),
            "--listen",
            "127.0.0.1:0",
            "--referee",
            arena.grpc,
        ],
        {"web": r"web pages on (http://\S+)"},
    )
    base = found["web"].rstrip("/")
    try:
        ours = json.loads(get(f"{base}/api/ladders/classic-2p/standings")[2])["standings"]
        assert {r["bot"] for r in ours} == {s.name for s in arena.store.standings("classic-2p")}
        row = next(m for m in arena.store.matches(limit=50) if m.status == "finished")
        status, _, data = get(f"{base}/api/matches/{row.id}/replay.kzr")
        assert status == 200 and data == (arena.replay_dir / f"{row.id}.kzr").read_bytes()
        status, _, page = get(f"{base}/matches/{row.id}")
        assert status == 200 and b"viewer.js" in page
        # Live: the running ladder matches come from the store, their events from the referee.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            running = json.loads(get(f"{base}/api/live")[2])["matches"]
            for m in running:
                import urllib.request

                try:
                    with urllib.request.urlopen(
                        f"{base}/api/live/{m['match_id']}/events", timeout=30
                    ) as r:
                        head = b"".join(r.readline() for _ in range(3))
                except Exception:  # noqa: BLE001 - it ended meanwhile: try the next one
                    continue
                assert b"event: snapshot" in head, head
                return
            time.sleep(0.05)
        pytest.fail("no running match could be followed through the standalone web")
    finally:
        stop(alone)
