"""Each convention's edge cases, on hand-built OTLP spans (the captures cover the common path)."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from tooltrail.collector.extract import ExtractOptions, extract, reconcile
from tooltrail.collector.extract.conventions import matches
from tooltrail.collector.model import Batch, ToolCall

TRACE = bytes(range(1, 17))


@dataclass
class S:
    """A span to build: ids are small integers, times are nanoseconds."""

    name: str
    attrs: dict[str, Any] = field(default_factory=dict)
    id: int = 1
    parent: int | None = None
    start: int = 0
    end: int = 10
    error: str | None = None
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    trace: bytes = TRACE
    scope: str = "tests"


def set_value(target: AnyValue, value: Any) -> None:
    if isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int):
        target.int_value = value
    elif isinstance(value, float):
        target.double_value = value
    elif isinstance(value, str):
        target.string_value = value
    elif isinstance(value, list):
        for item in value:
            set_value(target.array_value.values.add(), item)
    else:
        for key, item in value.items():
            kv = target.kvlist_value.values.add()
            kv.key = key
            set_value(kv.value, item)


def request(*spans: S, resource: dict[str, Any] | None = None) -> ExportTraceServiceRequest:
    out = ExportTraceServiceRequest()
    rs = out.resource_spans.add()
    for key, value in (resource or {"service.name": "svc"}).items():
        kv = rs.resource.attributes.add()
        kv.key = key
        set_value(kv.value, value)
    for s in spans:
        ss = rs.scope_spans.add()
        ss.scope.name = s.scope
        span = ss.spans.add()
        span.trace_id, span.span_id, span.name = s.trace, s.id.to_bytes(8, "big"), s.name
        if s.parent is not None:
            span.parent_span_id = s.parent.to_bytes(8, "big")
        span.start_time_unix_nano, span.end_time_unix_nano = s.start, s.end
        if s.error is not None:
            span.status.code = Status.STATUS_CODE_ERROR
            span.status.message = s.error
        for key, value in s.attrs.items():
            kv = span.attributes.add()
            kv.key = key
            set_value(kv.value, value)
        for name, attrs in s.events:
            event = span.events.add()
            event.name = name
            for key, value in attrs.items():
                kv = event.attributes.add()
                kv.key = key
                set_value(kv.value, value)
    return out


def root(**attrs: Any) -> S:
    return S("invoke_agent a", {"gen_ai.operation.name": "invoke_agent", **attrs}, id=1,
             start=0, end=1000)


def tool(name: str, sid: int, parent: int = 1, start: int = 10, end: int = 20, **attrs: Any) -> S:
    return S(f"execute_tool {name}", {"gen_ai.operation.name": "execute_tool",
                                      "gen_ai.tool.name": name, **attrs},
             id=sid, parent=parent, start=start, end=end)


def chat(sid: int, parts: list[dict[str, Any]], start: int = 5, end: int = 9) -> S:
    messages = [{"role": "assistant", "parts": parts}]
    return S("chat m", {"gen_ai.operation.name": "chat",
                        "gen_ai.output.messages": json.dumps(messages)},
             id=sid, parent=1, start=start, end=end)


def part(name: str, arguments: Any, call_id: str | None = None) -> dict[str, Any]:
    return {"type": "tool_call", "name": name, "arguments": arguments,
            **({"id": call_id} if call_id else {})}


def calls(batch: Batch) -> list[ToolCall]:
    """The reconciled calls of the batch's only turn."""
    (info,) = batch.traces
    return reconcile([c for c in batch.calls if c.trace_id == info.trace_id])


def one(batch: Batch) -> ToolCall:
    (call,) = calls(batch)
    return call


# --- values ------------------------------------------------------------------------------


def test_double_encoded_and_structured_arguments() -> None:
    inner = json.dumps({"city": "Paris"})
    c = one(extract(request(root(), tool("w", 2, **{"gen_ai.tool.call.arguments":
                                                     json.dumps(inner)}))))
    assert c.arguments == {"city": "Paris"} and c.arguments_raw is None
    kv = one(extract(request(root(), tool("w", 2, **{"gen_ai.tool.call.arguments":
                                                      {"city": "Paris", "n": [1, 2]}}))))
    assert kv.arguments == {"city": "Paris", "n": [1, 2]}


