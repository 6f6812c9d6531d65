"""The lock-free per-decision metrics expose exactly what prometheus-client's own would."""

from __future__ import annotations

import threading

from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from kozel.server.loop_metrics import LoopCounters, LoopHistograms

BOUNDS = (25e-6, 1e-3, 0.5, 1.0, 10.0)
values = st.lists(st.sampled_from([0.0, 25e-6, 3e-5, 1e-3, 0.2, 1.0, 7.0, 11.0, 1e9]), max_size=40)


@given(values, values)
def test_a_histogram_scrapes_as_prometheus_clients_own(
    first: list[float], second: list[float]
) -> None:
    theirs, ours = CollectorRegistry(), CollectorRegistry()
    reference = Histogram("t_seconds", "Think", ["ladder"], buckets=BOUNDS, registry=theirs)
    loop = LoopHistograms("t_seconds", "Think", ["ladder"], BOUNDS, registry=ours)
    for ladder, observed in (("a", first), ("b", second)):
        reference.labels(ladder)
        loop.labels(ladder)
        for v in observed:
            reference.labels(ladder).observe(v)
            loop.labels(ladder).observe(v)
    assert _samples(ours) == _samples(theirs)


def test_a_counter_scrapes_as_prometheus_clients_own() -> None:
    theirs, ours = CollectorRegistry(), CollectorRegistry()
    reference = Counter("d", "Decisions", ["ladder"], registry=theirs)
    loop = LoopCounters("d", "Decisions", ["ladder"], registry=ours)
    for ladder, n in (("", 3), ("duel", 0), ("x", 1)):
        reference.labels(ladder).inc(n)
        loop.labels(ladder).inc(n)
    assert _samples(ours) == _samples(theirs)
    assert b'd_total{ladder=""} 3.0' in generate_latest(ours)


def test_wrong_labels_are_refused() -> None:
    family = LoopCounters("d", "Decisions", ["ladder"], registry=None)
    try:
        family.labels("a", "b")
    except ValueError as exc:
        assert "takes labels ['ladder']" in str(exc)
    else:
        raise AssertionError("two label values for one label name were taken")


def test_label_values_are_strings_as_prometheus_client_makes_them() -> None:
    theirs, ours = CollectorRegistry(), CollectorRegistry()
    reference = Counter("d", "Decisions", ["ladder"], registry=theirs)
    loop = LoopCounters("d", "Decisions", ["ladder"], registry=ours)
    for value in (None, 7, "x"):
        reference.labels(value).inc()
        loop.labels(value).inc()
    assert loop.labels("None") is loop.labels(None)
    assert _samples(ours) == _samples(theirs)


def test_a_scrape_during_updates_keeps_count_and_buckets_together() -> None:
    registry = CollectorRegistry()
    loop = LoopHistograms("h", "H", ["ladder"], BOUNDS, registry=registry)
    child = loop.labels("")
    stop = threading.Event()

    def observe() -> None:
        while not stop.is_set():
            for v in (1e-5, 0.3, 20.0):
                child.observe(v)

    worker = threading.Thread(target=observe)
    worker.start()
    try:
        for _ in range(200):
            samples = {s.name + str(s.labels.get("le", "")): s.value for s in _metric(registry)}
            assert samples["h_count"] == samples["h_bucket+Inf"]
            assert samples["h_bucket2.5e-05"] <= samples["h_bucket0.5"] <= samples["h_bucket+Inf"]
    finally:
        stop.set()
        worker.join()
    assert child.counts[0] == child.counts[2] > 0


def _metric(registry: CollectorRegistry) -> list:
    return [s for m in registry.collect() for s in m.samples]


def _samples(registry: CollectorRegistry) -> list[tuple[str, tuple, float]]:
    return sorted(
        (s.name, tuple(sorted(s.labels.items())), s.value)
        for s in _metric(registry)
        if not s.name.endswith("_created")
    )
