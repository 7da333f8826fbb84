"""OTLP receivers, answered case by case as docs/otlp.md says, with real clients and a real
server."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator

import grpc
import httpx
import pytest
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcExporter,
)
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpExporter,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.server import Server, running_server
from tests.spans import ToolStep, agent_turn, capture, to_otlp_json, to_request

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
PB = {"content-type": "application/x-protobuf"}


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url, "--max-request-bytes", "200000") as s:
        yield s


def grpc_export(server: Server, body: bytes) -> ExportTraceServiceResponse:
    with grpc.insecure_channel(server.grpc_endpoint) as channel:
        call = channel.unary_unary(EXPORT, request_serializer=None,
                                   response_deserializer=ExportTraceServiceResponse.FromString)
        response: ExportTraceServiceResponse = call(body, timeout=10)
        return response


def one_turn(conversation: str, tool: str = "search") -> ExportTraceServiceRequest:
    tp, spans = capture()
    agent_turn(tp, conversation, [ToolStep(tool, {"q": conversation}, {"hits": 1})])
    return to_request(spans.get_finished_spans())


def calls_of(server: Server, key: str) -> list[str]:
    body = server.wait_for(f"/api/v1/conversations/{key}", lambda b: True)
    return [c["name"] for t in body["turns"] for c in t["tool_calls"]]


def test_sdk_exporters_grpc_and_http_store_everything(server: Server) -> None:
    tp, spans = capture()
    agent_turn(tp, "rx-sdk", [ToolStep("lookup", {"id": 1}, {"ok": True})])
    agent_turn(tp, "rx-sdk", [ToolStep("refund", {"amount": 5}, {"ok": True})])
    finished = spans.get_finished_spans()
    first_trace = finished[0].context.trace_id
    turn1 = [s for s in finished if s.context.trace_id == first_trace]
    turn2 = [s for s in finished if s.context.trace_id != first_trace]
    grpc_exporter = GrpcExporter(endpoint=server.grpc_endpoint, insecure=True)
    http_exporter = HttpExporter(endpoint=f"{server.base_url}/v1/traces",
                                 compression=Compression.Gzip)
    assert grpc_exporter.export(turn1) == SpanExportResult.SUCCESS
    assert http_exporter.export(turn2) == SpanExportResult.SUCCESS
    # acknowledged means committed: readable at once, no waiting
    with server.client() as client:
        body = client.get("/api/v1/conversations/rx-sdk").json()
    assert [[c["name"] for c in t["tool_calls"]] for t in body["turns"]] == [["lookup"], ["refund"]]
    grpc_exporter.shutdown()
    http_exporter.shutdown()


def test_http_json_gzip_with_hex_ids(server: Server) -> None:
    data = to_otlp_json(one_turn("rx-json"))
    body = gzip.compress(json.dumps(data).encode())
    headers = {"content-type": "application/json; charset=utf-8", "content-encoding": "gzip"}
    response = httpx.post(f"{server.base_url}/v1/traces", content=body, headers=headers)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {}
    assert calls_of(server, "rx-json") == ["search"]


def _with_bad_span(request: ExportTraceServiceRequest) -> ExportTraceServiceRequest:
    bad = request.resource_spans[0].scope_spans[0].spans.add()
    bad.trace_id, bad.span_id, bad.name = b"\x01" * 3, b"\x02" * 8, "execute_tool x"
    return request


def test_partial_success_grpc_and_http(server: Server) -> None:
    answer = grpc_export(server, _with_bad_span(one_turn("rx-partial-g")).SerializeToString())
    assert answer.partial_success.rejected_spans == 1
    assert "trace_id must be 16 bytes" in answer.partial_success.error_message
    response = httpx.post(f"{server.base_url}/v1/traces", headers=PB,
                          content=_with_bad_span(one_turn("rx-partial-h")).SerializeToString())
    assert response.status_code == 200
    http_answer = ExportTraceServiceResponse.FromString(response.content)
    assert http_answer.partial_success.rejected_spans == 1
    assert calls_of(server, "rx-partial-g") == ["search"]
    assert calls_of(server, "rx-partial-h") == ["search"]
    errors = httpx.get(f"{server.base_url}/api/v1/ingest/errors").json()["data"]
    assert any(e["kind"] == "rejected_span" and "16 bytes" in e["message"] for e in errors)


def test_empty_request(server: Server) -> None:
    assert grpc_export(server, b"") == ExportTraceServiceResponse()
    response = httpx.post(f"{server.base_url}/v1/traces", headers=PB, content=b"")
    assert response.status_code == 200 and response.content == b""


def test_undecodable_body_leaves_earlier_data_intact(server: Server) -> None:
    grpc_export(server, one_turn("rx-before-bad").SerializeToString())
    response = httpx.post(f"{server.base_url}/v1/traces", headers=PB, content=b"\xff\xff\xff")
    assert response.status_code == 400
    status = status_pb2.Status.FromString(response.content)
    assert status.code == 3 and "not a valid OTLP protobuf" in status.message
    response = httpx.post(f"{server.base_url}/v1/traces", content=b"{not json",
                          headers={"content-type": "application/json"})
    assert response.status_code == 400 and "not valid JSON" in response.json()["message"]
    with pytest.raises(grpc.RpcError) as err:
        grpc_export(server, b"\xff\xff\xff")
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert calls_of(server, "rx-before-bad") == ["search"]
    metrics = httpx.get(f"{server.base_url}/metrics").text
    assert 'tooltrail_ingest_requests_total{outcome="invalid",transport="http"}' in metrics


def test_wrong_content_type_is_415(server: Server) -> None:
    response = httpx.post(f"{server.base_url}/v1/traces", content=b"x",
                          headers={"content-type": "text/plain"})
    assert response.status_code == 415


def test_oversize_is_413_and_resource_exhausted(server: Server) -> None:
    big = one_turn("rx-big", tool="x" * 300_000).SerializeToString()
    response = httpx.post(f"{server.base_url}/v1/traces", headers=PB, content=big)
    assert response.status_code == 413
    with pytest.raises(grpc.RpcError) as err:
        grpc_export(server, big)
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


def test_gzip_bomb_is_413(server: Server) -> None:
    bomb = gzip.compress(b"\x00" * 5_000_000)
    response = httpx.post(f"{server.base_url}/v1/traces", content=bomb,
                          headers={**PB, "content-encoding": "gzip"})
    assert response.status_code == 413
    assert httpx.get(f"{server.base_url}/healthz").status_code == 200


def test_overload_answer_is_retryable() -> None:
    from tooltrail.collector.errors import Overloaded
    from tooltrail.collector.receivers.grpc import abort_status
    from tooltrail.collector.receivers.http import error_response

    response = error_response(Overloaded("queue full", retry_after=2.5), "application/json")
    assert response.status_code == 503 and response.headers["retry-after"] == "3"
    status = abort_status(Overloaded("queue full", retry_after=2.5))
    assert status.code == grpc.StatusCode.UNAVAILABLE
    detail = dict(status.trailing_metadata)["grpc-status-details-bin"]
    info = error_details_pb2.RetryInfo()
    status_pb2.Status.FromString(detail).details[0].Unpack(info)
    assert info.retry_delay.seconds == 3
