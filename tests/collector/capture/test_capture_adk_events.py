"""ADK session events and kagent rows → the Batch extraction produces (seed 004's three rules).

The real files were written by google-adk run offline with a scripted model
(tests/captures/adk_events/capture.py: a plain tool, an MCP tool over stdio that fails once,
and a tool needing the user's confirmation). `kagent_seed.jsonl` rebuilds, as kagent rows,
the 14-event session seed 004 shows with `kagent-evals extract --summary`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tooltrail.collector.capture import adk_events
from tooltrail.collector.capture.adk_events import BadEvents, read_events
from tooltrail.collector.cli import main as tooltrail
from tooltrail.collector.extract import ExtractOptions, reconcile
from tooltrail.collector.model import Batch

FOLDER = Path(__file__).resolve().parents[2] / "captures" / "adk_events"
EXPECTED = json.loads((FOLDER / "expected_events.json").read_text())
REAL = ["events.jsonl", "events.camel.json", "kagent_rows.jsonl"]
SEED_TABLE = [  # seed 004: index, author, role, what it contributed or why not
    (0, "system", "", "no content"),
    (1, "user", "user", 'text "Who is themsquared?"'),
    (2, "github_assistant", "model", "call ask_user"),
    (3, "github_assistant", "user", "filtered: adk_request_confirmation"),
    (4, "user", "user", "filtered: adk_request_confirmation"),
    (5, "github_assistant", "user", "result ask_user"),
    (6, "github_assistant", "model", "text \"I don't currently have a tool to look up …\""),
    (7, "github_assistant", "", "no content"),
    (8, "system", "", "no content"),
    (9, "user", "user", 'text "Try again"'),
    (10, "github_assistant", "model", "call search_users"),
    (11, "github_assistant", "user", "result search_users"),
    (12, "github_assistant", "model", "text \"Here's what I found for **themsquared**: …\""),
    (13, "github_assistant", "", "no content"),
]


def turns(batch: Batch) -> list[list[dict[str, Any]]]:
    out = []
    for info in sorted(batch.traces, key=lambda t: t.start_ns):
        calls = reconcile([c for c in batch.calls if c.trace_id == info.turn_key])
        out.append([{"name": c.name, "arguments": c.arguments, "error": c.error is not None,
                     "step": c.step, "call_id": c.call_id} for c in calls])
    return out


@pytest.mark.parametrize("name", REAL)
def test_real_adk_session_gives_the_ground_truth(name: str) -> None:
    body = (FOLDER / name).read_bytes()
    conversation = None if name.startswith("kagent") else EXPECTED["conversation_id"]
    reading = read_events(body, conversation=conversation)
    assert len(reading.events) == EXPECTED["event_count"]
    assert turns(reading.batch) == [t["calls"] for t in EXPECTED["turns"]]
    assert {i.conversation_key for i in reading.batch.traces} == {EXPECTED["conversation_id"]}
    assert {c.source for c in reading.batch.calls} == {"adk_events"}
    calls = {c.call_id: c for c in reading.batch.calls}
    # builtin {"result": …} unwrapped (lookup_order returns a str, ADK wraps it)
    assert calls["call_order"].result == "order 42: shipped"
    # MCP {content, isError}: two keys, unwrapped; isError true fails the call
    assert calls["call_search_ok"].result == {
        "total_count": 1, "items": [{"login": "themsquared", "name": "M. Squared", "repos": 12}]}
    assert calls["call_search_bad"].status == "error"
    assert calls["call_search_bad"].error == "Error executing tool search_users"
    # the confirmed tool: first answered "requires confirmation", then its result (last wins)
    assert calls["call_delete"].result == {"deleted": "themsquared"}
    assert calls["call_delete"].error is None
    notes = reading.events
    plumbing = [n for n in notes if n.why_not == "filtered: adk_request_confirmation"]
    assert [(n.author, n.role) for n in plumbing] == [
        ("support_assistant", "model"), ("user", "user")]
    # results arrive in events whose role is `user`: still the agent's tool results
    results = [n for n in notes if any(x.startswith("result ") for x in n.contributed)]
    assert results and all(n.role == "user" for n in results)
    assert reading.closing_line() == (
        "15 events, 13 contributed → 13 messages, tools: delete_account, lookup_order, "
        "search_users")


def test_keep_plumbing_keeps_the_confirmation_call() -> None:
    body = (FOLDER / "events.jsonl").read_bytes()
    kept = read_events(body, conversation="c", options=ExtractOptions(keep_plumbing=True))
    names = [c.name for c in kept.batch.calls]
    assert names.count("adk_request_confirmation") == 1
    dropped = read_events(body, conversation="c")
    assert "adk_request_confirmation" not in [c.name for c in dropped.batch.calls]


def test_seed_kagent_session_accounting(capsys: pytest.CaptureFixture[str]) -> None:
    path = FOLDER / "kagent_seed.jsonl"
    reading = read_events(path.read_bytes())
    got = [(n.index, n.author, n.role, "; ".join(n.contributed) or n.why_not)
           for n in reading.events]
    assert got == SEED_TABLE
    closing = "14 events, 8 contributed → 8 messages, tools: ask_user, search_users"
    assert reading.closing_line() == closing
    assert turns(reading.batch) == [
        [{"name": "ask_user", "arguments": {"question": "Do you mean the GitHub user?"},
          "error": False, "step": 0, "call_id": "toolu_01"}],
        [{"name": "search_users", "arguments": {"query": "themsquared"}, "error": False,
          "step": 0, "call_id": "toolu_02"}],
    ]
    search = next(c for c in reading.batch.calls if c.name == "search_users")
    assert search.result == {"total_count": 1, "items": [{"login": "themsquared"}]}
    assert tooltrail(["extract", "--summary", str(path)]) == 0
    out = capsys.readouterr().out
    assert closing in out and "filtered: adk_request_confirmation" in out
    assert "conversation 'kagent-session-1': 2 turn(s)" in out


def test_extract_json_names_events_and_falls_back_to_the_file_name(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert tooltrail(["extract", str(FOLDER / "events.jsonl"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["format"] == "adk_events" and report["event_count"] == 15
    (conversation,) = report["conversations"]
    assert conversation["key"] == "events"
    assert [[c["name"] for c in t["calls"]] for t in conversation["turns"]] == [
        ["lookup_order", "search_users"], ["search_users", "delete_account"]]


def event(i: int, parts: list[dict[str, Any]] | None, author: str = "agent",
          role: str = "model") -> dict[str, Any]:
    return {"id": f"e{i}", "author": author, "invocation_id": "inv-1", "timestamp": 1000.0 + i,
            "content": None if parts is None else {"role": role, "parts": parts}}


def test_role_never_decides_and_text_consults_the_author() -> None:
    events = [
        event(0, [{"text": "hi"}], author="user", role="model"),  # the role lies
        event(1, [{"function_call": {"id": "c1", "name": "ask_user", "args": {"q": "?"}}}],
              role="user"),
        event(2, [{"function_response": {"id": "c1", "name": "ask_user",
                                         "response": {"result": "yes"}}}], role="model"),
        event(3, [{"text": "done"}], role="user"),
        event(4, None),
    ]
    reading = read_events(json.dumps(events), conversation="k")
    (call,) = reading.batch.calls
    assert (call.name, call.arguments, call.result, call.executed) == ("ask_user", {"q": "?"},
                                                                       "yes", True)
    assert reading.messages == 4  # user text, assistant call, tool result, assistant text
    assert reading.events[4].why_not == "no content"


def test_unanswered_call_is_requested_not_executed() -> None:
    events = [event(0, [{"functionCall": {"id": "c9", "name": "search", "args": {"q": 1}}}])]
    (call,) = read_events("\n".join(json.dumps(e) for e in events), conversation="k").batch.calls
    assert call.executed is False and call.call_id == "c9"


def test_bad_input_names_the_line() -> None:
    with pytest.raises(BadEvents, match="line 2: not JSON"):
        adk_events.parse_events('{"author": "a", "invocation_id": "i"}\n{oops\n')
    with pytest.raises(BadEvents, match="item 0: an ADK event or kagent row must be"):
        adk_events.parse_events("[1]")
    with pytest.raises(BadEvents, match="no session id"):
        read_events(json.dumps([event(0, [{"text": "hi"}])]))
    assert not adk_events.looks_like_events(b'{"resourceSpans": []}')
    assert adk_events.looks_like_events((FOLDER / "kagent_rows.jsonl").read_bytes())
