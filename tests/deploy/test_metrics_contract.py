"""Every metric the Grafana dashboard and the alert rules query exists in a running referee's
/metrics, after a real match between house bots; labels stay within the bounded set."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator

import grpc
import pytest
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from kozel.v1 import game_pb2 as pb
from kozel.v1 import referee_pb2 as rpb
from kozel.v1 import referee_pb2_grpc
from tests.deploy.deployfiles import base_name, free_port, queried_metrics
from tests.server.conftest import RefereeProcess, start_referee_process, stop_referee_process

# The metrics contract of the referee (docs/operations.md).
CONTRACT = (
    "kozel_matches_started_total",
    "kozel_matches_finished_total",
    "kozel_decisions_total",
    "kozel_decision_think_seconds",
    "kozel_decision_overhead_seconds",
    "kozel_timeouts_total",
    "kozel_strikes_total",
    "kozel_forfeits_total",
    "kozel_rejected_actions_total",
    "kozel_disconnects_total",
    "kozel_resumes_total",
    "kozel_auth_failures_total",
    "kozel_active_streams",
    "kozel_active_matches",
    "kozel_event_loop_lag_seconds",
    "kozel_replay_bytes_written_total",
    "kozel_rating_updates_total",
    "kozel_draining",
    "kozel_event_loop_busy_ratio",
    "kozel_gc_pause_seconds",
    "kozel_store_backlog",
    "kozel_store_errors_total",
    "kozel_store_available",
    "kozel_orphans_settled_total",
    "kozel_admission_match_cap",
    "kozel_admission_paused",
    "kozel_redirects_total",
    "kozel_redirect_seconds",
    "kozel_lease_ok",
    "kozel_ladder_stalled",
    "kozel_assignments_handed_back_total",
    "kozel_luck_corrected_total",
    "kozel_luck_missing_total",
    "kozel_luck_pending",
    "kozel_luck_cpu_seconds_total",
    "kozel_luck_last_pass_timestamp_seconds",
)
# generation: 0-2; kind: transient|refused; outcome: committed|aborted
BOUNDED_LABELS = {"ladder", "reason", "code", "le", "generation", "kind", "outcome"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RefereeProcess, int]]:
    """A referee with /metrics on a free port, after one match between two house bots."""
    tmp = tmp_path_factory.mktemp("metrics")
    port = free_port()
    ref = start_referee_process(
        tmp / "replays", "--data-dir", str(tmp / "data"), "--metrics-listen", f"127.0.0.1:{port}"
    )
    try:
        with grpc.insecure_channel(ref.address) as channel:
            stub = referee_pb2_grpc.RefereeServiceStub(channel)
            table = stub.CreateTable(
                rpb.CreateTableRequest(
                    ruleset=pb.Ruleset(preset="classic"), players=2, house_bots=["greedy", "random"]
                )
            ).table_id
            done = stub.WaitTable(rpb.WaitTableRequest(table_id=table), timeout=120)
        assert done.result.reason != pb.MATCH_END_REASON_ABORTED
        yield ref, port
    finally:
        stop_referee_process(ref)


def _families(port: int) -> dict[str, Metric]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        assert resp.status == 200
        text = resp.read().decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def _exposed_names(families: dict[str, Metric]) -> set[str]:
    """Family names, their sample names, and name_total for counters (a labelled counter
    with no series yet shows only its # TYPE line)."""
    names: set[str] = set()
    for fam in families.values():
        names.add(fam.name)
        names.update(s.name for s in fam.samples)
        if fam.type == "counter":
            names.add(fam.name + "_total")
    return names


def test_every_queried_metric_is_exposed(served: tuple[RefereeProcess, int]) -> None:
    _, port = served
    exposed = _exposed_names(_families(port))
    used = queried_metrics()
    assert len(used) >= 15, "the dashboard and the alerts should read most metrics"
    missing = {
        name: sorted(where)
        for name, where in used.items()
        if name not in exposed and base_name(name) not in exposed
    }
    assert not missing, f"queried but not in /metrics: {missing}"


def test_the_contract_metrics_are_exposed_with_bounded_labels(
    served: tuple[RefereeProcess, int],
) -> None:
    _, port = served
    families = _families(port)
    exposed = _exposed_names(families)
    assert [m for m in CONTRACT if m not in exposed] == []
    for fam in families.values():
        if fam.name.startswith("kozel_"):
            for sample in fam.samples:
                assert set(sample.labels) <= BOUNDED_LABELS, (sample.name, sample.labels)


def test_the_match_was_counted(served: tuple[RefereeProcess, int]) -> None:
    _, port = served
    families = _families(port)

    def total(family: str, suffix: str = "_total") -> float:
        return sum(
            s.value
            for s in families[family].samples
            if s.name == family + suffix and s.labels.get("ladder", "") == ""
        )

    assert total("kozel_matches_started") == 1
    assert total("kozel_matches_finished") == 1
    assert total("kozel_decisions") > 0
    assert total("kozel_decision_overhead_seconds", "_count") > 0
    assert (
        sum(
            s.value
            for s in families["kozel_replay_bytes_written"].samples
            if s.name.endswith("_total")
        )
        > 0
    )