def test_a_call_keeps_the_span_attributes_but_those_it_was_read_from() -> None:
    """Arguments and result are the call's own fields: the attributes they were read from are
    not kept again beside it; the span's other attributes are, and the span's are untouched."""
    batch = extract(request(root(), tool("w", 2, **{
        "gen_ai.tool.call.arguments": '{"city": "Paris"}', "gen_ai.tool.call.result": '"sunny"',
        "input.value": '{"city": "Paris"}', "gen_ai.tool.call.id": "c1"})))
    (call,) = batch.calls
    assert (call.arguments, call.result) == ({"city": "Paris"}, "sunny")
    assert call.attributes == {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "w",
                               "gen_ai.tool.call.id": "c1"}


def test_truncated_json_kept_raw_and_python_repr_stays_text() -> None:
    c = one(extract(request(root(), tool("w", 2, **{"gen_ai.tool.call.arguments":
                                                     '{"city": "Par'}))))
    assert c.arguments == '{"city": "Par' and c.arguments_raw == '{"city": "Par'
    r = one(extract(request(root(), S("search", {"openinference.span.kind": "TOOL",
                                                 "input.value": "{'q': 'x'}"}, id=2, parent=1))))
    assert r.name == "search" and r.arguments == "{'q': 'x'}"


@pytest.mark.parametrize(("result", "expected", "failed"), [
    ('{"content": [{"type": "text", "text": "{\\"n\\": 1}"}]}', {"n": 1}, False),
    ('{"content": [{"type": "text", "text": "boom"}], "isError": true}', "boom", True),
    ('{"content": [{"type": "text", "text": "x"}], "structuredContent": {"n": 2}}',
     {"n": 2}, False),
    ('{"result": {"ok": true}}', {"ok": True}, False),
    ('{"result": "<not specified>"}', None, False),
    ('[{"text": "{\\"t\\": 18}"}]', {"t": 18}, False),  # Bedrock / Strands content blocks
    ('"\\"12:00\\""', "12:00", False),
])
def test_result_envelopes(result: str, expected: Any, failed: bool) -> None:
    c = one(extract(request(root(), tool("w", 2, **{"gen_ai.tool.call.result": result}))))
    assert c.result == expected and (c.error is not None) is failed


def test_langchain_tool_message_gives_result_call_id_and_error() -> None:
    message = {"type": "tool", "data": {"content": "no such city", "tool_call_id": "call_9",
                                        "status": "error"}}
    c = one(extract(request(root(), S("lookup", {
        "openinference.span.kind": "TOOL", "tool.name": "lookup", "input.value": "Atlantis",
        "output.value": json.dumps(message)}, id=2, parent=1))))
    assert (c.result, c.call_id, c.status) == ("no such city", "call_9", "error")


@pytest.mark.parametrize("placeholder", ["<not specified>", "unknown", ""])
def test_placeholder_call_ids_are_no_id_and_pair_by_arguments(placeholder: str) -> None:
    batch = extract(request(
        root(), chat(3, [part("fx", {"a": 1}, "call_fx")]),
        tool("fx", 2, **{"gen_ai.tool.call.id": placeholder, "gen_ai.tool.call.arguments":
                         '{"a": 1}'}, **{"error.type": "RuntimeError"}),
    ))
    c = one(batch)
    assert c.call_id == "call_fx" and c.executed and c.error == "RuntimeError"


@pytest.mark.parametrize("placeholder", ["__REDACTED__", "{}"])
def test_redacted_arguments_take_the_requested_ones(placeholder: str) -> None:
    batch = extract(request(
        root(), chat(3, [part("w", {"city": "Paris"}, "c1")]),
        tool("w", 2, **{"gen_ai.tool.call.id": "c1", "gen_ai.tool.call.arguments": placeholder}),
    ))
    assert one(batch).arguments == {"city": "Paris"}
    alone = one(extract(request(root(), tool("w", 2, **{"gen_ai.tool.call.arguments":
                                                         placeholder}))))
    assert alone.arguments == ({} if placeholder == "{}" else "__REDACTED__")  # stored as it came


# --- conventions ------------------------------------------------------------------------


def test_openinference_handoff_and_json_schema_parameters() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    batch = extract(request(
        S("agent", {"openinference.span.kind": "AGENT"}, id=1, end=100),
        S("handoff to billing", {"openinference.span.kind": "TOOL"}, id=2, parent=1),
        S("search", {"openinference.span.kind": "TOOL", "tool.name": "search",
                     "tool.parameters": json.dumps(schema)}, id=3, parent=1),
        S("crew_tool", {"openinference.span.kind": "TOOL",
                        "tool.parameters": json.dumps({"q": "x"})}, id=4, parent=1, start=30),
    ))
    got = [(c.name, c.arguments) for c in calls(batch)]
    assert got == [("search", {}), ("crew_tool", {"q": "x"})]


