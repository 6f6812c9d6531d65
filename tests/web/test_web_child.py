"""The web child of a referee takes only the CPU time the match clocks leave over, and at
most a quarter of a core."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from kozel.tools.bench_load import web_children
from tests.ladder.conftest import pg_url  # noqa: F401 (the fixture: a fresh PostgreSQL database)
from tests.tlsfiles import issue_pki
from tests.web.conftest import get, start, stop

# A child that must answer pages runs at normal priority here: the suite keeps both cores busy,
# and an idle-class child would get no CPU until it ends (the first test checks the defaults).
SERVES: dict[str, object] = {"nice": 0, "idle": False}


def _referee(
    tmp_path: Path, web: dict[str, object] | None = None, **extra: object
) -> tuple[subprocess.Popen[str], str]:
    config = {
        "listen": "127.0.0.1:0",
        "web": {"listen": "127.0.0.1:0", **(web or {})},
        "storage": {"data_dir": str(tmp_path / "data")},
        "logging": {"level": "WARNING"},
        **extra,
    }
    path = tmp_path / "referee.yaml"
    path.write_text(yaml.safe_dump(config))
    proc, found, _ = start(
        [sys.executable, "-m", "kozel.cli.main", "serve", "--config", str(path)],
        {"web": r"web pages on (http://\S+)"},
    )
    return proc, found["web"]


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux only")
def test_the_web_child_runs_at_idle_priority_by_default(tmp_path: Path) -> None:
    proc, _ = _referee(tmp_path)
    try:
        web = web_children(proc.pid)
        assert len(web) == 1, "the referee runs one web child"
        (child,) = web
        assert os.sched_getscheduler(child) == os.SCHED_IDLE
        assert os.getpriority(os.PRIO_PROCESS, child) == 19
        argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        assert argv[argv.index(b"--cpu-share") + 1] == b"0.25"  # web.cpu_share
    finally:
        stop(proc)


def test_a_web_child_that_dies_is_started_again_on_the_same_address(tmp_path: Path) -> None:
    proc, url = _referee(tmp_path, SERVES)
    try:
        assert _healthy(url, 60)
        (first,) = web_children(proc.pid)
        os.kill(first, signal.SIGKILL)
        # Meanwhile connections wait in the referee's backlog; a new child answers them.
        assert _healthy(url, 90), "no web child answered after the first was killed"
        web = web_children(proc.pid)
        assert len(web) == 1 and web[0] != first, web
        assert proc.poll() is None, "the referee kept running"
    finally:
        stop(proc)
    assert proc.returncode == 0


def test_a_referee_with_tls_serves_its_web_from_a_child_over_a_unix_socket(
    tmp_path: Path,
) -> None:
    pki = issue_pki(tmp_path, "127.0.0.1", "localhost")
    tls = {"cert_file": str(pki["cert"]), "key_file": str(pki["key"])}
    proc, url = _referee(tmp_path, SERVES, tls={**tls, "client_ca_file": str(pki["ca"])})
    try:
        (child,) = web_children(proc.pid)  # a child, not the referee's own loop
        argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        referee = argv[argv.index(b"--referee") + 1].decode()
        assert referee.startswith("unix:/"), referee
        sock = Path(referee.removeprefix("unix:"))
        assert sock.is_socket() and (sock.parent.stat().st_mode & 0o077) == 0
        # That socket is the referee's, in plaintext ...
        with grpc.insecure_channel(referee) as channel:
            got = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=30
            )
        assert got.status == health_pb2.HealthCheckResponse.SERVING
        # ... and the child serves pages that ask it for the running matches.
        assert _healthy(url, 60)
        status, _, body = get(url + "api/live")
        assert status == 200 and json.loads(body) == {"matches": []}, body
    finally:
        stop(proc)
    assert not sock.parent.exists(), "the socket folder is removed at stop"


def _healthy(url: str, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if get(url + "healthz")[0] == 200:
                return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


def test_the_web_child_sees_no_secret_on_its_command_line_nor_the_admin_token(
    tmp_path: Path,
    pg_url: str,  # noqa: F811 (the fixture)
) -> None:
    """The operator gives the database URL (password included) and the admin token only in
    the environment. Any local user can read a command line (/proc/PID/cmdline): the child's
    holds neither. Its environment (readable by its own user only) holds the URL it reads the
    store with and the admin token's hash, never the token or the referee's own settings."""
    token = "t0k-" + "9f" * 20
    config = {
        "listen": "127.0.0.1:0",
        "web": {"listen": "127.0.0.1:0", **SERVES},
        "storage": {"data_dir": str(tmp_path / "data")},
        "logging": {"level": "WARNING"},
        "ladders": [{"name": "plain", "players": 2, "ruleset": {"preset": "classic"}}],
    }
    path = tmp_path / "referee.yaml"
    path.write_text(yaml.safe_dump(config))
    env = {"KOZEL_STORAGE__DATABASE_URL": pg_url, "KOZEL_OPERATOR__ADMIN_TOKEN": token}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kozel.cli.main", "serve", "--config", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
    )
    try:
        assert proc.stdout is not None
        url = ""
        for line in proc.stdout:
            if line.startswith("web pages on "):
                url = line.split()[-1]
                break
        assert url and _healthy(url, 60)
        (child,) = web_children(proc.pid)
        argv = Path(f"/proc/{child}/cmdline").read_bytes()
        password = pg_url.split("://", 1)[1].split("@", 1)[0].encode()  # user:password
        assert password not in argv and b"postgresql" not in argv, argv
        environ = dict(
            item.split(b"=", 1)
            for item in Path(f"/proc/{child}/environ").read_bytes().split(b"\0")
            if b"=" in item
        )
        assert token.encode() not in b"\0".join(environ.values())
        assert not {k for k in environ if k.startswith(b"KOZEL_")} - {
            b"KOZEL_WEB_DATABASE_URL",
            b"KOZEL_OPS_TOKEN_SHA256",
            b"KOZEL_ENGINE_PURE",
            b"KOZEL_WEB_PROXY_KEY",  # made up at each start: its visitors' addresses count
        }, sorted(environ)
        assert environ[b"KOZEL_WEB_PROXY_KEY"] not in argv
        assert environ[b"KOZEL_WEB_DATABASE_URL"] == pg_url.encode()
        # ... and with it the child reads the store.
        from kozel.ladder.store import Store

        store = Store(pg_url)
        store.register_bot("seen-by-the-web")
        store.close()
        status, _, body = get(url + "api/bots/seen-by-the-web")
        assert status == 200 and json.loads(body)["name"] == "seen-by-the-web", body
    finally:
        stop(proc)
