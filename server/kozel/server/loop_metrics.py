"""Metrics updated at every decision, kept without a lock.

prometheus-client's ``Counter`` and ``Histogram`` take a lock at every ``inc`` and
``observe`` (they may be updated from any thread); the referee updates three of them at every
decision, always from the event loop's thread. These keep plain numbers that only that thread
changes, and a collector hands them to the default registry at each scrape, in the same
exposition format (``_total``, ``_bucket`` with ``le``, ``_count``, ``_sum``).

A scrape runs in the metrics server's thread while the loop may be adding: each child's
buckets are copied at once (a list copy holds the GIL), so ``_count`` always equals the
``+Inf`` bucket; ``_sum`` may be one observation ahead or behind its buckets.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Sequence
from typing import Generic, TypeVar

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString


class LoopCounter:
    """A counter that only the event loop's thread adds to."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        self.value += amount


class LoopHistogram:
    """A histogram that only the event loop's thread observes into."""

    __slots__ = ("_bounds", "counts", "sum")

    def __init__(self, bounds: Sequence[float]) -> None:
        self._bounds = tuple(bounds)
        self.counts = [0] * (len(self._bounds) + 1)  # per bucket, not cumulative; last: +Inf
        self.sum = 0.0

    def observe(self, value: float) -> None:
        # The first bound >= value: Prometheus buckets are "less than or equal".
        self.counts[bisect_left(self._bounds, value)] += 1
        self.sum += value


Child = TypeVar("Child", LoopCounter, LoopHistogram)


class LoopFamily(Collector, Generic[Child]):
    """Labelled children of one metric, registered with a registry (the default one) when
    made; a subclass makes the children and their samples."""

    _type: str  # "counter" or "histogram", as prometheus-client names it

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        registry: CollectorRegistry | None = REGISTRY,
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = list(labelnames)
        # prometheus-client's own attribute names, read by tools that list a module's metrics
        self._name, self._labelnames = name, tuple(labelnames)
        self._children: dict[tuple[str, ...], Child] = {}
        if registry is not None:
            registry.register(self)

    def labels(self, *values: object) -> Child:
        """The child for these label values, as strings (made at zero on first use)."""
        if len(values) != len(self.labelnames):
            raise ValueError(f"{self.name} takes labels {self.labelnames}, got {values!r}")
        key = tuple(str(v) for v in values)
        child = self._children.get(key)
        if child is None:
            child = self._children.setdefault(key, self._child())
        return child

    def describe(self) -> list[Metric]:
        return [self._family()]

    def collect(self) -> Iterator[Metric]:
        family = self._family()
        for values, child in list(self._children.items()):
            self._add(family, list(values), child)
        yield family

    def _child(self) -> Child:
        raise NotImplementedError

    def _family(self) -> Metric:
        raise NotImplementedError

    def _add(self, family: Metric, values: list[str], child: Child) -> None:
        raise NotImplementedError


class LoopCounters(LoopFamily[LoopCounter]):
    """A labelled counter of :class:`LoopCounter` children (exposed as ``<name>_total``)."""

    _type = "counter"

    def _child(self) -> LoopCounter:
        return LoopCounter()

    def _family(self) -> CounterMetricFamily:
        return CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def _add(self, family: Metric, values: list[str], child: LoopCounter) -> None:
        assert isinstance(family, CounterMetricFamily)
        family.add_metric(values, child.value)


class LoopHistograms(LoopFamily[LoopHistogram]):
    """A labelled histogram of :class:`LoopHistogram` children with these ``buckets``."""

    _type = "histogram"

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        buckets: Sequence[float],
        registry: CollectorRegistry | None = REGISTRY,
    ) -> None:
        self.buckets = tuple(buckets)
        super().__init__(name, documentation, labelnames, registry)

    def _child(self) -> LoopHistogram:
        return LoopHistogram(self.buckets)

    def _family(self) -> HistogramMetricFamily:
        return HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def _add(self, family: Metric, values: list[str], child: LoopHistogram) -> None:
        assert isinstance(family, HistogramMetricFamily)
        counts, total = list(child.counts), child.sum  # copied at once: see the module doc
        cumulative, buckets = 0, []
        for bound, count in zip((*self.buckets, float("inf")), counts):
            cumulative += count
            buckets.append((floatToGoString(bound), cumulative))
        family.add_metric(values, buckets, total)
