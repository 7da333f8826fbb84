"""Hostile input and limits: each bad thing gets a clear answer, the good spans of the same
request are stored, the process is unharmed; admission is bounded by bytes; the store's
failures are classified by whether a retry can help."""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Iterator

import grpc
import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from sqlalchemy import func, select
from sqlalchemy.exc import OperationalError

from tests.server import Server, running_server
from tests.spans import ToolStep, agent_turn, capture, to_request
from tooltrail.collector.errors import InvalidPayload, Overloaded, StoreUnavailable
from tooltrail.collector.extract import extract
from tooltrail.collector.metrics import Metrics
from tooltrail.collector.receivers.codec import decode_body
from tooltrail.collector.store.db import make_engine, migrate
from tooltrail.collector.store.persist import MAX_ARGUMENTS, prepare, prune_ingest_errors
from tooltrail.collector.store.tables import ingest_errors
from tooltrail.collector.store.writer import Writer, classify

PB = {"content-type": "application/x-protobuf"}
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url, "--max-request-bytes", "8000000") as s:
        yield s


def turn(
    conversation: str, tool: str = "lookup", arguments: dict[str, object] | None = None
) -> ExportTraceServiceRequest:
    tp, spans = capture()
    args = {"q": conversation} if arguments is None else arguments
    agent_turn(tp, conversation, [ToolStep(tool, args, {"ok": True})])
    return to_request(spans.get_finished_spans())


def post(server: Server, body: bytes) -> httpx.Response:
    return httpx.post(f"{server.base_url}/v1/traces", content=body, headers=PB, timeout=30)


def grpc_export(server: Server, body: bytes) -> ExportTraceServiceResponse:
    with grpc.insecure_channel(server.grpc_endpoint) as channel:
        call = channel.unary_unary(EXPORT, request_serializer=None,
                                   response_deserializer=ExportTraceServiceResponse.FromString)
        answer: ExportTraceServiceResponse = call(body, timeout=30)
        return answer


def tool_names(server: Server, key: str) -> list[str]:
    body = server.wait_for(f"/api/v1/conversations/{key}", lambda b: True)
    return [c["name"] for t in body["turns"] for c in t["tool_calls"]]


def merged(*requests: ExportTraceServiceRequest) -> ExportTraceServiceRequest:
    out = ExportTraceServiceRequest()
    for r in requests:
        out.resource_spans.extend(r.resource_spans)
    return out


def test_invalid_utf8_rejects_only_that_span(server: Server) -> None:
    good = turn("lim-utf8-good")
    bad = turn("lim-utf8-bad", tool="BADNAME")
    body = merged(good, bad).SerializeToString().replace(b"BADNAME", b"BAD\xff\xfeME")
    for send in (lambda b: ExportTraceServiceResponse.FromString(post(server, b).content),
                 lambda b: grpc_export(server, b)):
        answer = send(body)
        assert answer.partial_success.rejected_spans == 1
        assert "invalid UTF-8" in answer.partial_success.error_message
    assert tool_names(server, "lim-utf8-good") == ["lookup"]
    errors = httpx.get(f"{server.base_url}/api/v1/ingest/errors").json()["data"]
    assert any("invalid UTF-8" in e["message"] for e in errors)


def test_huge_values_are_capped_and_stored(server: Server) -> None:
    big = {"blob": "x" * 3_000_000}
    request = turn("lim-huge", arguments=big)
    span = request.resource_spans[0].scope_spans[0].spans[0]
    span.attributes.append(KeyValue(key="nan", value=AnyValue(double_value=math.nan)))
    response = post(server, request.SerializeToString())
    assert response.status_code == 200, response.text
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert answer.partial_success.rejected_spans == 0
    assert "truncated" in answer.partial_success.error_message
    body = server.wait_for("/api/v1/conversations/lim-huge", lambda b: True)
    (call,) = [c for t in body["turns"] for c in t["tool_calls"]]
    assert len(json.dumps(call["arguments"])) <= MAX_ARGUMENTS + 100


def test_deep_nesting_rejects_only_its_trace(server: Server) -> None:
    deep = "[" * 200_000 + "]" * 200_000  # json.loads of this overflows the stack
    good = turn("lim-deep-good")
    bad = turn("lim-deep-bad")
    for span in bad.resource_spans[0].scope_spans[0].spans:
        for kv in span.attributes:
            if kv.key == "gen_ai.tool.call.arguments":
                kv.value.string_value = deep
    response = post(server, merged(good, bad).SerializeToString())
    assert response.status_code == 200, response.text
    assert tool_names(server, "lim-deep-good") == ["lookup"]
    nested = AnyValue(string_value="leaf")
    for _ in range(40):  # deep, but within protobuf's limit: stored with the nesting cut
        outer = AnyValue()
        outer.array_value.values.append(nested)
        nested = outer
    kept = turn("lim-nest")
    kept.resource_spans[0].scope_spans[0].spans[-1].attributes.append(
        KeyValue(key="deep", value=nested))
    assert post(server, kept.SerializeToString()).status_code == 200
    assert tool_names(server, "lim-nest") == ["lookup"]
    response = post(server, deeper_than_protobuf_allows())  # only its one span is refused
    assert response.status_code == 200
    answer = ExportTraceServiceResponse.FromString(response.content).partial_success
    assert answer.rejected_spans == 1 and "nested deeper" in answer.error_message
    assert httpx.get(f"{server.base_url}/healthz").status_code == 200


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def deeper_than_protobuf_allows(depth: int = 400) -> bytes:
    """A request whose one attribute nests arrays `depth` deep (built as raw bytes: the
    protobuf library itself refuses to build it)."""
    value = _field(1, b"leaf")  # AnyValue.string_value
    for _ in range(depth):
        value = _field(5, _field(1, value))  # AnyValue.array_value → ArrayValue.values
    span = _field(1, b"\x01" * 16) + _field(2, b"\x02" * 8) + _field(5, b"deep")
    span += _field(9, _field(1, b"k") + _field(2, value))  # Span.attributes → KeyValue
    return _field(1, _field(2, _field(2, span)))  # resource_spans.scope_spans.spans


