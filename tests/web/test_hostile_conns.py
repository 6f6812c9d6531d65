"""Connections to the web under abuse, over real sockets against ``kozel serve`` (its web child)
started with few descriptors (256, as a small container may give): 400 connections from one
address, half of them idle and half sending a request head that never ends (slowloris).
Once they took every descriptor, the pages went unanswered and the referee logged hundreds of
megabytes of the child's tracebacks. Now an honest client at another address is answered at
once, every attacking connection is closed within the head timeout, and the log stays small."""

from __future__ import annotations

import http.client
import os
import resource
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

from kozel.tools.bench_load import web_children

ATTACK = 400
FD_LIMIT = 256


def _start(tmp_path: Path, fd_limit: tuple[int, int]) -> tuple[subprocess.Popen[bytes], int]:
    config = {
        "listen": "127.0.0.1:0",
        "web": {"listen": "127.0.0.1:0", "nice": 0, "idle": False, "header_timeout_s": 2},
        "storage": {"data_dir": str(tmp_path / "data")},
        "logging": {"level": "WARNING"},
    }
    path = tmp_path / "referee.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = subprocess.Popen(
        [sys.executable, "-m", "kozel.cli.main", "serve", "--config", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, fd_limit),  # noqa: PLW1509
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith(b"web pages on "):
            return proc, int(line.split(b":")[-1].strip(b"/\n"))
    raise AssertionError("the referee did not start")


def _honest_get(port: int, path: str) -> tuple[int, float]:
    """GET from 127.0.0.2, another address than the attacker's (all of 127/8 is loopback)."""
    started = time.monotonic()
    conn = http.client.HTTPConnection(
        "127.0.0.1", port, timeout=30, source_address=("127.0.0.2", 0)
    )
    try:
        conn.request("GET", path)
        status = conn.getresponse().status
    finally:
        conn.close()
    return status, time.monotonic() - started


def _closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def test_a_flood_of_idle_and_slow_connections_leaves_the_pages_up(tmp_path: Path) -> None:
    proc, port = _start(tmp_path, (FD_LIMIT, FD_LIMIT))
    output: list[bytes] = []
    reader = threading.Thread(target=lambda: output.extend(proc.stdout or ()), daemon=True)
    reader.start()
    held: list[socket.socket] = []
    try:
        assert _honest_get(port, "/healthz")[0] == 200
        for i in range(ATTACK):
            sock = socket.create_connection(("127.0.0.1", port), timeout=10)
            if i % 2:
                sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")  # never ends
            held.append(sock)
        served = [_honest_get(port, path) for path in ("/healthz", "/", "/api/live")]
        for sock in held:
            sock.setblocking(False)
        deadline = time.monotonic() + 20
        while not all(_closed(s) for s in held) and time.monotonic() < deadline:
            time.sleep(0.2)
        open_left = sum(not _closed(s) for s in held)
        logged = sum(len(line) for line in output)
    finally:
        for sock in held:
            sock.close()
        proc.terminate()
        proc.wait(30)
    assert [s for s, _ in served] == [200, 200, 200], served
    assert max(t for _, t in served) < 2.0, served
    assert open_left == 0, f"{open_left} attacking connections still open"
    assert logged < 20_000, f"{logged} bytes of log"


def test_the_web_raises_its_descriptor_limit_where_allowed(tmp_path: Path) -> None:
    proc, port = _start(tmp_path, (FD_LIMIT, 4096))
    try:
        assert _honest_get(port, "/healthz")[0] == 200  # the child runs
        (child,) = web_children(proc.pid)
        limits = Path(f"/proc/{child}/limits").read_text()
        line = next(x for x in limits.splitlines() if x.startswith("Max open files"))
        assert line.split()[3:5] == ["4096", "4096"], line
    finally:
        proc.terminate()
        proc.wait(30)
