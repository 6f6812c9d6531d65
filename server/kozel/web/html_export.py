"""One self-contained HTML file holding the replay viewer and one match (``kozel replay
html``), with its analysis if given (``--analysis``): styles, scripts and the replay JSON
inline, so it works from ``file://`` offline. A
Content-Security-Policy in the file allows exactly its own inline scripts and styles (by hash)
and no network at all."""

from __future__ import annotations

import base64
import hashlib
import html
import json
from importlib import resources
from typing import Any

from kozel.v1 import replay_pb2
from kozel.web.replay_json import replay_to_json

_STATIC = resources.files("kozel.web") / "static"
_SHARED = ("js/common.js", "js/cards.js", "js/story.js", "js/table.js", "js/think.js")
_SCRIPTS = (*_SHARED, "js/viewer.js")
_ANALYSIS_SCRIPTS = (*_SHARED, "js/analysis.js", "js/viewer.js")


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def _script_json(data: object) -> str:
    """JSON safe inside a <script> element (no "</script>", no "<!--")."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def replay_html(replay: replay_pb2.Replay, analysis: dict[str, Any] | None = None) -> str:
    """The HTML file's text for ``replay`` (and its ``analysis``, kozel-analysis JSON)."""
    css = (_STATIC / "css/site.css").read_text(encoding="utf-8")
    names = _SCRIPTS if analysis is None else _ANALYSIS_SCRIPTS
    if analysis is not None:
        css += "\n" + (_STATIC / "css/analysis.css").read_text(encoding="utf-8")
    scripts = [(_STATIC / s).read_text(encoding="utf-8") for s in names]
    csp = (
        "default-src 'none'; img-src data:; base-uri 'none'; form-action 'none'; "
        f"style-src {_hash(css)}; script-src {' '.join(_hash(s) for s in scripts)}"
    )
    title = html.escape(f"Kozel match {replay.match_id}")
    body_scripts = "\n".join(f"<script>{s}</script>" for s in scripts)
    embedded = (
        ""
        if analysis is None
        else f'<script type="application/json" id="analysis-data">{_script_json(analysis)}'
        "</script>\n"
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{html.escape(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{css}</style>
</head><body data-page="viewer">
<header class="top"><span class="brand">♠ Kozel Arena</span><nav><span>replay file</span></nav></header>
<main id="main"><p class="loading">Loading…</p></main>
<script type="application/json" id="replay-data">{_script_json(replay_to_json(replay))}</script>
{embedded}{body_scripts}
</body></html>
"""
