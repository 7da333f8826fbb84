"""Explicit tool calls over REST (ArkSim's AgentResponse.tool_calls), on both stores through the
real server: field rules, merge with the traced calls of the same turn in either arrival order
(seed 000 "Deduplication": by id, then by (name, arguments), explicit wins, the rest kept),
idempotent resend, provenance, scoring of the merged turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from sqlalchemy import func, select

from tests.server import Server, running_server
from tests.spans import ToolStep, agent_turn, provider
from tooltrail.collector.store.db import make_engine
from tooltrail.collector.store.tables import tool_calls


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url) as s:
        yield s


TRACED = [  # what the agent's spans say it did in the turn
    ToolStep("lookup_order", {"order_id": 42}, {"status": "traced"}, call_id="call_1"),
    ToolStep("get_weather", {"city": "Paris"}, "traced", call_id="call_w"),
    ToolStep("search", {"q": "x"}, [], call_id="call_s"),
]
EXPLICIT = {"agent": "support", "calls": [
    {"id": "call_1", "name": "lookup_order", "arguments": {"order_id": 42},
     "result": {"status": "shipped"}},  # same id: the explicit call wins
    {"name": "get_weather", "arguments": {"city": "Paris"}, "result": "18C"},  # same signature
    {"id": "x9", "name": "send_email", "arguments": {"to": "a@example.com"}},  # matches nothing
]}
MERGED = [  # (name, call id, source, result), in turn order
    ("lookup_order", "call_1", "explicit", '{"status": "shipped"}'),
    ("get_weather", "call_w", "explicit", "18C"),
    ("search", "call_s", "otel", []),
    ("send_email", "x9", "explicit", None),
]


def send_turn(server: Server, key: str, tools: list[ToolStep]) -> None:
    tp = provider(OTLPSpanExporter(endpoint=f"{server.base_url}/v1/traces"))
    agent_turn(tp, key, tools)
    tp.shutdown()


def post_calls(server: Server, key: str, index: Any, body: Any) -> Any:
    with server.client() as client:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return client.post(f"/api/v1/conversations/{key}/turns/{index}/calls", content=data,
                           headers={"content-type": "application/json"})


def turn_calls(conversation: dict[str, Any]) -> list[list[tuple[Any, ...]]]:
    return [[(c["name"], c["call_id"], c["source"], c["result"]) for c in t["tool_calls"]]
            for t in conversation["turns"]]


def wait_turns(server: Server, key: str, predicate: Any) -> dict[str, Any]:
    found: dict[str, Any] = server.wait_for(f"/api/v1/conversations/{key}",
                                            lambda b: predicate(turn_calls(b)))
    return found


def stored_calls(url: str, source: str) -> int:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            count: int = conn.execute(select(func.count()).select_from(tool_calls).where(
                tool_calls.c.source == source)).scalar_one()
            return count
    finally:
        engine.dispose()


def test_explicit_first_then_spans(server: Server) -> None:
    answer = post_calls(server, "cap-first", 0, EXPLICIT)
    assert answer.status_code == 200, answer.text
    assert answer.json()["calls"] == 3
    # committed before the answer: readable at once, a turn of its own until spans come
    with server.client() as client:
        alone = client.get("/api/v1/conversations/cap-first").json()
    assert turn_calls(alone) == [[
        ("lookup_order", "call_1", "explicit", '{"status": "shipped"}'),
        ("get_weather", None, "explicit", "18C"),
        ("send_email", "x9", "explicit", None),
    ]]
    send_turn(server, "cap-first", TRACED)
    merged = wait_turns(server, "cap-first", lambda t: t == [MERGED])
    assert merged["turns"][0]["agents"] == ["support"]


def test_merged_turn_names_the_agents_of_both(server: Server) -> None:
    send_turn(server, "cap-agents", TRACED)
    wait_turns(server, "cap-agents", lambda t: len(t) == 1 and len(t[0]) == 3)
    assert post_calls(server, "cap-agents", 0, {**EXPLICIT, "agent": "billing"}).status_code == 200
    with server.client() as client:
        (turn,) = client.get("/api/v1/conversations/cap-agents").json()["turns"]
    assert turn["agents"] == ["billing", "support"]


def test_spans_first_then_explicit(server: Server) -> None:
    send_turn(server, "cap-second", TRACED)
    wait_turns(server, "cap-second", lambda t: len(t) == 1 and len(t[0]) == 3)
    answer = post_calls(server, "cap-second", 0, EXPLICIT)
    assert answer.status_code == 200, answer.text
    with server.client() as client:
        conversation = client.get("/api/v1/conversations/cap-second").json()
    assert turn_calls(conversation) == [MERGED]


def test_index_maps_to_the_turn_at_that_position(server: Server) -> None:
    send_turn(server, "cap-pos", [ToolStep("a", {}, 1, call_id="ca")])
    wait_turns(server, "cap-pos", lambda t: len(t) == 1)
    body = {"calls": [{"id": "cb", "name": "b", "arguments": {"k": 1}, "result": "explicit"}]}
    assert post_calls(server, "cap-pos", 1, body).status_code == 200
    with server.client() as client:
        early = client.get("/api/v1/conversations/cap-pos").json()
    # turn 1's spans have not arrived: the explicit calls stand as turn 1
    assert turn_calls(early) == [[("a", "ca", "otel", 1)], [("b", "cb", "explicit", "explicit")]]
    send_turn(server, "cap-pos", [ToolStep("b", {"k": 1}, "traced", call_id="cb"),
                                  ToolStep("c", {}, 2, call_id="cc")])
    wait_turns(server, "cap-pos", lambda t: t == [
        [("a", "ca", "otel", 1)],
        [("b", "cb", "explicit", "explicit"), ("c", "cc", "otel", 2)],
    ])


def test_resend_stores_nothing_new(server: Server, module_database_url: str) -> None:
    call = {"name": "dup", "arguments": {"n": 1}}
    body = {"calls": [call, call]}
    before = stored_calls(module_database_url, "explicit")
    assert post_calls(server, "cap-resend", 0, body).status_code == 200
    # two identical calls in one body are two calls
    assert stored_calls(module_database_url, "explicit") == before + 2
    assert post_calls(server, "cap-resend", 0, body).status_code == 200
    assert stored_calls(module_database_url, "explicit") == before + 2
    with server.client() as client:
        conversation = client.get("/api/v1/conversations/cap-resend").json()
    assert [c["name"] for c in conversation["turns"][0]["tool_calls"]] == ["dup", "dup"]
    assert conversation["call_count"] == 2


@pytest.mark.parametrize(("body", "field"), [
    ({"calls": [{"arguments": {}}]}, "calls[0].name"),
    ({"calls": [{"name": ""}]}, "calls[0].name"),
    ({"calls": [{"name": 7}]}, "calls[0].name"),
    ({"calls": [{"name": "ok"}, {"name": "a", "arguments": [1]}]}, "calls[1].arguments"),
    ({"calls": [{"name": "a", "arguments": "{\"x\": 1}"}]}, "calls[0].arguments"),
    ({"calls": [{"name": "a", "id": 3}]}, "calls[0].id"),
    ({"calls": [{"name": "a", "source": "otel"}]}, "calls[0].source"),
    ({"calls": [{"name": "a", "colour": "red"}]}, "calls[0].colour"),
    ({"calls": ["a"]}, "calls[0]"),
    ({}, "calls"),
    ({"calls": {}}, "calls"),
    ({"calls": [], "agent": 5}, "agent"),
    ({"calls": [], "attributes": {"a": [1]}}, "attributes.a"),
    ({"calls": [], "extra": 1}, "extra"),
    ([], "body"),
    (b"{not json", "body"),
])
def test_each_field_rule_violation_is_a_400_naming_it(
    server: Server, body: Any, field: str,
) -> None:
    answer = post_calls(server, "cap-bad", 0, body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["details"] == {"field": field} and error["message"].startswith(f"{field}: ")
    with server.client() as client:  # nothing of a rejected body is stored
        assert client.get("/api/v1/conversations/cap-bad").status_code == 404


def test_bad_index_and_media_type(server: Server) -> None:
    answer = post_calls(server, "cap-bad", "first", {"calls": []})
    assert answer.status_code == 400 and answer.json()["error"]["details"] == {"field": "index"}
    with server.client() as client:
        text = client.post("/api/v1/conversations/cap-bad/turns/0/calls", content=b"x",
                           headers={"content-type": "text/plain"})
        assert text.status_code == 415
        assert client.get("/api/v1/conversations/cap-bad").status_code == 404


def test_non_string_result_and_error_are_json(server: Server) -> None:
    body = {"calls": [{"name": "charge", "arguments": {"amount": 5},
                       "result": {"ok": False}, "error": {"code": 402}}]}
    assert post_calls(server, "cap-json", 0, body).status_code == 200
    with server.client() as client:
        (call,) = client.get("/api/v1/conversations/cap-json").json()["turns"][0]["tool_calls"]
    assert (call["result"], call["error"], call["status"]) == ('{"ok": false}', '{"code": 402}',
                                                               "error")
    assert call["arguments"] == {"amount": 5} and call["call_id"] is None


def test_merged_turn_is_scored_and_filtered_by_source(server: Server) -> None:
    send_turn(server, "cap-score", TRACED)
    assert post_calls(server, "cap-score", 0, EXPLICIT).status_code == 200
    expectation = {"id": "cap-merged", "selector": {"conversation": "cap-score"},
                   "match": "strict", "calls": [
                       {"name": "lookup_order", "arguments": {"order_id": 42}},
                       {"name": "get_weather", "arguments": {"city": "Paris"}},
                       {"name": "search"}, {"name": "send_email"}]}
    with server.client() as client:
        assert client.post("/api/v1/expectations", json=expectation).status_code == 201
    # strict: exactly these four calls in this order; unmerged there would be six
    server.wait_for("/api/v1/conversations/cap-score/results",
                    lambda b: [(r["expectation"], r["passed"]) for r in b["data"]]
                    == [("cap-merged", True)])
    with server.client() as client:
        keys = {c["key"] for c in client.get("/api/v1/conversations",
                                             params={"source": "explicit"}).json()["data"]}
        traced_only = {c["key"] for c in client.get("/api/v1/conversations",
                                                    params={"source": "otel"}).json()["data"]}
    assert {"cap-score", "cap-first", "cap-json"} <= keys
    assert "cap-json" not in traced_only and "cap-score" in traced_only


def test_nul_characters_are_replaced_as_in_otlp_strings(server: Server) -> None:
    """PostgreSQL text and JSON cannot hold NUL: replaced by U+FFFD (as OTLP strings are),
    never a failed write answered with a retryable 503."""
    body = {"calls": [{"id": "n\u00001", "name": "x\u0000y", "arguments": {"k\u0000": "\u0000"},
                       "result": "r\u0000", "error": None}]}
    answer = post_calls(server, "cap-nul", 0, body)
    assert answer.status_code == 200, answer.text
    with server.client() as client:
        (call,) = client.get("/api/v1/conversations/cap-nul").json()["turns"][0]["tool_calls"]
    assert (call["name"], call["call_id"], call["arguments"], call["result"]) == (
        "x\ufffdy", "n\ufffd1", {"k\ufffd": "\ufffd"}, "r\ufffd")


def shown_counts(conversation: dict[str, Any]) -> tuple[int, int, int]:
    """(turns, calls, failed calls) as the conversation's turns show them."""
    calls = [c for t in conversation["turns"] for c in t["tool_calls"] if c["executed"]]
    return (len(conversation["turns"]), len(calls),
            sum(c["status"] == "error" for c in calls))