@pytest.mark.parametrize(("entity_input", "expected"), [
    ({"args": [], "kwargs": {"city": "Paris"}}, {"city": "Paris"}),
    ({"args": [{"city": "Paris"}], "kwargs": {}}, {"city": "Paris"}),
    ({"args": ["Paris"], "kwargs": {"units": "C"}}, {"args": ["Paris"], "units": "C"}),
    ({"inputs": {"city": "Paris"}}, {"city": "Paris"}),
])
def test_traceloop_entity_input_unwrapped(entity_input: Any, expected: Any) -> None:
    c = one(extract(request(
        S("wf", {"traceloop.span.kind": "workflow"}, id=1, end=100),
        S("get_weather.tool", {"traceloop.span.kind": "tool",
                               "traceloop.entity.input": json.dumps(entity_input),
                               "traceloop.entity.output": json.dumps({"output": 18})},
          id=2, parent=1),
    )))
    assert (c.name, c.arguments, c.result, c.convention) == ("get_weather", expected, 18,
                                                             "traceloop")


def test_traceloop_completion_requests_and_conversation_key_from_options() -> None:
    llm = S("openai.chat", {"llm.request.type": "chat", "traceloop.span.kind": "llm",
                            "gen_ai.completion.0.tool_calls.0.id": "c1",
                            "gen_ai.completion.0.tool_calls.0.name": "w",
                            "gen_ai.completion.0.tool_calls.0.arguments": '{"city": "Oslo"}',
                            "traceloop.association.properties.session_id": "sess-7"},
            id=3, parent=1, start=1, end=5)
    batch = extract(request(S("wf", {"traceloop.span.kind": "workflow"}, id=1, end=100), llm))
    c = one(batch)
    assert (c.name, c.arguments, c.call_id, c.executed) == ("w", {"city": "Oslo"}, "c1", False)
    assert batch.traces[0].conversation_key == "sess-7"
    no_keys = extract(request(S("wf", {"traceloop.span.kind": "workflow"}, id=1), llm),
                      ExtractOptions(conversation_keys=()))
    assert no_keys.traces[0].conversation_key == TRACE.hex()


def test_vercel_tool_call_and_requests() -> None:
    batch = extract(request(
        S("ai.generateText", {"ai.telemetry.metadata.sessionId": "s1"}, id=1, end=100),
        S("ai.generateText.doGenerate", {"ai.response.toolCalls": json.dumps(
            [{"toolCallId": "c1", "toolName": "w", "input": '{"city":"Rome"}'}])},
          id=2, parent=1, start=1, end=5),
        S("ai.toolCall", {"ai.toolCall.name": "w", "ai.toolCall.id": "c1",
                          "ai.toolCall.args": '{"city":"Rome"}', "ai.toolCall.result": "21"},
          id=3, parent=1, start=6, end=8),
    ))
    c = one(batch)
    assert (c.convention, c.arguments, c.result, c.step, c.executed) == (
        "vercel", {"city": "Rome"}, 21, 0, True)
    assert batch.traces[0].conversation_key == "s1" and batch.traces[0].has_agent_root


def test_pydantic_ai_legacy_running_tool_named_from_logfire_message() -> None:
    c = one(extract(request(root(), S("running tool", {
        "logfire.msg": "running tool: get_time", "tool_arguments": '{"city": "Rome"}',
        "tool_response": '"noon"'}, id=2, parent=1))))
    assert (c.name, c.arguments, c.result, c.convention) == (
        "get_time", {"city": "Rome"}, "noon", "pydantic_ai")


def test_semantic_kernel_style_genai_span() -> None:
    c = one(extract(request(root(), tool("Lights-change_state", 2, **{
        "gen_ai.tool.call.id": "call_1", "gen_ai.tool.call.arguments": '{"id": 1, "on": true}',
        "gen_ai.tool.call.result": '{"id": 1, "on": true}'}))))
    assert c.name == "Lights-change_state" and c.result == {"id": 1, "on": True}


def test_strands_events_carry_arguments_result_and_error() -> None:
    span = tool("fx", 2, **{"gen_ai.tool.call.id": "c1", "gen_ai.tool.status": "error"})
    span.events = [
        ("gen_ai.tool.message", {"role": "tool", "content": '{"a": 1}', "id": "c1"}),
        ("gen_ai.choice", {"message": json.dumps([{"text": "Error: RuntimeError - x"}]),
                           "id": "c1"}),
    ]
    c = one(extract(request(root(), span)))
    assert (c.arguments, c.result, c.status) == ({"a": 1}, "Error: RuntimeError - x", "error")


