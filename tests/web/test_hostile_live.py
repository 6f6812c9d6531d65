"""Live streams under abuse, over real sockets against ``kozel serve`` and its web child with
its CPU cap on (a quarter of a core): one address opens Server-Sent Event streams of a running
match and reads them, another queues a crowd of them. Once one address held all 64 live slots
of the match and the queue made the home page take 15 to 60 s. Now one address gets its
share of a match's live slots (``web.max_live_per_address``), the CPU cap serves addresses
in turn, and the honest address loads pages at once and watches the match too."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
import yaml

from kozel.core.convert import dict_to_struct
from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import referee_pb2_grpc
from tests.web.conftest import start, stop
from tests.web.test_live import SLOW_BOT

READERS = 64  # the referee's max_spectators_per_match
QUEUED = 60


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, int]]:
    config = {
        "listen": "127.0.0.1:0",
        "web": {"listen": "127.0.0.1:0", "nice": 0, "idle": False, "cpu_share": 0.25},
        "storage": {"data_dir": str(tmp_path / "data")},
        "logging": {"level": "WARNING"},
        "drain_timeout_s": 2,
    }
    path = tmp_path / "referee.yaml"
    path.write_text(yaml.safe_dump(config))
    proc, found, _ = start(
        [sys.executable, "-m", "kozel.cli.main", "serve", "--config", str(path)],
        {"grpc": r"kozel referee listening on \S+:(\d+)", "web": r"web pages on \S+:(\d+)"},
    )
    try:
        yield f"127.0.0.1:{found['grpc']}", int(found["web"].strip("/"))
    finally:
        stop(proc)


def _match(grpc_addr: str, web: int) -> tuple[str, subprocess.Popen[bytes]]:
    """A table of a house bot against a slow bot process: a match that runs a minute."""
    ruleset = pb.Ruleset(preset="classic")
    ruleset.options.CopyFrom(dict_to_struct({"fixed_deals": 60}))
    with grpc.insecure_channel(grpc_addr) as channel:
        table = (
            referee_pb2_grpc.RefereeServiceStub(channel)
            .CreateTable(
                rpb.CreateTableRequest(
                    ruleset=ruleset,
                    players=2,
                    house_bots=["greedy"],
                    time_control=pb.TimeControl(move_ms=5000, bank_ms=10000),
                )
            )
            .table_id
        )
    bot = subprocess.Popen(
        [sys.executable, "-c", SLOW_BOT, grpc_addr, table, "0.05"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        _, body, _ = _get(web, "/api/live")
        found = [m for m in json.loads(body)["matches"] if m["table_id"] == table]
        if found:
            return found[0]["match_id"], bot
        time.sleep(0.1)
    bot.kill()
    raise AssertionError("the match did not start")


def _get(port: int, path: str, source: str = "127.0.0.2") -> tuple[int, bytes, float]:
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(source, 0))
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        if response.getheader("content-type", "").startswith("text/event-stream"):
            body = response.fp.readline()  # the stream started
        else:
            body = response.read()
        return response.status, body, time.monotonic() - started
    finally:
        conn.close()


class Streams:
    """SSE requests from one address, each read (or not) by a thread of its own."""

    def __init__(self, port: int, source: str, path: str, read: bool) -> None:
        self.port, self.source, self.path, self.read = port, source, path, read
        self.statuses: list[int] = []
        self.socks: list[socket.socket] = []
        self.lock = threading.Lock()

    def open(self, n: int) -> None:
        for _ in range(n):
            sock = socket.create_connection(
                ("127.0.0.1", self.port), timeout=120, source_address=(self.source, 0)
            )
            sock.sendall(f"GET {self.path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            self.socks.append(sock)
            if self.read:
                threading.Thread(target=self._read, args=(sock,), daemon=True).start()

    def _read(self, sock: socket.socket) -> None:
        try:
            head = sock.recv(65536)
            status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 0
            with self.lock:
                self.statuses.append(status)
            while sock.recv(65536):
                pass
        except OSError:
            return

    def close(self) -> None:
        for sock in self.socks:
            sock.close()


def test_one_address_cannot_hold_a_match_nor_starve_the_pages(served: tuple[str, int]) -> None:
    grpc_addr, web = served
    match_id, bot = _match(grpc_addr, web)
    events = f"/api/live/{match_id}/events"
    readers = Streams(web, "127.0.0.1", events, read=True)
    queued = Streams(web, "127.0.0.3", events, read=False)
    try:
        readers.open(READERS)
        deadline = time.monotonic() + 30
        while len(readers.statuses) < READERS and time.monotonic() < deadline:
            time.sleep(0.05)
        queued.open(QUEUED)
        time.sleep(1.0)
        pages = [_get(web, path) for path in ("/", "/api/live", "/matches", "/")]
        watched = _get(web, events)
    finally:
        readers.close()
        queued.close()
        bot.kill()
        bot.wait()
    assert [s for s, _, _ in pages] == [200] * 4, pages
    assert max(t for _, _, t in pages) < 3.0, [round(t, 2) for _, _, t in pages]
    assert watched[0] == 200 and watched[2] < 3.0, watched
    # The reading address got its share of the match's live slots, and no more.
    served_streams = readers.statuses.count(200)
    assert 1 <= served_streams <= 16, sorted(readers.statuses)
    assert set(readers.statuses) <= {200, 429}, sorted(readers.statuses)