def test_huge_conversation_key_is_refused_in_partial_success(server: Server) -> None:
    key = "k" * 20_000  # stored as sent or not at all: never cut (test_keys_ingest.py)
    response = post(server, turn(key).SerializeToString())
    assert response.status_code == 200, response.text
    answer = ExportTraceServiceResponse.FromString(response.content).partial_success
    assert answer.rejected_spans == 1 and "20000 bytes" in answer.error_message


def test_bad_ids_in_json_reject_the_span_alone(server: Server) -> None:
    request = merged(turn("lim-json-ids"))
    from google.protobuf import json_format

    data = json_format.MessageToDict(request)
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    import base64

    for span in spans:
        for key in ("traceId", "spanId", "parentSpanId"):
            if key in span:
                span[key] = base64.b64decode(span[key]).hex()
    spans.append({**spans[-1], "spanId": "zz-not-hex", "name": "execute_tool other"})
    response = httpx.post(f"{server.base_url}/v1/traces", json=data, timeout=10)
    assert response.status_code == 200
    assert response.json()["partialSuccess"]["rejectedSpans"] == "1"
    assert tool_names(server, "lim-json-ids") == ["lookup"]


def test_failures_are_counted_on_metrics(server: Server) -> None:
    post(server, b"\xff\x00garbage")
    text = httpx.get(f"{server.base_url}/metrics").text
    for name in ("tooltrail_ingest_requests_total", "tooltrail_ingest_truncated_values_total",
                 "tooltrail_writer_queue_bytes", "tooltrail_writer_queue_capacity_bytes",
                 "tooltrail_writer_group_requests_bucket", "tooltrail_writer_failures_total"):
        assert name in text


def test_decode_keeps_good_spans_of_a_request_with_bad_utf8() -> None:
    body = merged(turn("u-good"), turn("u-bad", tool="BADNAME")).SerializeToString()
    request, refused = decode_body(body.replace(b"BADNAME", b"BAD\xc3\x28ME"),
                                   "application/x-protobuf", None, 10**7)
    assert len(refused) == 1 and "UTF-8" in refused[0].reason
    batch = prepare(extract(request))
    assert [row[4] for row in batch.calls] == ["lookup"]


def test_admission_is_bounded_by_bytes(tmp_path: object) -> None:
    async def scenario() -> None:
        url = f"sqlite:///{tmp_path}/w.db"
        migrate(url)
        engine = make_engine(url)
        async with Writer(engine, Metrics(), max_queue_bytes=1000) as writer:
            first = writer.admit(600)
            second = writer.admit(300)
            with pytest.raises(Overloaded):
                writer.admit(200)
            first.release()
            first.release()  # idempotent
            writer.admit(200).release()
            second.release()
            assert writer.admitted_bytes == 0
            big = writer.admit(5000)  # alone, an oversized request is still admitted
            big.release()
        engine.dispose()

    asyncio.run(scenario())


def test_store_errors_are_classified() -> None:
    class Orig(Exception):
        def __init__(self, sqlstate: str | None, text: str = "x") -> None:
            super().__init__(text)
            self.sqlstate = sqlstate

    def op(orig: Exception) -> OperationalError:
        return OperationalError("stmt", {}, orig)

    assert isinstance(classify(op(Orig("08006"))), StoreUnavailable)
    assert isinstance(classify(op(Orig("57P01"))), StoreUnavailable)
    assert isinstance(classify(op(Orig("40001"))), StoreUnavailable)
    assert not isinstance(classify(op(Orig("54000"))), Overloaded)  # index row too large
    assert isinstance(classify(op(Orig("54000"))), InvalidPayload)
    import sqlite3

    locked = sqlite3.OperationalError("database is locked")
    locked.sqlite_errorcode = 5  # type: ignore[attr-defined]
    assert isinstance(classify(op(locked)), StoreUnavailable)


def test_ingest_errors_are_pruned(tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/e.db"
    migrate(url)
    engine = make_engine(url)
    rows = [{"at": time.time(), "kind": "invalid", "transport": "http", "message": str(i)}
            for i in range(300)]
    with engine.begin() as conn:
        conn.execute(ingest_errors.insert(), rows)
        prune_ingest_errors(conn, 100)
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(ingest_errors)).scalar() == 100
        newest = conn.execute(select(ingest_errors.c.message).order_by(ingest_errors.c.id.desc())
                              ).scalars().first()
    assert newest == "299"
    engine.dispose()
