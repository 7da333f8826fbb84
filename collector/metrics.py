"""Prometheus metrics, one registry per service instance (so tests can run many in one process).

Receiver names follow the OpenTelemetry Collector's own (`otelcol_receiver_accepted_spans`,
`otelcol_receiver_refused_spans`, by `transport`), so one dashboard reads both; the queue has a
capacity gauge beside its size, as the Collector's exporter queue does. Renames are listed in
the README ("Metrics").
"""

from __future__ import annotations

import platform
from collections.abc import Iterable

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
)
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from tooltrail.collector import __version__

# `_created` series double every counter and histogram and no dashboard reads them
disable_created_metrics()  # type: ignore[no-untyped-call]

SCORE_DELAY_BUCKETS = (0.5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600)


class Metrics:
    """Every metric a tooltrail process (server or worker) exports on /metrics."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
            r.register(_Shared(collector))
        self.build_info = Gauge(
            "tooltrail_build_info", "always 1; the running version", ["version", "python"],
            registry=r,
        )
        self.build_info.labels(__version__, platform.python_version()).set(1)
        self.requests = Counter(
            "tooltrail_ingest_requests",
            "OTLP export requests by transport and outcome",
            ["transport", "outcome"],
            registry=r,
        )
        self.accepted_spans = Counter(
            "tooltrail_receiver_accepted_spans",
            "spans committed to the store (acknowledged), by transport",
            ["transport"],
            registry=r,
        )
        self.refused_spans = Counter(
            "tooltrail_receiver_refused_spans",
            "spans of decoded requests that were not stored, by transport and reason "
            "(invalid: rejected in a partial success; unavailable, overloaded, error: the "
            "request was refused after decoding)",
            ["transport", "reason"],
            registry=r,
        )
        self.records = Counter(
            "tooltrail_ingest_records",
            "OTLP records received by signal (spans, log records, metric data points) and "
            "transport; log records and metrics are validated and counted, not stored",
            ["signal", "transport"],
            registry=r,
        )
        self.tool_calls = Counter(
            "tooltrail_ingest_tool_calls", "tool calls extracted and committed", registry=r
        )
        self.unextracted_spans = Counter(
            "tooltrail_ingest_unextracted_spans",
            "spans that look like tool calls but could not be extracted",
            registry=r,
        )
        self.truncated_values = Counter(
            "tooltrail_ingest_truncated_values",
            "oversized argument, result, attribute or text values cut before storing",
            registry=r,
        )
        self.lossy_values = Counter(
            "tooltrail_ingest_lossy_values",
            "values converted because JSON or the store cannot hold them as sent "
            "(docs/values.md), by kind",
            ["kind"],
            registry=r,
        )
        self.ingest_seconds = Histogram(
            "tooltrail_ingest_seconds",
            "from body read to acknowledgement (decode, extract, commit)",
            ["transport"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=r,
        )
        self.queue_bytes = Gauge(
            "tooltrail_writer_queue_bytes",
            "bytes of requests admitted and not yet answered (bounded by max_queue_bytes)",
            registry=r,
        )
        self.queue_capacity_bytes = Gauge(
            "tooltrail_writer_queue_capacity_bytes",
            "max_queue_bytes: above it, ingest answers a retryable overload",
            registry=r,
        )
        self.commit_seconds = Histogram(
            "tooltrail_writer_commit_seconds", "time of one group commit", registry=r
        )
        self.ack_seconds = Histogram(
            "tooltrail_writer_wait_seconds",
            "from a batch queued for the writer to its commit",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=r,
        )
        self.group_requests = Histogram(
            "tooltrail_writer_group_requests",
            "requests committed together in one transaction",
            buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
            registry=r,
        )
        self.committed_spans = Counter(
            "tooltrail_writer_committed_spans", "spans of committed requests", registry=r
        )
        self.wal_bytes = Gauge(
            "tooltrail_sqlite_wal_bytes",
            "size of the SQLite write-ahead log file (SQLite only; read by the checkpointer)",
            registry=r,
        )
        self.wal_restarts = Counter(
            "tooltrail_sqlite_wal_restarts",
            "RESTART checkpoints that reset the SQLite WAL after it outgrew "
            "sqlite_wal_restart_bytes",
            registry=r,
        )
        self.writer_failures = Counter(
            "tooltrail_writer_failures",
            "group commits that failed, by whether a retry can help",
            ["kind"],
            registry=r,
        )
        self.loop_errors = Counter(
            "tooltrail_loop_errors",
            "unexpected errors caught at loop boundaries",
            ["loop"],
            registry=r,
        )
        self.scored = Counter(
            "tooltrail_results", "results written by the worker", ["passed"], registry=r
        )
        self.score_delay = Histogram(
            "tooltrail_scoring_delay_seconds",
            "from a conversation's last span to its results being stored",
            buckets=SCORE_DELAY_BUCKETS,
            registry=r,
        )
        self.deleted_conversations = Counter(
            "tooltrail_conversations_deleted",
            "conversations deleted with everything derived from them",
            ["reason"],  # retention | request
            registry=r,
        )


class _Shared(Collector):
    """A process-wide collector (process, platform, GC) in one more registry: prometheus_client
    registers them with its default registry, and each Metrics has its own."""

    def __init__(self, collector: Collector) -> None:
        self.collector = collector

    def collect(self) -> Iterable[Metric]:
        return self.collector.collect()
