"""Values JSON or the store cannot hold as sent are converted the one way docs/values.md
states, the client is told in partial_success, and each conversion is counted on /metrics
(`tooltrail_ingest_lossy_values_total{kind}`); JSON null arguments stay null, apart from `{}`."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from tests.collector.receivers.test_ingest_limits import post, turn
from tests.server import Server, running_server


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url, "--no-worker") as s:
        yield s


def tool_span_of(request: ExportTraceServiceRequest) -> Any:
    spans = request.resource_spans[0].scope_spans[0].spans
    (tool,) = [s for s in spans if s.name.startswith("execute_tool")]
    return tool


def with_arguments(key: str, text: str | None) -> ExportTraceServiceRequest:
    """A turn whose tool span carries `text` as its arguments (None: no arguments at all)."""
    request = turn(key)
    tool = tool_span_of(request)
    kept = [kv for kv in tool.attributes if kv.key != "gen_ai.tool.call.arguments"]
    del tool.attributes[:]
    tool.attributes.extend(kept)
    if text is not None:
        tool.attributes.append(KeyValue(key="gen_ai.tool.call.arguments",
                                        value=AnyValue(string_value=text)))
    return request


def send(server: Server, request: ExportTraceServiceRequest) -> str:
    response = post(server, request.SerializeToString())
    assert response.status_code == 200, response.content
    answer = ExportTraceServiceResponse.FromString(response.content).partial_success
    assert answer.rejected_spans == 0
    return answer.error_message


def stored_call(server: Server, key: str) -> dict[str, Any]:
    body = server.wait_for(f"/api/v1/conversations/{key}", lambda b: True)
    (call,) = [c for t in body["turns"] for c in t["tool_calls"]]
    return dict(call)


def lossy(server: Server, kind: str) -> float:
    text = httpx.get(f"{server.base_url}/metrics").text
    for line in text.splitlines():
        if line.startswith(f'tooltrail_ingest_lossy_values_total{{kind="{kind}"}}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_null_arguments_stay_null_and_missing_ones_are_empty(server: Server) -> None:
    assert send(server, with_arguments("v-null", "null")) == ""
    assert send(server, with_arguments("v-missing", None)) == ""
    assert stored_call(server, "v-null")["arguments"] is None
    assert stored_call(server, "v-missing")["arguments"] == {}


@pytest.mark.parametrize(("key", "text", "kind", "stored"), [
    ("v-nan", '{"x": NaN, "y": Infinity, "z": -Infinity}', "non_finite",
     {"x": "NaN", "y": "Infinity", "z": "-Infinity"}),
    ("v-overflow", '{"x": 1e400}', "non_finite", {"x": "1e400"}),
    ("v-bigint", '{"n": 123456789012345678901234567890, "m": -9223372036854775809}', "big_int",
     {"n": "123456789012345678901234567890", "m": "-9223372036854775809"}),
    ("v-dup", '{"a": 1, "a": 2}', "duplicate_key", {"a": 2}),
    ("v-deep", '{"a": ' * 70 + "1" + "}" * 70, "too_deep", '{"a": ' * 70 + "1" + "}" * 70),
])
def test_lossy_json_is_converted_told_and_counted(
    server: Server, key: str, text: str, kind: str, stored: Any
) -> None:
    before = lossy(server, kind)
    message = send(server, with_arguments(key, text))
    assert f"converted ({kind} 1" in message and "docs/values.md" in message
    assert stored_call(server, key)["arguments"] == stored
    assert lossy(server, kind) == before + 1


def test_lossy_attribute_values_are_converted_and_counted(server: Server) -> None:
    request = turn("v-attrs")
    spans = request.resource_spans[0].scope_spans[0].spans
    (root,) = [s for s in spans if s.name.startswith("invoke_agent")]  # kept on the conversation
    root.attributes.append(KeyValue(key="ratio", value=AnyValue(double_value=math.inf)))
    root.attributes.append(KeyValue(key="peak", value=AnyValue(double_value=math.inf)))
    root.attributes.append(KeyValue(key="text", value=AnyValue(string_value="a\x00b")))
    root.attributes.append(KeyValue(key="text", value=AnyValue(string_value="again")))
    before = {k: lossy(server, k) for k in ("non_finite", "invalid_text", "duplicate_key")}
    message = send(server, request)
    assert "duplicate_key 1" in message and "invalid_text 1" in message
    assert "non_finite 2" in message  # one per value converted, equal values too
    attributes = server.wait_for("/api/v1/conversations/v-attrs", lambda b: True)["attributes"]
    assert attributes["ratio"] == attributes["peak"] == "Infinity"
    assert attributes["text"] == "again"
    for kind, added in (("non_finite", 2), ("invalid_text", 1), ("duplicate_key", 1)):
        assert lossy(server, kind) == before[kind] + added, kind


def test_escaped_nul_and_lone_surrogates_in_json_become_replacement_characters(
    server: Server,
) -> None:
    """A JSON escape can spell what no store holds (\\u0000, a lone surrogate): the decoded
    strings take U+FFFD, noted, and the request is stored, on both stores (PostgreSQL used to
    refuse the whole request)."""
    before = lossy(server, "invalid_text")
    text = '{"q": "a\\u0000b", "list": ["\\ud800"], "fine": "\\ud83d\\ude00", "k\\u0000": 1}'
    message = send(server, with_arguments("v-escaped-nul", text))
    assert "invalid_text 1" in message
    call = stored_call(server, "v-escaped-nul")
    assert call["arguments"] == {"q": "a\ufffdb", "list": ["\ufffd"], "fine": "\U0001f600",
                                 "k\ufffd": 1}
    assert lossy(server, "invalid_text") == before + 1
