"""The ingest path and the OTLP/HTTP receiver in front of collector.memory_sink.MemorySink:
what reaches the sink, what the client is told, and how refusals by the sink (overload, an
unavailable store) are answered and counted — no database, no server process."""

from __future__ import annotations

import asyncio
import json

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from tests.spans import ToolStep, agent_turn, capture, to_otlp_json, to_request
from tooltrail.collector.errors import Overloaded, StoreUnavailable
from tooltrail.collector.extract import ExtractOptions
from tooltrail.collector.ingest import (
    MEMORY_PER_BYTE,
    BatchSink,
    Ingest,
    IngestResult,
    Offload,
    Pipeline,
)
from tooltrail.collector.memory_sink import MemorySink
from tooltrail.collector.metrics import Metrics
from tooltrail.collector.receivers import http as http_receiver
from tooltrail.collector.receivers.codec import JSON, PROTOBUF, decode_body
from tooltrail.collector.store.rows import CALL_FIELDS, prepare

LIMIT = 10**7


def ingest_over(sink: BatchSink) -> Ingest:
    metrics = Metrics()
    pipeline = Pipeline(decode=decode_body, prepare=prepare, options=ExtractOptions(),
                        limit=LIMIT)
    return Ingest(sink, metrics, Offload(pipeline, 0, LIMIT, metrics))


def turn_body(key: str = "sink-1") -> bytes:
    tp, memory = capture()
    agent_turn(tp, key, [ToolStep("lookup_order", {"id": 7}, 1), ToolStep("refund", {}, 2)])
    return to_request(memory.get_finished_spans()).SerializeToString()


def export(ingest: Ingest, body: bytes, media: str = PROTOBUF) -> IngestResult:
    async def run() -> IngestResult:
        ticket = ingest.admit(len(body))
        try:
            return await ingest.export(body, media, None, "grpc", ticket)
        finally:
            ticket.release()

    return asyncio.run(run())


def test_a_request_reaches_the_sink_and_its_bytes_are_given_back() -> None:
    sink = MemorySink()
    result = export(ingest_over(sink), turn_body())
    assert result == IngestResult()
    names = [dict(zip(CALL_FIELDS, row, strict=True))["name"] for row in sink.calls]
    assert names == ["lookup_order", "refund"]
    assert sink.span_count == 4 and sink.errors == []
    assert sink.admitted_bytes == 0


def test_a_span_the_decoder_refuses_is_written_as_an_error_row() -> None:
    tp, memory = capture()
    agent_turn(tp, "sink-2", [ToolStep("lookup_order", {}, 1)])
    data = to_otlp_json(to_request(memory.get_finished_spans()))
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[0]["startTimeUnixNano"] = {"not": "a number"}
    sink = MemorySink()
    result = export(ingest_over(sink), json.dumps(data).encode(), JSON)
    assert result.rejected_spans == 1
    (row,) = sink.errors
    assert row["kind"] == "rejected_span" and row["span_id"] == spans[0]["spanId"]
    assert sink.span_count == 3  # the refused span included, as received


def test_admission_past_the_budget_is_overloaded() -> None:
    body = turn_body()
    sink = MemorySink(max_bytes=len(body) * MEMORY_PER_BYTE)
    ingest = ingest_over(sink)
    first = ingest.admit(len(body))
    with pytest.raises(Overloaded):
        ingest.admit(len(body))
    first.release()
    ingest.admit(len(body)).release()
    assert sink.admitted_bytes == 0


@pytest.mark.parametrize("failure", [
    StoreUnavailable("the database is down", retry_after=4.0),
    Overloaded("queue full", retry_after=2.0),
])
def test_a_refused_write_is_a_retryable_503_with_its_spans_counted(
    failure: Overloaded,
) -> None:
    sink = MemorySink(fail_write=failure)
    ingest = ingest_over(sink)
    app = FastAPI()
    app.include_router(http_receiver.router(ingest, LIMIT))
    with TestClient(app) as client:
        answer = client.post("/v1/traces", content=turn_body(),
                             headers={"content-type": PROTOBUF})
        assert answer.status_code == 503
        assert answer.headers["retry-after"] == str(int(failure.retry_after))
        sink.fail_write = None  # the store is back: the retry is stored
        again = client.post("/v1/traces", content=turn_body(),
                            headers={"content-type": PROTOBUF})
    assert again.status_code == 200, again.text
    assert len(sink.batches) == 1 and sink.admitted_bytes == 0
    reason = "unavailable" if isinstance(failure, StoreUnavailable) else "overloaded"
    get = ingest.metrics.registry.get_sample_value
    assert get("tooltrail_receiver_refused_spans_total",
               {"transport": "http", "reason": reason}) == 4
    assert get("tooltrail_receiver_accepted_spans_total", {"transport": "http"}) == 4


def test_refused_admission_is_answered_and_recorded() -> None:
    sink = MemorySink(fail_admit=StoreUnavailable("the database is down", retry_after=1.0))
    ingest = ingest_over(sink)
    app = FastAPI()
    app.include_router(http_receiver.router(ingest, LIMIT))
    with TestClient(app) as client:
        answer = client.post("/v1/traces", content=turn_body(),
                             headers={"content-type": PROTOBUF})
    assert answer.status_code == 503
    (row,) = sink.errors
    assert row["kind"] == "unavailable" and "database is down" in row["message"]
    assert sink.batches == []
