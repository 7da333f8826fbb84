"""Per-expectation figures read from the store at scrape time, for Prometheus."""

from __future__ import annotations

import logging
from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from collector.store.summary import pass_ratios

log = logging.getLogger(__name__)


class ExpectationGauges(Collector):
    """`tooltrail_expectation_pass_ratio` and `tooltrail_expectation_results` per expectation."""

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
        try:
            with self.engine.connect() as conn:
                rows = pass_ratios(conn)
        except SQLAlchemyError as exc:  # a scrape must not fail because the store is down
            log.warning("expectation gauges unavailable: %s", exc.__class__.__name__)
            rows = []
        for slug, total, passed in rows:
            ratio.add_metric([slug], passed / total if total else 0.0)
            count.add_metric([slug, "true"], passed)
            count.add_metric([slug, "false"], total - passed)
        yield ratio
        yield count
