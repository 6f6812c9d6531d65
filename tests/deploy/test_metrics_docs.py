"""Every metric kozel.server.metrics defines is in docs/operations.md's metric table (with its
type and labels), on the Grafana dashboard, and in the metrics contract the running-referee
test checks; and the table names no metric the referee does not define."""

from __future__ import annotations

import re

import pytest
from prometheus_client.metrics import MetricWrapperBase

from kozel.server import metrics
from kozel.server.loop_metrics import LoopFamily
from tests.deploy.deployfiles import ROOT, base_name, dashboard_queries, metric_names
from tests.deploy.test_metrics_contract import CONTRACT

OPERATIONS = ROOT / "docs" / "operations.md"
_ROW = re.compile(r"^\| (`kozel_.+?) \| (counter|gauge|histogram) \| .+ \|$")
_CELL = re.compile(r"`(kozel_[a-z0-9_]+)(?:\{([a-z_,]+)\})?`")


def _defined() -> dict[str, MetricWrapperBase | LoopFamily]:
    """The module's metrics by exposed family name (counters with their _total): those of
    prometheus-client and the loop's own (kozel.server.loop_metrics)."""
    found: dict[str, MetricWrapperBase | LoopFamily] = {}
    for value in vars(metrics).values():
        if isinstance(value, MetricWrapperBase | LoopFamily):
            suffix = "_total" if value._type == "counter" else ""
            found[value._name + suffix] = value
    return found


def _documented() -> dict[str, tuple[str, tuple[str, ...]]]:
    """The metric table of docs/operations.md: name -> (type, labels)."""
    rows: dict[str, tuple[str, tuple[str, ...]]] = {}
    for line in OPERATIONS.read_text(encoding="utf-8").splitlines():
        row = _ROW.match(line)
        if row:
            for name, labels in _CELL.findall(row.group(1)):
                assert name not in rows, f"{name} documented twice"
                rows[name] = (row.group(2), tuple(labels.split(",")) if labels else ())
    return rows


def test_the_module_defines_the_metrics_it_is_known_for() -> None:
    defined = _defined()
    assert len(defined) >= 20
    for name in ("kozel_admission_match_cap", "kozel_admission_paused", "kozel_draining"):
        assert name in defined


@pytest.mark.parametrize("name", sorted(_defined()))
def test_every_metric_is_documented_with_its_type_and_labels(name: str) -> None:
    metric = _defined()[name]
    documented = _documented()
    assert name in documented, f"{name} is missing from the table in docs/operations.md"
    assert documented[name] == (metric._type, tuple(metric._labelnames))


def test_the_table_names_only_defined_metrics() -> None:
    assert sorted(set(_documented()) - set(_defined())) == []


def test_every_metric_is_on_the_dashboard_and_in_the_contract() -> None:
    shown = {
        base_name(name).removesuffix("_total")
        for query in dashboard_queries()
        for name in metric_names(query)
    }
    missing = sorted(n for n, m in _defined().items() if m._name not in shown)
    assert missing == [], f"not on the Grafana dashboard: {missing}"
    assert sorted(set(_defined()) - set(CONTRACT)) == []