def test_semconv_choice_event_requests() -> None:
    message = {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "w", "arguments": '{"x": 1}'}}]}
    llm = S("chat m", {"gen_ai.operation.name": "chat"}, id=3, parent=1, start=1, end=5,
            events=[("gen_ai.choice", {"message": json.dumps(message)})])
    c = one(extract(request(root(), llm)))
    assert (c.name, c.arguments, c.call_id, c.executed) == ("w", {"x": 1}, "c1", False)


def test_mcp_client_and_server_spans_alone_are_one_call() -> None:
    batch = extract(request(
        root(),
        S("tools/call search", {"mcp.method.name": "tools/call"}, id=2, parent=1,
          start=10, end=40),
        S("tools/call search", {"mcp.method.name": "tools/call", "mcp.session.id": "transport",
                                "jsonrpc.request.id": "7"}, id=3, parent=2, start=15, end=30,
          error="tool failed"),
    ))
    c = one(batch)
    assert (c.name, c.convention, c.call_id, c.status) == ("search", "mcp", None, "error")
    assert batch.traces[0].conversation_key == TRACE.hex()  # mcp.session.id is no conversation


def test_agent_framework_execute_tool_with_child_tools_call_is_one_call() -> None:
    batch = extract(request(
        root(),
        tool("search", 2, start=10, end=40, **{"gen_ai.tool.call.id": "c1",
                                              "gen_ai.tool.call.arguments": '{"q": "a"}'}),
        S("tools/call search", {"mcp.method.name": "tools/call",
                                "gen_ai.tool.call.result": '{"content": [{"type": "text", '
                                                           '"text": "hit"}]}'},
          id=3, parent=2, start=12, end=30),
    ))
    c = one(batch)
    assert (c.span_id, c.arguments, c.result) == ((2).to_bytes(8, "big").hex(), {"q": "a"}, "hit")


def test_adk_merged_span_and_plumbing_filtered_unless_kept() -> None:
    spans = (
        root(),
        chat(9, [part("transfer_to_agent", {"agent_name": "b"}, "t1"), part("w", {}, "c1")]),
        tool("(merged tools)", 2, **{"gen_ai.tool.call.id": "event-uuid"}),
        tool("adk_request_confirmation", 3, start=21, end=22),
        tool("transfer_to_agent", 4, start=23, end=24, **{"gen_ai.tool.call.id": "t1"}),
        tool("w", 5, start=25, end=26, **{"gen_ai.tool.call.id": "c1"}),
    )
    spans[2].name = "execute_tool (merged)"
    assert [c.name for c in calls(extract(request(*spans)))] == ["w"]
    kept = calls(extract(request(*spans), ExtractOptions(keep_plumbing=True)))
    assert sorted(c.name for c in kept) == ["adk_request_confirmation", "transfer_to_agent", "w"]


def test_adk_legacy_invocation_root_without_attributes_is_a_turn() -> None:
    batch = extract(request(
        S("invocation", id=1, end=100, scope="gcp.vertex.agent"),
        S("invoke_agent a", {"gen_ai.operation.name": "invoke_agent",
                             "gen_ai.conversation.id": "s1"}, id=2, parent=1, start=1, end=90,
          scope="gcp.vertex.agent"),
    ))
    (info,) = batch.traces
    assert info.has_agent_root and info.conversation_key == "s1" and info.start_ns == 0


def test_conversation_key_from_resource_and_configurable_keys() -> None:
    batch = extract(request(root(), resource={"service.name": "s", "session.id": "res-1"}))
    assert batch.traces[0].conversation_key == "res-1"
    custom = extract(request(root(**{"app.thread": "t-9"})),
                     ExtractOptions(conversation_keys=("app.thread",)))
    assert custom.traces[0].conversation_key == "t-9"


# --- reconcile ----------------------------------------------------------------------------


def test_request_never_executed_is_kept_and_marked() -> None:
    batch = extract(request(
        root(), chat(3, [part("w", {"city": "A"}, "c1"), part("delete", {"id": 1}, "c2")]),
        tool("w", 2, **{"gen_ai.tool.call.id": "c1", "gen_ai.tool.call.arguments":
                        '{"city": "A"}'}),
    ))
    got = [(c.name, c.executed, c.step, c.status) for c in calls(batch)]
    assert got == [("w", True, 0, "ok"), ("delete", False, 0, "requested")]


