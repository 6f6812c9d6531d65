"""A real referee (``kozel serve`` with its web pages) and house bots playing a ladder, a real
store, and Debian's Chromium driven by Playwright.

Screenshots go to tests/web/screenshots/ (gitignored; the README names the folder)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
import yaml

from kozel.ladder.store import Store
from kozel.v1 import admin_pb2_grpc

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = Path(__file__).with_name("screenshots")
HOSTILE = "<img src=x onerror=alert(1)>"
LADDER = "classic-2p"
BOTS = [("greedy", "greedy-a"), ("greedy", "greedy-b"), ("random", HOSTILE)]
OPS_TOKEN = "ops-" + "5e" * 20  # the referee's admin token: the operators' page password
# The flags that keep Chromium off the closed network of these machines.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = pytest.mark.timeout(600)


@dataclass
class Arena:
    """The referee process, its addresses, its store and replay folder."""

    proc: subprocess.Popen[str]
    grpc: str
    web: str
    store: Store
    replay_dir: Path
    lines: list[str] = field(default_factory=list)
    bots: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def url(self, path: str) -> str:
        return self.web.rstrip("/") + path


def start(
    cmd: list[str], patterns: dict[str, str]
) -> tuple[subprocess.Popen[str], dict[str, str], list[str]]:
    """Start a process and wait (60 s at most) until its output matched every pattern."""
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    found: dict[str, str] = {}
    lines: list[str] = []
    deadline = time.monotonic() + 60
    assert proc.stdout is not None
    while time.monotonic() < deadline and set(patterns) - set(found):
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        for key, pattern in patterns.items():
            if m := re.search(pattern, line):
                found[key] = m.group(1)
    if set(patterns) - set(found):
        proc.kill()
        raise RuntimeError("did not start:\n" + "".join(lines) + proc.stdout.read())
    return proc, found, lines


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Arena]:
    """A referee serving one ladder and the web; three house bots (one with a hostile name)
    play until at least six matches are finished, then keep playing."""
    tmp = tmp_path_factory.mktemp("arena")
    url = f"sqlite:///{tmp / 'kozel.db'}"
    store = Store(url)
    store.migrate()
    tokens = {name: store.register_bot(name) for _, name in BOTS}
    config = {
        "listen": "127.0.0.1:0",
        # The suite keeps both cores busy, and an idle-class (or capped) child would wait for
        # it to end: these tests are about the pages. test_web_child checks the defaults.
        "web": {"listen": "127.0.0.1:0", "nice": 0, "idle": False, "cpu_share": 0},
        "storage": {
            "data_dir": str(tmp / "data"),
            "replay_dir": str(tmp / "replays"),
            "database_url": url,
        },
        "logging": {"level": "WARNING"},
        "operator": {"admin_token": OPS_TOKEN},
        "drain_timeout_s": 5,
        "ladders": [
            {
                "name": LADDER,
                "players": 2,
                "ruleset": {"preset": "classic"},
                "time_control": {"move_ms": 5000, "bank_ms": 10000},
                "max_concurrent_matches": 2,
            }
        ],
    }
    path = tmp / "referee.yaml"
    path.write_text(yaml.safe_dump(config))
    proc, found, lines = start(
        [sys.executable, "-m", "kozel.cli.main", "serve", "--config", str(path)],
        {"grpc": r"kozel referee listening on \S+:(\d+)", "web": r"web pages on (http://\S+)"},
    )
    a = Arena(proc, f"127.0.0.1:{found['grpc']}", found["web"], store, tmp / "replays", lines)
    for kind, name in BOTS:
        a.bots.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "kozel.cli.main",
                    "bot",
                    kind,
                    "--server",
                    a.grpc,
                    "--ladder",
                    LADDER,
                    "--name",
                    kind,
                    "--quiet",
                ],
                env={**os.environ, "KOZEL_BOT_TOKEN": tokens[name]},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
    try:
        deadline = time.monotonic() + 180
        while store.match_counts(LADDER).get("finished", 0) < 6:
            assert time.monotonic() < deadline, store.match_counts()
            assert proc.poll() is None, "the referee died"
            time.sleep(0.5)
        yield a
    finally:
        for bot in a.bots:
            bot.terminate()
        for bot in a.bots:
            bot.wait(timeout=30)
        stop(proc)
        store.close()


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """A plain HTTP GET (status, headers, body), also for error statuses."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Chromium, per module: Playwright's sync API holds an event loop on this thread while it
    runs, and other modules' tests call asyncio.run (pytest ends a module's fixtures before
    the next module's tests)."""
    if not CHROMIUM.exists():
        pytest.fail("Debian's chromium is not installed (.ci/run installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser) -> Iterator[object]:
    """A fresh page; fails the test on any script error or CSP violation it logs."""
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.errors = errors
    yield pg
    context.close()


def shot(page, name: str, full_page: bool = True) -> Path:
    """Save a screenshot under tests/web/screenshots/."""
    SHOTS.mkdir(exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


def admin(arena: Arena, method: str, request) -> None:
    """Call an AdminService method of the arena's referee with its admin token."""
    with grpc.insecure_channel(arena.grpc) as channel:
        getattr(admin_pb2_grpc.AdminServiceStub(channel), method)(
            request, timeout=10, metadata=[("authorization", f"Bearer {OPS_TOKEN}")]
        )
