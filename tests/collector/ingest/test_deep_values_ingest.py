"""Deeply nested values: a span whose attribute values nest past protobuf's depth limit is
rejected alone (the rest of its request is stored), and JSON text nested past the decoding
limit is kept as text instead of overflowing the stack in extraction."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tests.collector.receivers.test_ingest_limits import (
    deeper_than_protobuf_allows,
    grpc_export,
    post,
    tool_names,
    turn,
)
from tests.server import Server, running_server
from tests.spans import to_otlp_json
from tooltrail.collector.extract import extract
from tooltrail.collector.extract.decoding import MAX_JSON_DEPTH
from tooltrail.collector.receivers.codec import PROTOBUF, decode_body


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    path = tmp_path_factory.mktemp("deep") / "t.db"
    with running_server(f"sqlite:///{path}", "--no-worker") as s:
        yield s


def test_fifty_levels_reject_only_that_span(server: Server) -> None:
    # Serialised requests concatenate into one (protobuf merges repeated fields).
    body = turn("deep-good").SerializeToString() + deeper_than_protobuf_allows(50)
    for answer in (ExportTraceServiceResponse.FromString(post(server, body).content),
                   grpc_export(server, body)):
        assert answer.partial_success.rejected_spans == 1
        assert "nested deeper than the protobuf parser allows" in (
            answer.partial_success.error_message)
    assert tool_names(server, "deep-good") == ["lookup"]


def test_a_span_just_past_the_request_limit_is_kept() -> None:
    """Parsed on its own, a span starts a few levels below the request: 48 levels of arrays
    exceed the request's limit but not the span's, so nothing is lost."""
    body = turn("deep-48").SerializeToString() + deeper_than_protobuf_allows(48)
    request, refused = decode_body(body, PROTOBUF, None, 10**7)
    assert refused == []
    assert sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans) == 4


def deep_json(levels: int) -> str:
    return '{"a": ' * levels + "1" + "}" * levels


def test_deep_json_arguments_are_kept_as_text() -> None:
    request = turn("deep-json")
    deep = deep_json(5000)
    for span in request.resource_spans[0].scope_spans[0].spans:
        for kv in span.attributes:
            if kv.key == "gen_ai.tool.call.arguments":
                kv.value.string_value = deep
    (call,) = extract(request).calls  # no RecursionError: the depth is bounded before json
    assert call.arguments_raw == deep and call.arguments == deep
    shallow = deep_json(MAX_JSON_DEPTH)
    for span in request.resource_spans[0].scope_spans[0].spans:
        for kv in span.attributes:
            if kv.key == "gen_ai.tool.call.arguments":
                kv.value.string_value = shallow
    (call,) = extract(request).calls
    assert call.arguments_raw is None and isinstance(call.arguments, dict)


def test_deep_json_call_is_stored(server: Server) -> None:
    request = turn("deep-json-stored")
    for span in request.resource_spans[0].scope_spans[0].spans:
        for kv in span.attributes:
            if kv.key == "gen_ai.tool.call.arguments":
                kv.value.string_value = deep_json(5000)
    answer = ExportTraceServiceResponse.FromString(post(server, request.SerializeToString())
                                                   .content)
    assert answer.partial_success.rejected_spans == 0
    assert tool_names(server, "deep-json-stored") == ["lookup"]


def nested_json_value(levels: int) -> dict[str, object]:
    value: dict[str, object] = {"stringValue": "leaf"}
    for _ in range(levels):
        value = {"arrayValue": {"values": [value]}}
    return value


def test_otlp_json_span_too_deep_is_rejected_alone(server: Server) -> None:
    data = to_otlp_json(turn("deep-json-body"))
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    deep = {**spans[0], "spanId": "0a" * 8, "name": "deep",
            "attributes": [{"key": "k", "value": nested_json_value(60)}]}
    spans.append(deep)
    response = httpx.post(f"{server.base_url}/v1/traces", json=data, timeout=10)
    assert response.status_code == 200, response.text
    answer = response.json()["partialSuccess"]
    assert answer["rejectedSpans"] == "1"
    assert "nested deeper than the protobuf parser allows" in answer["errorMessage"]
    assert tool_names(server, "deep-json-body") == ["lookup"]
