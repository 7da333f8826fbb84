"""collector.trace_requests: the walk outside extraction, and splitting a request by trace,
which ingest uses to reject only the trace that extraction fails on."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.spans import ToolStep, agent_turn, capture, to_request
from tooltrail.collector import ingest
from tooltrail.collector.extract import ExtractOptions
from tooltrail.collector.trace_requests import split_by_trace, walk


def two_turns() -> ExportTraceServiceRequest:
    tp, memory = capture()
    agent_turn(tp, "split-a", [ToolStep("lookup", {"n": 1}, 1)])
    agent_turn(tp, "split-b", [ToolStep("refund", {}, 1), ToolStep("notify", {}, 2)])
    return to_request(memory.get_finished_spans())


def test_split_keeps_every_span_with_its_resource_and_scope() -> None:
    request = two_turns()
    parts = split_by_trace(request)
    assert len(parts) == 2
    spans = [(rs.resource, ss.scope, span) for rs, ss, span in walk(request)]
    split = [(rs.resource, ss.scope, span) for part in parts for rs, ss, span in walk(part)]
    key = lambda t: t[2].span_id  # noqa: E731
    assert sorted(split, key=key) == sorted(spans, key=key)
    for part in parts:
        assert len({span.trace_id for _, _, span in walk(part)}) == 1


def test_extraction_failing_on_one_trace_rejects_only_its_spans(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    request = two_turns()
    bad = next(span.trace_id for _, _, span in walk(request) if span.name.endswith("refund"))
    real = ingest.extract

    def extract(part: ExportTraceServiceRequest, options: ExtractOptions) -> Any:
        if any(span.trace_id == bad for _, _, span in walk(part)):
            raise RuntimeError("boom")
        return real(part, options)

    monkeypatch.setattr(ingest, "extract", extract)
    batch = ingest.extract_safely(request, ExtractOptions())
    assert [c.name for c in batch.calls] == ["lookup"]
    bad_spans = [s for _, _, s in walk(request) if s.trace_id == bad]
    assert {r.span_id for r in batch.rejected} == {s.span_id.hex() for s in bad_spans}
    assert all("RuntimeError: boom" in r.reason for r in batch.rejected)
    assert batch.span_count == sum(1 for _ in walk(request))
