"""A web load generator for ``kozel bench load --web-load N``: N connections (threads with
keep-alive HTTP/1.1) fetch the referee's pages, API and replays back to back, as fast as the
referee answers. Loopback only; bounded by the parent's stop command and a request cap.

Protocol (JSON lines, like :mod:`kozel.tools.bench_bots`): ``ready``; ``start`` -> counting;
``stop`` -> the window's counts; ``quit`` -> ``bye``.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from kozel.tools.bench_common import child_main, command_loop, emit

PAGES = (
    "/",
    "/matches",
    "/static/js/viewer.js",
    "/static/css/site.css",
    "/api/live",
    "/api/matches?limit=20",
    "/api/openapi.json",
)
PER_MATCH = (
    "/matches/{id}",
    "/api/matches/{id}",
    "/api/matches/{id}/replay.json",
    "/api/matches/{id}/replay.kzr",
)
MAX_REQUESTS = 2_000_000  # a hard bound on one run, whatever the parent does


@dataclass
class Counts:
    requests: int = 0
    errors: int = 0
    bytes: int = 0
    replays: int = 0
    latencies: list[float] = field(default_factory=list)


class WebLoad:
    def __init__(self, base: str, connections: int) -> None:
        parts = urlsplit(base)
        if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("the web load generator only targets loopback addresses")
        self.host, self.port = parts.hostname, parts.port or 80
        self.connections = connections
        self.counting = False
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.window = Counts()
        self.total = 0
        self.ids: list[str] = []
        self.started_at = 0.0

    def _get(self, conn: http.client.HTTPConnection, path: str) -> tuple[int, bytes]:
        conn.request("GET", path, headers={"Connection": "keep-alive"})
        r = conn.getresponse()
        return r.status, r.read()

    def worker(self, k: int) -> None:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        i = k
        while not self.done.is_set() and self.total < MAX_REQUESTS:
            i += 1
            ids = self.ids
            if ids and i % 2:
                path = PER_MATCH[i // 2 % len(PER_MATCH)].format(id=ids[i % len(ids)])
            else:
                path = PAGES[i // 2 % len(PAGES)]
            t = time.perf_counter()
            try:
                status, body = self._get(conn, path)
                ok = status in (200, 304)
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
                status, body, ok = 0, b"", False
            dt = time.perf_counter() - t
            if path.startswith("/api/matches?") and ok:
                self.ids = [m["match_id"] for m in json.loads(body)["matches"]] or self.ids
            with self.lock:
                self.total += 1
                if self.counting:
                    w = self.window
                    w.requests += 1
                    w.errors += not ok
                    w.bytes += len(body)
                    w.replays += path.endswith("replay.json") and ok
                    if len(w.latencies) < 200_000:
                        w.latencies.append(dt)
        conn.close()

    async def main(self) -> None:
        threads = [
            threading.Thread(target=self.worker, args=(k,), daemon=True)
            for k in range(self.connections)
        ]
        for t in threads:
            t.start()
        emit("ready", connections=self.connections)

        async def start() -> dict[str, Any]:
            with self.lock:
                self.window, self.counting = Counts(), True
            self.started_at = time.perf_counter()
            return {}

        async def stop() -> dict[str, Any]:
            with self.lock:
                self.counting = False
                w = self.window
            seconds = time.perf_counter() - self.started_at
            lat = sorted(w.latencies)

            def p(q: float) -> float | None:
                return lat[min(int(q * len(lat)), len(lat) - 1)] * 1000 if lat else None

            return {
                "requests": w.requests,
                "total_requests": self.total,
                "errors": w.errors,
                "bytes": w.bytes,
                "replay_json": w.replays,
                "seconds": seconds,
                "latency_p50_ms": p(0.5),
                "latency_p99_ms": p(0.99),
            }

        async def quit_() -> dict[str, Any]:
            self.done.set()
            for t in threads:
                await asyncio.to_thread(t.join, 35)
            return {"total_requests": self.total}

        await command_loop({"start": start, "stop": stop, "quit": quit_})


def main() -> None:
    config = json.loads(sys.argv[1])
    child_main(lambda: WebLoad(config["base"], config["connections"]).main())


if __name__ == "__main__":
    main()
