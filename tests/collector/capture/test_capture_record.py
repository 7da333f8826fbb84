"""The recording helper for uninstrumented agents: its spans are read like an instrumented
agent's, in memory and through the real server (OTLP/HTTP exporter of the OTel SDK)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from tests.server import Server, running_server
from tests.spans import capture, provider, to_request
from tooltrail.collector.capture.record import agent_turn
from tooltrail.collector.extract import extract, reconcile


def run_agent(tp: object, conversation: str) -> None:
    with agent_turn(conversation, agent="support", tracer_provider=tp) as turn:
        with turn.tool("lookup_order", {"order_id": 42}, call_id="call_1") as call:
            call.result = {"status": "shipped"}
        with pytest.raises(RuntimeError), turn.tool("charge", {"amount": 5}) as call:
            raise RuntimeError("card declined")
        turn.call("send_email", {"to": "a@example.com"}, result="sent")
        turn.call("notify", {}, error="push service down")


EXPECTED = [  # a call id only where the agent gave one
    ("lookup_order", {"order_id": 42}, "call_1", {"status": "shipped"}, False),
    ("charge", {"amount": 5}, None, None, True),
    ("send_email", {"to": "a@example.com"}, None, "sent", False),
    ("notify", {}, None, None, True),
]


def test_recorded_turn_extracts_like_an_instrumented_agent() -> None:
    tp, exporter = capture()
    run_agent(tp, "rec-1")
    batch = extract(to_request(exporter.get_finished_spans()))
    (info,) = batch.traces
    assert info.conversation_key == "rec-1" and info.has_agent_root
    assert info.agents == frozenset({"support"})
    calls = reconcile(list(batch.calls))
    assert [(c.name, c.arguments, c.call_id, c.result, c.error is not None)
            for c in calls] == EXPECTED
    assert {c.source for c in calls} == {"otel"}


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url) as s:
        yield s


def test_recorded_turn_through_the_server(server: Server) -> None:
    tp = provider(OTLPSpanExporter(endpoint=f"{server.base_url}/v1/traces"))
    run_agent(tp, "rec-2")
    tp.shutdown()
    body = server.wait_for("/api/v1/conversations/rec-2",
                           lambda b: len(b["turns"]) == 1 and len(b["turns"][0]["tool_calls"]) == 4)
    calls = body["turns"][0]["tool_calls"]
    assert [(c["name"], c["arguments"], c["call_id"], c["result"], c["error"] is not None)
            for c in calls] == EXPECTED
