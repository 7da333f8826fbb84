"""Tool-call content in OTLP log events (GenAI events) gives the trajectory the same content on
spans gives, whichever of logs and spans arrives first (collector.extract.log_records).

Store tests send with the real OpenTelemetry SDK (LoggerProvider + OTLP gRPC and HTTP log
exporters, OTLP HTTP span exporter) to a real server on SQLite and PostgreSQL and read the
conversation back over REST. The capture test moves a real Strands capture's content events to
log records.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import (
    OTLPLogExporter as GrpcLogExporter,
)
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    InMemoryLogRecordExporter,
    LogRecordExportResult,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import Status, StatusCode

from tests.server import Server, running_server
from tests.spans import capture, to_request
from tooltrail.collector.extract import ExtractOptions, extract
from tooltrail.collector.extract.events import DETAILS
from tooltrail.collector.extract.reconcile import place, settle
from tooltrail.collector.model import Batch
from tooltrail.collector.readers import read_logs

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
# What content capture puts on a Strands tool span besides its events (capture `strands_latest`)
SPAN_CONTENT = ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result")


def trajectory(batches: list[Batch]) -> list[list[tuple[Any, ...]]]:
    """Per turn (in time order), each reconciled call as the matcher and REST see it."""
    by_trace: dict[str, list[Any]] = {}
    for batch in batches:
        for call in batch.calls:
            by_trace.setdefault(call.trace_id, []).append(call)
    order = sorted(by_trace, key=lambda t: min(c.start_ns for c in by_trace[t]))
    return [[(c.name, c.call_id, c.arguments, c.result, c.error, c.step, c.status, c.executed)
             for c in (p.resolved() for p in placed)]
            for placed in settle([place(by_trace[t]) for t in order])]


def content_to_logs(
    request: ExportTraceServiceRequest,
) -> tuple[ExportTraceServiceRequest, ExportLogsServiceRequest]:
    """The spans without their content (operation-details events and tool content attributes),
    and that content as the log records an events-only instrumentation sends instead."""
    spans = copy.deepcopy(request)
    logs = ExportLogsServiceRequest()
    for rs in spans.resource_spans:
        rl = logs.resource_logs.add()
        rl.resource.CopyFrom(rs.resource)
        for ss in rs.scope_spans:
            sl = rl.scope_logs.add()
            sl.scope.CopyFrom(ss.scope)
            for span in ss.spans:
                kept = [e for e in span.events if e.name != DETAILS]
                for event in span.events:
                    if event.name == DETAILS:
                        record = sl.log_records.add(
                            event_name=event.name, time_unix_nano=event.time_unix_nano,
                            trace_id=span.trace_id, span_id=span.span_id)
                        record.attributes.extend(event.attributes)
                del span.events[:]
                span.events.extend(kept)
                attrs = [a for a in span.attributes if a.key not in SPAN_CONTENT]
                del span.attributes[:]
                span.attributes.extend(attrs)
    return spans, logs


def one_by_one(logs: ExportLogsServiceRequest) -> Iterator[ExportLogsServiceRequest]:
    for rl in logs.resource_logs:
        for sl in rl.scope_logs:
            for record in sl.log_records:
                one = ExportLogsServiceRequest()
                part = one.resource_logs.add(resource=rl.resource).scope_logs.add(scope=sl.scope)
                part.log_records.append(record)
                yield one


def test_real_capture_content_in_logs_gives_the_span_trajectory() -> None:
    original = ExportTraceServiceRequest.FromString(
        (CAPTURES / "strands_latest" / "spans.otlp.pb").read_bytes())
    spans, logs = content_to_logs(original)
    assert sum(len(sl.log_records) for rl in logs.resource_logs for sl in rl.scope_logs) > 10
    expected = trajectory([extract(original)])
    assert [len(t) for t in expected] == [3, 2]  # turn 3 has no call
    bare = trajectory([extract(spans)])
    assert bare != expected and all(c[3] is None for t in bare for c in t)  # content was moved
    from_logs, records = read_logs(logs, ExtractOptions())
    assert records and not from_logs.rejected
    assert trajectory([from_logs, extract(spans)]) == expected
    assert trajectory([extract(spans), from_logs]) == expected
    # one record per request: a tool's answer alone names no tool and still folds into its span
    alone = [read_logs(one, ExtractOptions())[0] for one in one_by_one(logs)]
    assert any(not c.name for b in alone for c in b.calls)
    assert trajectory([extract(spans), *alone]) == expected
    # each trace the records name gets a turn keyed by its trace until its spans say better
    assert {t.conversation_key for t in from_logs.traces} == {t.trace_id for t in from_logs.traces}


def kv(key: str, value: str) -> KeyValue:
    out = KeyValue(key=key)
    out.value.string_value = value
    return out


def test_refused_records_and_records_without_content() -> None:
    logs = ExportLogsServiceRequest()
    sl = logs.resource_logs.add().scope_logs.add()
    trace, span = bytes(range(1, 17)), bytes(range(1, 9))
    sl.log_records.add(event_name=DETAILS, trace_id=trace, span_id=span,
                       time_unix_nano=2**63).attributes.append(kv("gen_ai.operation.name", "chat"))
    long_key = sl.log_records.add(event_name=DETAILS, trace_id=trace, span_id=span)
    long_key.attributes.append(kv("gen_ai.conversation.id", "k" * 2000))
    sl.log_records.add(event_name="app.started", trace_id=trace, span_id=span)  # not GenAI
    sl.log_records.add(event_name=DETAILS)  # outside any span: names no call
    batch, count = read_logs(logs, ExtractOptions())
    assert count == 4
    assert sorted(r.reason.split(" ")[0] for r in batch.rejected) == [
        "conversation", "time_unix_nano"]
    assert batch.empty


# --- the same conversation through the real SDK and server ------------------------------

@dataclass(frozen=True)
class Call:
    name: str
    call_id: str
    arguments: dict[str, Any]
    result: Any
    raises: str | None = None


TURNS: list[list[list[Call]]] = [  # turn → step (one model response) → calls it requested
    [[Call("get_weather", "w1", {"city": "Paris"}, {"temp_c": 18}),
      Call("get_weather", "w2", {"city": "London"}, {"temp_c": 14})],
     [Call("get_time", "t1", {"city": "Paris"}, "12:00")]],
    [[Call("convert", "fx", {"amount": 100}, "error: FX down", raises="FX down")],
     [Call("get_weather", "w3", {"city": "Berlin"}, {"temp_c": 11})]],
]
FORMS = ("spans", "details", "events")  # content on spans; in operation details; older events


def emit(key: str, form: str) -> tuple[list[Any], list[Any]]:
    """(finished spans, finished log records) of the scripted conversation, content in `form`."""
    tp, spans = capture()
    memory = InMemoryLogRecordExporter()
    logs = LoggerProvider(resource=Resource.create({"service.name": "support-agent"}))
    logs.add_log_record_processor(SimpleLogRecordProcessor(memory))
    logger = logs.get_logger("tests.agent")
    tracer = tp.get_tracer("tests.agent")

    def chat(requested: list[Call], answered: list[Call]) -> None:
        parts = [{"type": "tool_call", "name": c.name, "id": c.call_id,
                  "arguments": c.arguments} for c in requested]
        messages = json.dumps([{"role": "assistant", "parts": parts or [
            {"type": "text", "content": "done"}]}])
        with tracer.start_as_current_span("chat scripted",
                                          attributes={"gen_ai.operation.name": "chat"}) as span:
            if form == "spans":
                span.set_attribute("gen_ai.output.messages", messages)
            elif form == "details":
                logger.emit(event_name=DETAILS, attributes={
                    "gen_ai.operation.name": "chat", "gen_ai.output.messages": messages})
            else:  # the chat's input repeats every answer so far; its choice is the response
                for c in answered:
                    logger.emit(event_name="gen_ai.tool.message", body={
                        "role": "tool", "id": c.call_id, "content": json.dumps(c.result)})
                logger.emit(event_name="gen_ai.choice", body={
                    "index": 0, "finish_reason": "tool_calls" if requested else "stop",
                    "message": {"role": "assistant", "tool_calls": [
                        {"id": c.call_id, "type": "function", "function": {
                            "name": c.name, "arguments": json.dumps(c.arguments)}}
                        for c in requested]}})

    def tool(call: Call) -> None:
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.name,
                      "gen_ai.tool.call.id": call.call_id}
        with tracer.start_as_current_span(f"execute_tool {call.name}", attributes=attributes,
                                          record_exception=False,
                                          set_status_on_exception=False) as span:
            if form == "spans":
                span.set_attribute("gen_ai.tool.call.arguments", json.dumps(call.arguments))
                span.set_attribute("gen_ai.tool.call.result", json.dumps(call.result))
            elif form == "details":
                logger.emit(event_name=DETAILS, attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.input.messages": json.dumps([{"role": "tool", "parts": [
                        {"type": "tool_call", "name": call.name, "id": call.call_id,
                         "arguments": call.arguments}]}]),
                    "gen_ai.output.messages": json.dumps([{"role": "tool", "parts": [
                        {"type": "tool_call_response", "id": call.call_id,
                         "response": json.dumps(call.result)}]}])})
            if call.raises is not None:  # not content: the span says so in every form
                span.record_exception(RuntimeError(call.raises))
                span.set_status(Status(StatusCode.ERROR, call.raises))

    for steps in TURNS:
        root = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support",
                "gen_ai.conversation.id": key}
        with tracer.start_as_current_span("invoke_agent support", attributes=root):
            answered: list[Call] = []
            for step in steps:
                chat(step, answered)
                for call in step:
                    tool(call)
                answered += step
            chat([], answered)
    logs.shutdown()
    return list(spans.get_finished_spans()), list(memory.get_finished_logs())


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url) as s:
        yield s


def stored(conversation: dict[str, Any]) -> list[list[tuple[Any, ...]]]:
    return [[(c["name"], c["call_id"], c["arguments"], c["result"], c["error"], c["step"],
              c["status"], c["executed"]) for c in t["tool_calls"]]
            for t in conversation["turns"]]


def send(server: Server, key: str, form: str, order: str) -> None:
    spans, records = emit(key, form)
    span_exporter = OTLPSpanExporter(endpoint=f"{server.base_url}/v1/traces")
    # logs sent first go over gRPC, logs sent after over HTTP: one ingest path for both
    log_exporter = (OTLPLogExporter(endpoint=f"{server.base_url}/v1/logs")
                    if order == "logs after" else
                    GrpcLogExporter(endpoint=server.grpc_endpoint, insecure=True))
    sends = [lambda: span_exporter.export(spans) == SpanExportResult.SUCCESS,
             lambda: log_exporter.export(records) == LogRecordExportResult.SUCCESS]
    for do in sends if order == "logs after" else sends[::-1]:
        assert do()
    span_exporter.shutdown()
    log_exporter.shutdown()


def conversation(server: Server, key: str, want: Any = None) -> list[list[tuple[Any, ...]]]:
    found = server.wait_for(
        f"/api/v1/conversations/{key}",
        lambda c: len(c["turns"]) == len(TURNS) and (want is None or stored(c) == want))
    return stored(found)


def test_same_trajectory_from_spans_and_from_logs_in_either_order(server: Server) -> None:
    send(server, "conv-spans", "spans", "logs after")
    expected = conversation(server, "conv-spans")
    assert [[c[0] for c in t] for t in expected] == [
        ["get_weather", "get_weather", "get_time"], ["convert", "get_weather"]]
    assert expected[0][0][2:4] == ({"city": "Paris"}, {"temp_c": 18})
    assert expected[1][0][4] and expected[1][0][6] == "error"
    for form in ("details", "events"):
        for order in ("logs before", "logs after"):
            key = f"conv-{form}-{order.replace(' ', '-')}"
            send(server, key, form, order)
            assert conversation(server, key, expected) == expected, (form, order)
    with server.client() as client:
        keys = {c["key"] for c in client.get("/api/v1/conversations",
                                             params={"limit": 100}).json()["data"]}
    # the turns logs created first, keyed by their traces, moved to the conversation
    assert all(k.startswith("conv-") for k in keys), keys


def test_a_tool_answer_without_name_or_id_fills_the_span_it_names() -> None:
    """The operation-details output of a tool (its `tool_call_response` carrying no id) names
    neither tool nor call: only the span it belongs to joins it to its call."""
    tp, finished = capture()
    with tp.get_tracer("tests.agent").start_as_current_span("execute_tool lookup", attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}) as span:
        context = span.get_span_context()
    spans = to_request(finished.get_finished_spans())
    logs = ExportLogsServiceRequest()
    record = logs.resource_logs.add().scope_logs.add().log_records.add(
        event_name=DETAILS, time_unix_nano=span.start_time or 0,
        trace_id=context.trace_id.to_bytes(16, "big"), span_id=context.span_id.to_bytes(8, "big"))
    record.attributes.append(kv("gen_ai.output.messages", json.dumps(
        [{"role": "tool", "parts": [{"type": "tool_call_response", "response": "42"}]}])))
    from_logs, _ = read_logs(logs, ExtractOptions())
    assert [(c.name, c.call_id) for c in from_logs.calls] == [("", None)]
    assert trajectory([from_logs, extract(spans)]) == [
        [("lookup", None, {}, 42, None, 0, "ok", True)]]


@pytest.mark.parametrize("media", ["application/x-protobuf", "application/json"])
def test_a_capture_with_content_in_logs_is_stored_as_its_ground_truth(
        database_url: str, media: str) -> None:
    """ADK 2.x with content capture EVENT_ONLY (capture `adk_log_events`): its spans and its log
    records, posted as the OTLP/HTTP exporters send them (logs first, then spans), give over
    REST the calls the capture script made: names, the model's arguments, errors, steps, ids."""
    folder = CAPTURES / "adk_log_events"
    expected = json.loads((folder / "expected.json").read_text())
    suffix = "pb" if media.endswith("protobuf") else "json"
    with running_server(database_url) as server, server.client() as client:
        for signal, name in (("logs", "logs"), ("traces", "spans")):
            answer = client.post(f"/v1/{signal}", content=(folder / f"{name}.otlp.{suffix}")
                                 .read_bytes(), headers={"content-type": media})
            assert answer.status_code == 200, answer.text
        turns = len(expected["turns"])
        found = server.wait_for(
            f"/api/v1/conversations/{expected['conversation_id']}",
            lambda c: len(c["turns"]) == turns and all(
                c["tool_calls"][0]["arguments"] for c in c["turns"][:2] if c["tool_calls"]))
    keys = ("name", "arguments", "step", "call_id")
    got = [[{**{k: c[k] for k in keys}, "error": c["error"] is not None}
            for c in t["tool_calls"]] for t in found["turns"]]
    assert got == [[{**{k: c[k] for k in keys}, "error": c["error"]} for c in t["calls"]]
                   for t in expected["turns"]]
