"""A2A tasks over REST (ArkSim's tool-call-capture extension, seed 000), built with the real
`a2a-sdk` types and sent as their JSON (protobuf JSON mapping, as the SDK's transports write
it), on both stores through the real server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from a2a.types import (
    Artifact,
    Message,
    Part,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from google.protobuf.json_format import MessageToDict, ParseDict

from tests.server import Server, running_server

URI = "https://arksim.arklex.ai/a2a/tool-call-capture/v1"
KEY = f"{URI}/tool_calls"
V2 = "https://arksim.arklex.ai/a2a/tool-call-capture/v2"


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url) as s:
        yield s


def artifact(artifact_id: str, calls: list[Any] | None, *, uri: str | None = URI,
             key: str = KEY) -> Artifact:
    return Artifact(artifact_id=artifact_id, parts=[Part(text="answer")],
                    metadata={key: calls} if calls is not None else None,
                    extensions=[uri] if uri else None)


def task(task_id: str, context: str, artifacts: list[Artifact]) -> Task:
    leak = ParseDict({"messageId": "m1", "role": "ROLE_AGENT", "parts": [
        {"data": {"tool_calls": [{"name": "from_a_message"}]}}]}, Message())
    found = Task(id=task_id, context_id=context,
                 status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED),
                 artifacts=artifacts, history=[leak])
    found.status.timestamp.GetCurrentTime()
    return found


def post(server: Server, body: bytes, params: dict[str, str] | None = None,
         media: str = "application/json") -> Any:
    with server.client() as client:
        return client.post("/api/v1/a2a/tasks", content=body, params=params,
                           headers={"content-type": media})


def calls_of(server: Server, key: str) -> list[list[tuple[Any, ...]]]:
    with server.client() as client:
        conversation = client.get(f"/api/v1/conversations/{key}").json()
    return [[(c["name"], c["call_id"], c["arguments"], c["result"], c["error"], c["source"])
             for c in t["tool_calls"]] for t in conversation["turns"]]


def test_task_artifacts_by_the_extension_rules(server: Server) -> None:
    good = [
        {"id": "c1", "name": "search_users", "arguments": {"query": "ann"},
         "result": {"total": 1}},
        {"arguments": {"x": 1}},  # no name
        {"name": 5},  # not a string name
        {"name": "bad_args", "arguments": "query=ann"},  # arguments not an object
        {"name": "notify", "error": "mail server down"},
    ]
    body = task("task-1", "a2a-ctx-1", [
        artifact("with-extension", good),
        artifact("without-extension", [{"name": "unlisted"}], uri=None),
        artifact("next-version", [{"name": "v2_call"}], uri=V2, key=f"{V2}/tool_calls"),
    ])
    answer = post(server, json.dumps(MessageToDict(body)).encode())
    assert answer.status_code == 200, answer.text
    ack = answer.json()
    assert (ack["conversation"], ack["turns"], ack["calls"]) == ("a2a-ctx-1", 1, 2)
    reasons = sorted((s["artifact"], s["entry"], s["reason"]) for s in ack["skipped"])
    assert reasons == sorted([
        ("with-extension", 1, "no string name"),
        ("with-extension", 2, "no string name"),
        ("with-extension", 3, "arguments is not a JSON object"),
        ("without-extension", None,
         "tool_calls in metadata, but the artifact does not list the extension: not read"),
        ("next-version", None, f"unsupported tool-call-capture version {V2}: not read"),
    ])
    assert "some tool spans were not extracted" in ack["warning"]
    # Message.parts (a DataPart with tool_calls) are never read; metadata is a protobuf
    # Struct, whose numbers are doubles: the SDK writes 1 as 1.0
    assert calls_of(server, "a2a-ctx-1") == [[
        ("search_users", "c1", {"query": "ann"}, '{"total": 1.0}', None, "a2a"),
        ("notify", None, {}, None, "mail server down", "a2a"),
    ]]
    with server.client() as client:  # the skipped entries are visible in the ingest errors
        errors = client.get("/api/v1/ingest/errors").json()["data"]
    assert {"no string name", "arguments is not a JSON object"} <= {
        e["message"] for e in errors if e["transport"] == "a2a"}


def stream(*events: StreamResponse) -> bytes:
    return b"".join(json.dumps(MessageToDict(e)).encode() + b"\n" for e in events)


def update(task_id: str, calls: list[dict[str, Any]], name: str = "tools") -> StreamResponse:
    return StreamResponse(artifact_update=TaskArtifactUpdateEvent(
        task_id=task_id, context_id="ignored-ctx", artifact=artifact(name, calls)))


A = {"id": "a", "name": "lookup", "arguments": {"id": 1}}
B = {"id": "b", "name": "lookup", "arguments": {"id": 2}}
C = {"id": "c", "name": "refund", "arguments": {"id": 1}}


def test_stream_final_snapshot_is_authoritative(server: Server) -> None:
    status = StreamResponse(status_update=TaskStatusUpdateEvent(
        task_id="task-s", context_id="ignored-ctx",
        status=TaskStatus(state=TaskState.TASK_STATE_WORKING)))
    final = StreamResponse(task=task("task-s", "ignored-ctx", [artifact("tools", [A, C])]))
    body = stream(update("task-s", [A, B]), status, update("task-s", [C], "more"), final)
    answer = post(server, body, {"conversation": "a2a-stream"}, "application/x-ndjson")
    assert answer.status_code == 200, answer.text
    assert answer.json()["calls"] == 2
    names = [[(c[0], c[1]) for c in turn] for turn in calls_of(server, "a2a-stream")]
    assert names == [[("lookup", "a"), ("refund", "c")]]  # B was dropped by the snapshot


def test_stream_without_snapshot_keeps_what_accumulated(server: Server) -> None:
    status = StreamResponse(status_update=TaskStatusUpdateEvent(
        task_id="task-u", context_id="a2a-acc", status=TaskStatus(
            state=TaskState.TASK_STATE_WORKING)))
    events = [MessageToDict(e) for e in (update("task-u", [A]), status, update("task-u", [B]))]
    answer = post(server, json.dumps(events).encode(), {"conversation": "a2a-acc"})
    assert answer.status_code == 200, answer.text
    assert [[c[1] for c in t] for t in calls_of(server, "a2a-acc")] == [["a", "b"]]


def test_each_task_is_a_turn_and_a_resend_stores_nothing_new(server: Server) -> None:
    first = json.dumps(MessageToDict(task("task-x", "a2a-turns", [artifact("t", [A])])))
    second = json.dumps(MessageToDict(task("task-y", "a2a-turns", [artifact("t", [C])])))
    for body in (first, second, first):
        assert post(server, body.encode()).status_code == 200
    assert [[c[1] for c in t] for t in calls_of(server, "a2a-turns")] == [["a"], ["c"]]


@pytest.mark.parametrize(("body", "message"), [
    (b"{oops", "line 1: not JSON"),
    (b"[1]", "item 0: an A2A Task or stream event must be a JSON object"),
    (json.dumps(MessageToDict(Task(id="t-nc", artifacts=[artifact("x", [A])]))).encode(),
     "the task has no contextId"),
    (json.dumps({"artifactUpdate": {"artifact": {}}}).encode(), "needs taskId and artifact"),
])
def test_bad_bodies_are_400_and_store_nothing(server: Server, body: bytes, message: str) -> None:
    def conversations() -> list[dict[str, Any]]:
        with server.client() as client:
            found: list[dict[str, Any]] = client.get("/api/v1/conversations").json()["data"]
            return found

    before = conversations()
    answer = post(server, body)
    assert answer.status_code == 400, answer.text
    assert message in answer.json()["error"]["message"]
    assert conversations() == before


def test_json_rpc_responses_of_a_dumped_stream_are_read() -> None:
    from tooltrail.collector.capture.a2a import read_tasks

    events = [update("task-r", [A, B]),
              StreamResponse(task=task("task-r", "a2a-rpc", [artifact("tools", [B])]))]
    body = "\n".join(json.dumps({"jsonrpc": "2.0", "id": 7, "result": MessageToDict(e)})
                     for e in events)
    reading = read_tasks(body)
    assert [(c.call_id, c.source) for c in reading.batch.calls] == [("b", "a2a")]
    assert [i.conversation_key for i in reading.batch.traces] == ["a2a-rpc"]
