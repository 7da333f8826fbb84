"""Figures read from the store at scrape time, for Prometheus (the server's and the standalone
worker's /metrics: no web stack here)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from tooltrail.collector.production.counts import Counts
from tooltrail.collector.production.drift import jensen_shannon
from tooltrail.collector.store import production
from tooltrail.collector.store.aggregates import pass_ratios
from tooltrail.collector.store.leases import backlog

log = logging.getLogger(__name__)


class ExpectationGauges(Collector):
    """`tooltrail_expectation_pass_ratio` and `tooltrail_expectation_results` per expectation,
    and `tooltrail_scoring_backlog_conversations`."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def collect(self) -> Iterator[GaugeMetricFamily]:
        ratio = GaugeMetricFamily(
            "tooltrail_expectation_pass_ratio",
            "share of current results that pass",
            labels=["expectation"],
        )
        count = GaugeMetricFamily(
            "tooltrail_expectation_results", "current results", labels=["expectation", "passed"]
        )
        waiting = GaugeMetricFamily(
            "tooltrail_scoring_backlog_conversations",
            "conversations changed since they were last scored (including those not settled)",
        )
        try:
            with self.engine.connect() as conn:
                rows = pass_ratios(conn)
                waiting.add_metric([], backlog(conn))
        except SQLAlchemyError as exc:  # a scrape must not fail because the store is down
            log.warning("expectation gauges unavailable: %s", exc.__class__.__name__)
            rows = []
        for slug, total, passed in rows:
            ratio.add_metric([slug], passed / total if total else 0.0)
            count.add_metric([slug, "true"], passed)
            count.add_metric([slug, "false"], total - passed)
        yield ratio
        yield count
        yield waiting


class SignalGauges(Collector):
    """Production signals per (service, version) over the last `window` seconds, read from
    the hourly signal buckets at scrape time. Label cardinality is bounded: per service only
    the `cap` versions seen most recently are exported (the `signals_gauge_versions`
    setting); agents are summed."""

    def __init__(self, engine: Engine, *, window: float, cap: int) -> None:
        self.engine = engine
        self.window = window
        self.cap = cap

    def collect(self) -> Iterator[GaugeMetricFamily]:
        labels = ["service", "version"]
        turns = GaugeMetricFamily("tooltrail_signal_turns", "turns in the window", labels=labels)
        zero = GaugeMetricFamily("tooltrail_signal_zero_tool_turn_ratio",
                                 "share of turns with no tool call", labels=labels)
        failed = GaugeMetricFamily("tooltrail_signal_failed_call_ratio",
                                   "share of calls that ended in error", labels=labels)
        mix = GaugeMetricFamily(
            "tooltrail_signal_tool_mix_distance",
            "Jensen-Shannon distance of the version's tool mix from the service's previous "
            "version (by recency; 0 for the oldest version kept)", labels=labels)
        try:
            with self.engine.connect() as conn:
                found = production.latest_versions(conn, window=self.window, cap=self.cap)
                recency = production.version_recency(conn, window=self.window)
        except SQLAlchemyError as exc:  # a scrape must not fail because the store is down
            log.warning("signal gauges unavailable: %s", exc.__class__.__name__)
            found, recency = {}, {}
        by_service: dict[str, list[tuple[str, Counts]]] = {}
        for (service, version), counts in found.items():
            by_service.setdefault(service, []).append((version, counts))
        for service, versions in by_service.items():
            versions.sort(key=lambda vc: (recency.get((service, vc[0]), 0), vc[0]))
            previous: Counts | None = None
            for version, counts in versions:
                key = [service, version]
                turns.add_metric(key, counts.turns)
                zero.add_metric(key, counts.zero_tool_rate)
                failed.add_metric(key, counts.failed_rate)
                distance = jensen_shannon(previous.tool_mix, counts.tool_mix) if previous else 0.0
                mix.add_metric(key, distance)
                previous = counts
        yield turns
        yield zero
        yield failed
        yield mix