def test_pairing_without_ids_by_arguments_then_order() -> None:
    batch = extract(request(
        root(),
        chat(3, [part("w", {"city": "A"}, "cA"), part("w", {"city": "B"}, "cB")]),
        tool("w", 2, start=10, end=12, **{"gen_ai.tool.call.arguments": '{"city": "B"}'}),
        tool("w", 4, start=11, end=13, **{"gen_ai.tool.call.arguments": '{"city": "A"}'}),
        chat(5, [part("w", {"city": "A"}, "cA2")], start=20, end=25),
        tool("w", 6, start=30, end=31, **{"gen_ai.tool.call.arguments": '{"city": "A"}'}),
    ))
    got = [(c.arguments["city"], c.call_id, c.step) for c in calls(batch)]
    assert got == [("A", "cA", 0), ("B", "cB", 0), ("A", "cA2", 1)]


def test_two_instrumentations_of_one_call_are_one_call_but_parallel_twins_stay_two() -> None:
    args = {"gen_ai.tool.call.arguments": '{"q": "x"}'}
    twice = extract(request(
        root(), S("agent2", {"openinference.span.kind": "AGENT"}, id=7, parent=1, end=100),
        tool("search", 2, start=10, end=20, **args),
        S("search", {"openinference.span.kind": "TOOL", "input.value": '{"q": "x"}',
                     "output.value": "hit"}, id=3, parent=7, start=11, end=19),
    ))
    (c,) = calls(twice)
    assert c.result == "hit" and c.convention == "genai"
    parallel = extract(request(root(), tool("search", 2, start=10, end=20, **args),
                               tool("search", 3, start=11, end=21, **args)))
    assert [(c.name, c.step) for c in calls(parallel)] == [("search", 0), ("search", 0)]


def test_steps_inferred_from_overlapping_siblings() -> None:
    batch = extract(request(
        root(), tool("a", 2, start=10, end=20), tool("b", 3, start=15, end=25),
        tool("c", 4, start=30, end=40),
    ))
    assert [(c.name, c.step) for c in calls(batch)] == [("a", 0), ("b", 0), ("c", 1)]


def test_requests_repeated_by_a_nested_llm_span_count_once() -> None:
    outer = S("call_llm", {"gcp.vertex.agent.llm_response": json.dumps(
        {"content": {"parts": [{"function_call": {"name": "w", "args": {"x": 1}}}]}})},
        id=3, parent=1, start=1, end=9)
    inner = chat(4, [part("w", {"x": 1})], start=2, end=8)
    inner.parent = 3
    got = calls(extract(request(root(), outer, inner)))
    assert [(c.name, c.executed) for c in got] == [("w", False)]


def test_openinference_tool_call_keys_on_a_tool_span() -> None:
    c = one(extract(request(root(), S("tool.search", {
        "openinference.span.kind": "TOOL", "tool_call.function.name": "search",
        "tool_call.id": "c7", "tool_call.function.arguments": '{"q": "x", "n": 2}',
        "input.value": "x"}, id=2, parent=1))))
    assert (c.name, c.call_id, c.arguments) == ("search", "c7", {"q": "x", "n": 2})


def test_request_without_captured_arguments_still_pairs_by_name() -> None:
    batch = extract(request(
        root(), chat(3, [{"type": "tool_call", "name": "w"}]),  # arguments dropped
        tool("w", 2, **{"gen_ai.tool.call.arguments": '{"city": "A"}'}),
    ))
    assert [(c.arguments, c.executed, c.step) for c in calls(batch)] == [({"city": "A"}, True, 0)]


def test_langgraph_tools_node_gives_call_id_and_uncollapsed_arguments() -> None:
    node_input = {"__type": "tool_call_with_context", "tool_call": {
        "name": "get_weather", "args": {"city": "Paris"}, "id": "call_w"}, "state": {}}
    c = one(extract(request(
        S("graph", {"openinference.span.kind": "CHAIN"}, id=1, end=100),
        S("tools", {"openinference.span.kind": "CHAIN", "input.value": json.dumps(node_input)},
          id=2, parent=1, start=10, end=30),
        S("get_weather", {"openinference.span.kind": "TOOL", "tool.name": "get_weather",
                          "input.value": "Paris"}, id=3, parent=2, start=12, end=20,
          error="RuntimeError('boom')"),
    )))
    assert (c.call_id, c.arguments, c.status) == ("call_w", {"city": "Paris"}, "error")


