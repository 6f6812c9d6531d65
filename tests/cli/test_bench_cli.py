"""``kozel bench referee|load|soak`` at tiny sizes, as real processes: each runs a real referee
and real bot processes over loopback and prints its JSON. Nothing here asserts speed."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

from kozel.core import native as core_native
from kozel.engine import native as engine_native

ROOT = Path(__file__).resolve().parents[2]


def bench(*args: str) -> dict[str, Any]:
    res = subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", "bench", *args, "--json"],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout)


def finite(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def test_referee_bench_reports_rates_ratio_and_overhead() -> None:
    out = bench(
        "referee", "--matches", "4", "--duration", "2", "--warmup", "1", "--echo-duration", "1"
    )
    for key in (
        "decisions_per_s",
        "echo_round_trips_per_s",
        "ratio",
        "overhead_p50_us",
        "overhead_p99_us",
        "cpu_us_per_decision",
    ):
        assert finite(out[key]) and out[key] > 0, (key, out)
    assert out["errors"] == 0, out["error_details"]
    assert out["streams"] == 8
    assert out["overhead_p50_us"] <= out["overhead_p99_us"]
    assert abs(out["ratio"] - out["decisions_per_s"] / out["echo_round_trips_per_s"]) < 0.01
    assert out["overhead_source"]
    assert (out["native"], out["core_native"]) == (engine_native.wanted(), core_native.wanted())
    runs = out["echo_runs_round_trips_per_s"]  # before and after the referee: their mean counts
    assert len(runs) == 2 and all(finite(r) and r > 0 for r in runs), runs
    assert abs(out["echo_round_trips_per_s"] - sum(runs) / 2) < 0.1  # printed to 0.1


def test_referee_bench_measures_a_baseline_checkout_back_to_back() -> None:
    out = bench(
        "referee",
        "--matches",
        "2",
        "--duration",
        "1",
        "--warmup",
        "0.5",
        "--echo-duration",
        "0.5",
        "--baseline",
        str(ROOT),
    )  # stands in for an old one
    assert len(out["baseline_decisions_per_s"]) == 2
    assert all(finite(v) and v > 0 for v in out["baseline_decisions_per_s"])
    assert all(finite(v) and v > 0 for v in out["baseline_cpu_us_per_decision"])
    rate = sum(out["baseline_decisions_per_s"]) / 2
    assert abs(out["speedup_vs_baseline"] - out["decisions_per_s"] / rate) < 0.01
    assert abs(out["baseline_ratio"] - rate / out["echo_round_trips_per_s"]) < 0.01


def test_a_baseline_that_is_not_a_checkout_is_one_clear_line(tmp_path: Path) -> None:
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "kozel.cli.main",
            "bench",
            "referee",
            "--json",
            "--baseline",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode != 0
    assert f"{tmp_path} is not a checkout of this repository" in res.stderr
    assert "Traceback" not in res.stderr


def test_load_bench_counts_timeouts_errors_and_memory() -> None:
    out = bench(
        "load", "--streams", "20", "--duration", "2", "--warmup", "1", "--bot-processes", "1"
    )
    assert out["decisions_per_s"] > 0
    assert out["errors"] == 0, out["error_details"]
    assert isinstance(out["spurious_timeouts"], int) and out["spurious_timeouts"] >= 0
    assert finite(out["memory_per_bot_kb"])
    assert finite(out["overhead_p99_us"]) and out["overhead_p99_us"] > 0
    assert out["streams"] == 20 and sum(out["mix"].values()) == 20
    assert out["move_ms"] == 200


def test_soak_bench_samples_memory() -> None:
    out = bench("soak", "--matches", "20", "--first-sample", "10", "--tables", "2")
    assert out["matches"] >= 20
    assert out["matches_per_s"] > 0
    assert finite(out["memory_growth_pct"])
    assert [m for m, _ in out["rss_kb_samples"]] == [10, 20]
    assert out["rss_kb_at_10"] > 0 and out["rss_kb_at_20"] > 0
    assert out["errors"] == 0, out["error_details"]


def test_analysis_bench_reports_ms_per_decision_and_memory() -> None:
    out = bench(
        "analysis", "--players", "2,3", "--deals", "1", "--max-nodes", "3000", "--eval-deals", "1"
    )
    assert set(out) == {"classic-2p", "classic-3p"}
    for key, r in out.items():
        assert r["evaluator_decisions"] > 10 and r["evaluator_budget_ms"] == 200
        assert 0 < r["evaluator_ms_median"] <= r["evaluator_ms_p99"] <= r["evaluator_ms_max"]
        assert r["evaluator_deals_averaged_mean"] >= 1
        assert 0 <= r["evaluator_exact_deal_share"] <= 1, key
        assert r["decisions"] > 10 and r["deals"] == 1 and r["max_nodes"] == 3000
        assert 0 < r["ms_per_decision_median"] <= r["ms_per_decision_p99"]
        assert r["ms_per_decision_p99"] <= r["ms_per_decision_max"]
        assert 0 <= r["exact_share"] <= 1 and r["memory_mb_per_deal_max"] > 0, key
    bad = subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", "bench", "analysis", "--players", "5"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert bad.returncode == 2 and "--players takes 2, 3 or 4" in bad.stderr


def test_a_baseline_is_given_only_the_raised_limits_its_settings_know() -> None:
    from kozel.tools.bench_common import BENCH_LIMITS
    from kozel.tools.bench_referee import known_limits

    assert BENCH_LIMITS and known_limits(Path(__file__).parents[2]) == BENCH_LIMITS
