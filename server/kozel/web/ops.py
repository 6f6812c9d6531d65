"""The operators' page (``/ops``) and its JSON (``/api/ops/cluster``): every referee sharing the
store and every ladder, as ``kozel cluster status`` shows them (:mod:`kozel.ladder.cluster_status`).

Read-only, and only for operators: HTTP Basic with any user name and the referee's admin token
as the password. The web never holds that token: it is handed the token's SHA-256
(``KOZEL_OPS_TOKEN_SHA256``) and compares hashes in constant time; wrong passwords are answered
later and later per address, as bad admin tokens are over gRPC. Without it the page does not
exist (404). Rendered on the server, every value escaped; the page reloads itself every 10 s.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import html
from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from kozel.ladder.cluster_status import ClusterStatus, read_status
from kozel.server.throttle import FailureThrottle
from kozel.web.sources import Sources

REALM = 'Basic realm="Kozel Arena operators", charset="UTF-8"'
OPS_TOKEN_ENV = "KOZEL_OPS_TOKEN_SHA256"  # how `kozel web` is given the admin token's hash
REFRESH_S = 10


def token_sha256(token: str) -> str:
    """What the web is given instead of the admin token."""
    return hashlib.sha256(token.encode()).hexdigest()


def ops_router(sources: Sources, expected_sha256: str) -> APIRouter:
    router = APIRouter(include_in_schema=False)
    bad = FailureThrottle()  # wrong passwords by client address, each answered later

    async def status(request: Request) -> ClusterStatus:
        if not expected_sha256 or sources.store is None:
            raise HTTPException(404, "not found")
        host = request.client.host if request.client else ""
        if bad.crowded(host):  # refused before the password is even looked at
            raise HTTPException(429, "too many refused attempts pending", {"Retry-After": "5"})
        if not _authorized(request, expected_sha256):
            if request.headers.get("authorization"):  # a browser's first try carries none
                await bad.wait(host, bad.failed(host)[1])
            raise HTTPException(401, "operators only", headers={"WWW-Authenticate": REALM})
        return await asyncio.to_thread(read_status, sources.store)

    @router.get("/api/ops/cluster")
    async def cluster_json(request: Request) -> Response:
        got = await status(request)
        body = {**asdict(got), "problems": got.problems}
        return JSONResponse(body, headers={"Cache-Control": "no-store"})

    @router.get("/ops")
    async def cluster_page(request: Request) -> Response:
        got = await status(request)
        return HTMLResponse(_page(got), headers={"Cache-Control": "no-store"})

    return router


def _authorized(request: Request, expected_sha256: str) -> bool:
    scheme, _, encoded = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        _, _, password = base64.b64decode(encoded, validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return False
    return hmac.compare_digest(token_sha256(password), expected_sha256)


def _page(status: ClusterStatus) -> str:
    refs = _table(
        ("referee", "address", "live", "lease age", "draining", "running", "cap", "streams"),
        [
            (
                r.id,
                r.address,
                "yes" if r.live else "NO",
                f"{r.lease_age_s:.1f} s",
                "yes" if r.draining else "",
                r.running_matches,
                r.capacity,
                r.streams,
            )
            for r in status.referees
        ],
    )
    ladders = _table(
        ("ladder", "state", "scheduler", "waiting", "running", "assigned", "why no match"),
        [
            (
                x.name,
                x.state,
                x.scheduler or "none",
                x.waiting_bots,
                x.running_matches,
                x.assigned,
                x.stalled,
            )
            for x in status.ladders
        ],
    )
    problems = "".join(f"<li>{html.escape(p)}</li>" for p in status.problems)
    problems = f'<ul class="problems">{problems}</ul>' if problems else "<p>No problem seen.</p>"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Cluster · Kozel Arena</title>
<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/static/css/site.css">
</head><body data-page="ops">
<header class="top"><a class="brand" href="/">♠ Kozel Arena</a>
<nav><a href="/">Home</a><a href="/ops">Cluster</a></nav></header>
<main id="main"><h1>Cluster</h1>
<p>The same as <code>kozel cluster status</code>.
<a href="/ops" data-action="refresh">Refresh</a> <label><input type="checkbox"
data-refresh="{REFRESH_S}" checked> again every {REFRESH_S} s</label></p>
<h2>Problems</h2>{problems}
<h2>Referees</h2>{refs}
<h2>Ladders</h2>{ladders}
</main><script src="/static/js/ops.js"></script></body></html>"""


def _table(head: tuple[str, ...], rows: list[tuple[Any, ...]]) -> str:
    th = "".join(f'<th scope="col">{html.escape(h)}</th>' for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in rows
    )
    table = f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"
    return f'<div class="scroll">{table}</div>'