@pytest.mark.parametrize("output", [
    # CrewAI + OpenInference event-listener mode: the model's answer as a list of tool calls
    [{"id": "c1", "type": "function", "function": {"name": "w", "arguments": '{"city": "A"}'}}],
    # an assistant message, and a chat completion, carrying `tool_calls`
    {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "w", "arguments": {"city": "A"}}}]},
    {"choices": [{"message": {"role": "assistant", "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "w", "arguments": '{"city": "A"}'}}]}}]},
])
def test_openinference_llm_output_value_tool_calls_are_requests(output: Any) -> None:
    agent = S("crew.kickoff", {"openinference.span.kind": "AGENT"}, id=1, end=100)
    llm = S("m.llm_call", {"openinference.span.kind": "LLM", "output.value": json.dumps(output)},
            id=2, parent=1, start=1, end=5)
    executed = S("w.run", {"openinference.span.kind": "TOOL", "tool.name": "w",
                           "input.value": '{"city": "A"}'}, id=3, parent=1, start=6, end=9)
    (request_row,) = [c for c in extract(request(agent, llm)).calls]
    row = (request_row.name, request_row.call_id, request_row.arguments, request_row.convention)
    assert row == ("w", "c1", {"city": "A"}, "openinference.output.request")
    c = one(extract(request(agent, llm, executed)))  # no id on the tool span: paired by arguments
    assert (c.call_id, c.executed, c.step) == ("c1", True, 0)


def test_openinference_llm_output_value_that_is_no_tool_call_requests_nothing() -> None:
    for output in ("plain text answer", [{"role": "assistant", "content": "hi"}],
                   [{"name": "w", "arguments": "{}"}]):  # no `function` object: not a tool call
        llm = S("m.llm_call", {"openinference.span.kind": "LLM",
                               "output.value": output if isinstance(output, str)
                               else json.dumps(output)}, id=2, start=1, end=5)
        assert extract(request(llm)).calls == ()


# --- which convention claims a span ----------------------------------------------------------

# a user's entries of every shape a match takes, some claiming what a built-in claims after them
CLAIMING = """\
conventions:
  - name: by_value
    match: {attributes: {gen_ai.operation.name: execute_tool, gen_ai.tool.name: w}}
  - {name: by_number, match: {attributes: {n: 1}}}
  - {name: by_name, match: {span_name_is: "execute_tool x"}}
  - {name: by_regex, match: {span_name: '^chat'}}
  - {name: by_presence, match: {has_attributes: [acme.args]}}
  - {name: by_scope, match: {scope: tests.scope}}
  - name: by_either
    match: [{attributes: {openinference.span.kind: TOOL}, scope: other}, {span_name_is: GET}]
"""


def first_matching(span: Any, conventions: Sequence[Any]) -> Any:
    """The reference `Claims` must equal: every entry tried in order, the first that matches."""
    return next((c for c in conventions if matches(c.match, span)), None)


def test_claims_are_the_first_matching_entry_on_every_capture_and_corpus_span() -> None:
    """`Claims` (tried on the spans that can match) claims what the plain loop over every entry
    (`first_matching`) claims, in the entries' order, with the built-ins and a user's file."""
    from tests.collector.extract import extract_corpus as corpus
    from tooltrail.collector.extract.conventions import (
        CONVENTIONS,
        Claims,
        conventions_for,
    )
    from tooltrail.collector.extract.otlp import pure_span_views

    requests = [corpus.read_request(path) for path in corpus.capture_files()]
    requests += [corpus.request(random.Random(f"claims:{i}"))[0] for i in range(300)]
    requests.append(request(
        tool("w", 2), tool("x", 3), S("execute_tool x", {"n": 1}, id=4), S("GET", id=5),
        S("chat m", {"n": True}, id=6), S("s", {"acme.args": "{}"}, id=7, scope="tests.scope"),
        S("t", {"openinference.span.kind": "TOOL", "n": [1]}, id=8, scope="other"),
        S("u", id=9, scope="tests.scope")))
    views = [v for r in requests for v, _ in pure_span_views(r) if v is not None]
    for conventions in (CONVENTIONS, conventions_for(CLAIMING)):
        claim = Claims(conventions)
        claimed = [claim(v) for v in views]
        assert claimed == [first_matching(v, conventions) for v in views]
        assert len({c.name for c in claimed if c is not None}) >= (
            8 if conventions is CONVENTIONS else 15)  # every entry of each
