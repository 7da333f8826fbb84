"""Conversation keys and tool names are stored as sent, and found by the key that was sent, on
both stores, through the SDK's own OTLP exporter: no trimming, no cutting. What no store can
hold is refused in partial_success with the reason (a key past MAX_KEY_BYTES, a tool name past
MAX_NAME), or normalised the one documented way on ingest and on lookup alike (NUL → U+FFFD)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tests.collector.receivers.test_ingest_limits import post, turn
from tests.server import Server, running_server
from tests.spans import ToolStep, agent_turn, provider
from tooltrail.collector.extract.fields import MAX_NAME
from tooltrail.collector.extract.traces import MAX_KEY_BYTES

SENT_AS_IS = [
    "  padded key\t",  # surrounding whitespace is part of the key
    "k" * 1000,  # longer than the old 512-character cut, within MAX_KEY_BYTES
    "é" * (MAX_KEY_BYTES // 2),  # exactly MAX_KEY_BYTES bytes of UTF-8
    "with/slash and ?query#hash",
]


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url, "--no-worker") as s:
        yield s


def export(server: Server, key: str, tool: str = "lookup") -> None:
    """One agent turn, exported by the SDK's OTLP/HTTP exporter as an agent would."""
    exporter = OTLPSpanExporter(endpoint=f"{server.base_url}/v1/traces", timeout=10)
    tp = provider(exporter)
    agent_turn(tp, key, [ToolStep(tool, {"q": 1}, {"ok": True})])
    tp.shutdown()


def conversation(server: Server, key: str) -> dict[str, Any]:
    found: dict[str, Any] = server.wait_for(f"/api/v1/conversations/{quote(key, safe='')}",
                                            lambda b: True)
    return found


@pytest.mark.parametrize("key", SENT_AS_IS, ids=["padded", "long", "max-bytes", "slash"])
def test_key_and_tool_name_are_stored_and_found_as_sent(server: Server, key: str) -> None:
    export(server, key, tool=" lookup ")
    body = conversation(server, key)
    assert body["key"] == key
    assert [c["name"] for t in body["turns"] for c in t["tool_calls"]] == [" lookup "]


def test_nul_is_normalised_alike_on_ingest_and_lookup(server: Server) -> None:
    export(server, "nul\x00key", tool="to\x00ol")
    body = conversation(server, "nul\x00key")  # GET by the key that was sent
    assert body["key"] == "nul\ufffdkey"
    assert [c["name"] for t in body["turns"] for c in t["tool_calls"]] == ["to\ufffdol"]
    assert conversation(server, "nul\ufffdkey")["key"] == "nul\ufffdkey"


def test_a_key_too_long_to_index_is_refused_with_the_reason(server: Server) -> None:
    key = "x" * (MAX_KEY_BYTES + 1)
    answer = ExportTraceServiceResponse.FromString(
        post(server, turn(key).SerializeToString()).content).partial_success
    assert answer.rejected_spans == 1  # the agent root that carries the key
    assert f"{MAX_KEY_BYTES + 1} bytes" in answer.error_message
    assert f"at most {MAX_KEY_BYTES}" in answer.error_message
    with server.client() as client:
        assert client.get(f"/api/v1/conversations/{key}").status_code == 404
        page = client.get("/api/v1/conversations", params={"limit": 1000}).json()["data"]
    assert not any(c["key"].startswith("x" * 100) for c in page)  # nothing cut and stored


def test_a_tool_name_too_long_is_refused_with_the_reason(server: Server) -> None:
    tool = "t" * (MAX_NAME + 1)
    response = post(server, turn("long-tool", tool=tool).SerializeToString())
    answer = ExportTraceServiceResponse.FromString(response.content).partial_success
    assert f"tool name is {MAX_NAME + 1} characters; at most {MAX_NAME}" in (
        answer.error_message)
    body = conversation(server, "long-tool")
    assert [c["name"] for t in body["turns"] for c in t["tool_calls"]] == []
    errors = httpx.get(f"{server.base_url}/api/v1/ingest/errors").json()["data"]
    assert any("tool name is" in e["message"] for e in errors)
