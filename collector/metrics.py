"""Prometheus metrics, one registry per service instance (so tests can run many in one process)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class Metrics:
    """Every counter the service exports on /metrics."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "tooltrail_ingest_requests",
            "OTLP export requests by transport and outcome",
            ["transport", "outcome"],
            registry=r,
        )
        self.spans = Counter("tooltrail_ingest_spans", "spans received", registry=r)
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
        self.rejected_spans = Counter(
            "tooltrail_ingest_rejected_spans", "spans rejected as invalid", registry=r
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
        self.deleted_conversations = Counter(
            "tooltrail_conversations_deleted",
            "conversations deleted with everything derived from them",
            ["reason"],  # retention | request
            registry=r,
        )
