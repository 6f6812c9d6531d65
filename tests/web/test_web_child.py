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
