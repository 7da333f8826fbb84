"""Figures read from the store at scrape time, for Prometheus (the server's and the standalone
worker's /metrics: no web stack here)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from collector.store.scoring import backlog
from collector.store.summary import pass_ratios

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
