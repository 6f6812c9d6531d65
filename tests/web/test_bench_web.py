"""``kozel bench load --web-load N`` at a tiny size: the web load generator fetches the
referee's pages and replays while bots play, and its counts are reported. No speed asserted."""

from __future__ import annotations

import json
import subprocess
import sys


def test_load_bench_with_a_web_load_reports_web_requests() -> None:
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "kozel.cli.main",
            "bench",
            "load",
            "--json",
            "--streams",
            "20",
            "--duration",
            "4",
            "--warmup",
            "2",
            "--bot-processes",
            "1",
            "--web-load",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout)
    assert out["decisions_per_s"] > 0 and out["errors"] == 0, out
    assert out["web_connections"] == 2
    # The window is tiny and the web child runs niced on a busy machine: count from its start.
    assert out["web_requests_total"] >= 1 and out["web_errors"] == 0, out
    assert out["web_requests_per_s"] >= 0
    assert out["web_replay_json_per_s"] >= 0  # reported (a tiny run may fetch none)
    assert isinstance(out["spurious_timeouts"], int)
    # The web side's own CPU is reported: the generator's, and the referee's capped child's
    # (a tiny window on a busy machine may see neither run: clock ticks are 10 ms).
    assert 0 <= out["web_generator_cpu_share"] < 2, out
    assert 0 <= out["web_child_cpu_share"] < 1, out