@pytest.mark.parametrize("explicit_first", [True, False])
def test_counts_are_those_of_the_merged_turns(server: Server, explicit_first: bool) -> None:
    """turn_count / call_count / error_count count each merged call once, as the turns show
    it, on the conversation and in the list (issue 15: both sides were counted)."""
    key = f"cap-counts-{explicit_first}"
    traced = [*TRACED, ToolStep("refund", {"n": 1}, raises="declined", call_id="call_r")]
    explicit = {"calls": [*EXPLICIT["calls"],
                          {"id": "call_r", "name": "refund", "error": "declined"}]}
    if explicit_first:
        assert post_calls(server, key, 0, explicit).status_code == 200
        send_turn(server, key, traced)
    else:
        send_turn(server, key, traced)
        wait_turns(server, key, lambda t: len(t) == 1 and len(t[0]) == 4)
        assert post_calls(server, key, 0, explicit).status_code == 200
    merged = wait_turns(server, key, lambda t: len(t) == 1 and len(t[0]) == 5)
    # the merged turn: 3 merged calls, search (traced only), send_email (explicit only)
    assert shown_counts(merged) == (1, 5, 1)
    with server.client() as client:
        conversation = client.get(f"/api/v1/conversations/{key}").json()
        listed = client.get("/api/v1/conversations", params={"tool": "refund"}).json()
    (listed,) = [c for c in listed["data"] if c["key"] == key]
    for counted in (conversation, listed):
        assert (counted["turn_count"], counted["call_count"], counted["error_count"]) == (
            1, 5, 1)
