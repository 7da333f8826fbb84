"""The frameworks of the extraction issue through a real server: each capture's file posted as
the OTLP/HTTP exporter sends it, protobuf or JSON, to `tooltrail serve` on SQLite and on
PostgreSQL, and read back over REST, equals the capture's ground truth (names, the model's
arguments, failures, steps, call ids, turns and conversation keys)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.collector.extract.test_extract_fixtures import CAPTURES, FIXTURES, expected_turns
from tests.server import running_server

# The captures that issue's frameworks were proven by (LangSmith's OTel export, LlamaIndex,
# smolagents, AutoGen AgentChat), those present.
CAPTURED = [name for name in ("langgraph_langsmith_otel", "llamaindex_openinference",
                              "smolagents_openinference", "autogen_agentchat",
                              "autogen_agentchat_openai")
            if name in FIXTURES]
MEDIA = {"pb": "application/x-protobuf", "json": "application/json"}
pytestmark = pytest.mark.server_process


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def rest_turns(conversation: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [[{"name": c["name"], "arguments": c["arguments"], "error": c["error"] is not None,
              "step": c["step"], "call_id": c["call_id"], "status": c["status"]}
             for c in turn["tool_calls"]] for turn in conversation["turns"]]


# Captures share their seeded trace and span ids: each is sent to a server of its own.
@pytest.mark.parametrize("suffix", sorted(MEDIA))
@pytest.mark.parametrize("name", CAPTURED)
def test_each_capture_over_otlp_http_is_stored_as_its_ground_truth(
        database_url: str, name: str, suffix: str) -> None:
    expected = json.loads((CAPTURES / name / "expected.json").read_text())
    want = expected_turns(expected)
    with running_server(database_url) as server, server.client() as client:
        answer = client.post("/v1/traces", headers={"content-type": MEDIA[suffix]},
                             content=(CAPTURES / name / f"spans.otlp.{suffix}").read_bytes())
        assert answer.status_code == 200 and "rejectedSpans" not in answer.text, answer.text
        key = expected["conversation_id"]
        if key is None:  # no conversation key exported: each turn is a trace of its own
            listed = server.wait_for("/api/v1/conversations",
                                     lambda page: len(page["data"]) == len(want))
            got = [rest_turns(server.wait_for(f"/api/v1/conversations/{c['key']}",
                                              lambda c: bool(c["turns"])))[0]
                   for c in listed["data"]]
            assert sorted(map(canonical, got)) == sorted(map(canonical, want))
            return
        found = server.wait_for(f"/api/v1/conversations/{key}",
                                lambda c: len(c["turns"]) == len(want))
    assert rest_turns(found) == want


def test_the_issue_captures_are_all_here() -> None:
    assert len(CAPTURED) >= 3
