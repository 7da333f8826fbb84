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
        self.queue_bytes = Gauge(
            "tooltrail_writer_queue_bytes", "decoded bytes waiting for the writer", registry=r
        )
        self.commit_seconds = Histogram(
            "tooltrail_writer_commit_seconds", "time of one group commit", registry=r
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
