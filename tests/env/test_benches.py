"""``kozel bench harness``, ``env`` and ``ismcts-openspiel`` print their figures as JSON (small
runs: the figures themselves are for people, never asserted as times)."""

from __future__ import annotations

import json
import subprocess
import sys


def _bench(*args: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", "bench", *args, "--json"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_harness_bench_compares_with_the_engine() -> None:
    figures = _bench("harness", "--matches", "1")
    assert set(figures) == {"classic-2p", "classic-3p", "classic-4p"}
    for row in figures.values():
        assert row["harness_matches_per_s"] > 0 and row["engine_cpu_us_per_decision"] > 0
        want = row["harness_cpu_us_per_decision"] / row["engine_cpu_us_per_decision"]
        assert abs(row["overhead"] - want) < 0.1
        assert row["decisions_per_match"] > 10


def test_env_bench_counts_steps_and_the_encoding() -> None:
    figures = _bench("env", "--steps", "50")
    for row in figures.values():
        assert row["steps"] == 250 and row["steps_per_s"] > 0
        assert row["encode_us_per_observation"] > 0


def test_openspiel_duel_reports_intervals() -> None:
    figures = _bench("ismcts-openspiel", "--pairs", "1", "--budget", "0.005", "--max-deals", "1")
    assert figures["matches"] == 2 and figures["deals"] == 2
    low_mean_high = figures["arena_score"]
    assert low_mean_high[1] <= low_mean_high[0] <= low_mean_high[2]


def test_bad_bench_arguments_are_named() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "kozel.cli.main", "bench", "env", "--steps", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and "--steps must be positive" in out.stderr
