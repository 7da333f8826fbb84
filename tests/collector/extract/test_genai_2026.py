"""The 2026 GenAI semantic conventions (`open-telemetry/semantic-conventions-genai`), on spans the
real OpenTelemetry SDK records and encodes, shaped as the convention pages describe them:

- docs/gen-ai/gen-ai-voice-agents.md: the turn container is an `invoke_agent` span ("A separate
  span kind for the turn container ... is not required"), with
  `gen_ai.agent.invocation.end_reason`; tool calls are `execute_tool` spans under it;
- docs/gen-ai/gen-ai-spans.md, docs/registry/attributes/gen-ai.md: `gen_ai.tool.call.arguments`,
  `gen_ai.tool.call.result`, `gen_ai.input.messages`, `gen_ai.output.messages` are `any`, "SHOULD
  be recorded in structured form" (a JSON string only where structure is not supported);
- docs/gen-ai/mcp.md: the MCP client span `tools/call {gen_ai.tool.name}` (`mcp.method.name`,
  `gen_ai.operation.name = execute_tool`, `mcp.session.id`), the server span under it, and the
  client span under an outer GenAI `execute_tool` span when both instrumentations run;
  `error.type = tool_error` when a `CallToolResult` has `isError: true`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import Span as SdkSpan
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer

from tests.server import Server, running_server
from tests.spans import capture, provider, to_request
from tooltrail.collector.extract import ExtractOptions, extract, reconcile
from tooltrail.collector.model import Batch, ToolCall

SESSION = "8267461134f24305af708e66b8eda71a"  # mcp.md's example `mcp.session.id`
ARGUMENTS = {"location": "San Francisco?", "date": "2025-10-01"}  # mcp.md's examples
RESULT = {"temperature_range": {"high": 75, "low": 60}, "conditions": "sunny"}


@contextmanager
def span(tracer: Tracer, name: str, attributes: dict[str, Any],
         kind: SpanKind = SpanKind.INTERNAL) -> Iterator[Any]:
    """A current SDK span that records maps and lists of maps as OTLP kvlist/array AnyValues.

    The Python SDK (1.44) still drops non-primitive span attributes, while its log records take
    them (`BoundedAttributes(extended_attributes=True)`) and its OTLP encoder encodes them for
    spans too; SDKs that record them on spans send exactly the AnyValues this produces."""
    with tracer.start_as_current_span(name, kind=kind) as current:
        assert isinstance(current, SdkSpan)
        current._attributes._extended_attributes = True  # see docstring
        current.set_attributes(attributes)
        yield current


def turn(tp: TracerProvider, conversation: str, *, outer_tool: bool, failed: bool = False,
         as_json: bool = False) -> str:
    """One turn as the pages draw it: `invoke_agent` > `chat` (requests `get-weather`) >
    [GenAI `execute_tool get-weather` >] MCP client `tools/call get-weather` > MCP server span.
    Returns the trace id."""
    tracer = tp.get_tracer("tests.genai2026")
    value = (lambda v: json.dumps(v)) if as_json else (lambda v: v)
    mcp = {"mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool",
           "gen_ai.tool.name": "get-weather", "jsonrpc.request.id": "3",
           "mcp.session.id": SESSION, "mcp.protocol.version": "2025-06-18",
           "network.transport": "pipe", "gen_ai.tool.call.arguments": value(ARGUMENTS)}
    # mcp.md: `error.type = tool_error` for `isError: true`; the result is recorded "if
    # execution was successful"; span status is left UNSET here on purpose.
    outcome = ({"error.type": "tool_error"} if failed
               else {"gen_ai.tool.call.result": value(RESULT)})
    with span(tracer, "invoke_agent weather-forecast-agent", {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "openai",
            "gen_ai.agent.name": "weather-forecast-agent",
            "gen_ai.conversation.id": conversation}) as root:
        with span(tracer, "chat gpt-4o", {
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                "gen_ai.input.messages": value([
                    {"role": "user", "parts": [{"type": "text", "content": "Weather?"}]}]),
                "gen_ai.output.messages": value([{
                    "role": "assistant", "finish_reason": "tool_call", "parts": [{
                        "type": "tool_call", "id": "call_1", "name": "get-weather",
                        "arguments": ARGUMENTS}]}]),
        }, SpanKind.CLIENT):
            pass
        with ExitStack() as stack:
            if outer_tool:
                stack.enter_context(span(tracer, "execute_tool get-weather", {
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get-weather",
                    "gen_ai.tool.call.id": "call_1", "gen_ai.tool.type": "extension",
                    "gen_ai.tool.call.arguments": value(ARGUMENTS)}))
            stack.enter_context(span(tracer, "tools/call get-weather", {**mcp, **outcome},
                                     SpanKind.CLIENT))
            stack.enter_context(span(tracer, "tools/call get-weather", {**mcp, **outcome},
                                     SpanKind.SERVER))
        root.set_attribute("gen_ai.agent.invocation.end_reason", "completed")
        return format(root.get_span_context().trace_id, "032x")


def run(**kwargs: Any) -> tuple[Batch, list[ToolCall], str]:
    tp, exporter = capture()
    trace_id = turn(tp, "conv-2026", **kwargs)
    request = to_request(exporter.get_finished_spans())
    batch = extract(request, ExtractOptions(conversation_keys=("mcp.session.id",)))
    return batch, reconcile(batch.calls), trace_id


def test_sdk_sends_structured_values_as_kvlist() -> None:
    """The fixture is what the tests claim: kvlist/array AnyValues on the wire, not JSON text."""
    tp, exporter = capture()
    turn(tp, "conv-2026", outer_tool=True)
    spans = [s for rs in to_request(exporter.get_finished_spans()).resource_spans
             for ss in rs.scope_spans for s in ss.spans]
    kinds = {(s.name, a.key): a.value.WhichOneof("value") for s in spans for a in s.attributes}
    assert kinds[("tools/call get-weather", "gen_ai.tool.call.arguments")] == "kvlist_value"
    assert kinds[("tools/call get-weather", "gen_ai.tool.call.result")] == "kvlist_value"
    assert kinds[("chat gpt-4o", "gen_ai.output.messages")] == "array_value"


@pytest.mark.parametrize("as_json", [False, True], ids=["structured", "json-string"])
def test_invoke_agent_turn_container_and_structured_values(as_json: bool) -> None:
    batch, calls, trace_id = run(outer_tool=False, as_json=as_json)
    (info,) = batch.traces
    assert (info.trace_id, info.has_agent_root, info.conversation_key) == (
        trace_id, True, "conv-2026")
    assert info.agents == frozenset({"weather-forecast-agent"})
    (call,) = calls  # the model's request, the MCP client span and the server span: one call
    assert (call.name, call.convention, call.call_id, call.status) == (
        "get-weather", "mcp", "call_1", "ok")
    assert call.arguments == ARGUMENTS and call.arguments_raw is None
    assert call.result == RESULT and call.executed


def test_mcp_client_span_under_outer_execute_tool_is_one_call() -> None:
    batch, calls, _ = run(outer_tool=True)
    (call,) = calls
    outer = next(c for c in batch.calls if c.executed and c.convention == "genai")
    assert call.span_id == outer.span_id  # the outer GenAI span is kept, the MCP ones folded
    assert (call.call_id, call.arguments, call.result, call.status) == (
        "call_1", ARGUMENTS, RESULT, "ok")  # the result comes from the MCP span


def test_mcp_span_under_a_renamed_tool_is_that_call_but_a_sub_agents_is_not() -> None:
    """Frameworks rename MCP tools for the model (a server prefix): the MCP client span right
    under the tool span is still its execution. Under a sub-agent run inside a tool, an MCP
    call is the sub-agent's own call and stays apart."""
    tp, exporter = capture()
    tracer = tp.get_tracer("tests.genai2026")
    mcp = {"mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool",
           "mcp.session.id": SESSION}
    renamed = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "weather_get-weather",
               "gen_ai.tool.call.id": "call_1", "gen_ai.tool.call.arguments": ARGUMENTS,
               "gen_ai.tool.call.result": RESULT}
    failed = {**mcp, "gen_ai.tool.name": "get-weather", "error.type": "tool_error"}
    expert = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "ask_expert"}
    agent = {"gen_ai.operation.name": "invoke_agent"}
    with span(tracer, "invoke_agent travel", agent):
        with (span(tracer, "execute_tool weather_get-weather", renamed),
              span(tracer, "tools/call get-weather", failed, SpanKind.CLIENT)):
            pass
        with (span(tracer, "execute_tool ask_expert", expert),
              span(tracer, "invoke_agent expert", agent),
              span(tracer, "tools/call search", {**mcp, "gen_ai.tool.name": "search"},
                   SpanKind.CLIENT)):
            pass
    calls = reconcile(extract(to_request(exporter.get_finished_spans())).calls)
    assert [(c.name, c.convention, c.status, c.error) for c in calls] == [
        ("weather_get-weather", "genai", "error", "tool_error"),
        ("ask_expert", "genai", "ok", None),
        ("search", "mcp", "ok", None),
    ]


@pytest.mark.parametrize("outer_tool", [False, True], ids=["mcp-only", "under-execute_tool"])
def test_tool_error_marks_a_failed_call_with_status_unset(outer_tool: bool) -> None:
    _, calls, _ = run(outer_tool=outer_tool, failed=True)
    (call,) = calls
    assert (call.status, call.error, call.result) == ("error", "tool_error", None)


def test_mcp_session_id_is_never_the_conversation_key() -> None:
    """Every MCP span carries `mcp.session.id` and it is even configured as a key (see `run`):
    the conversation is still `gen_ai.conversation.id`, or the trace when there is none."""
    batch, _, _ = run(outer_tool=False)
    assert batch.traces[0].conversation_key == "conv-2026"
    tp, exporter = capture()
    tracer = tp.get_tracer("tests.genai2026")
    with tracer.start_as_current_span("tools/call get-weather", kind=SpanKind.CLIENT, attributes={
            "mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get-weather", "mcp.session.id": SESSION}) as span:
        span.set_status(Status(StatusCode.OK))
    alone = extract(to_request(exporter.get_finished_spans()),
                    ExtractOptions(conversation_keys=("mcp.session.id",)))
    (info,) = alone.traces
    assert info.conversation_key == info.trace_id != SESSION


# --- end to end: the SDK's OTLP/HTTP exporter to a running server, read back over REST --------


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url) as s:
        yield s


def test_structured_mcp_turn_end_to_end(server: Server) -> None:
    tp = provider(OTLPSpanExporter(endpoint=f"{server.base_url}/v1/traces"))
    turn(tp, "g26-ok", outer_tool=True)
    turn(tp, "g26-ok", outer_tool=False, failed=True)
    tp.shutdown()
    body = server.wait_for("/api/v1/conversations/g26-ok",
                           lambda b: b["turn_count"] == 2
                           and all(t["tool_calls"] for t in b["turns"]))
    first, second = ([c for c in t["tool_calls"]] for t in body["turns"])
    assert [(c["name"], c["arguments"], c["result"], c["status"]) for c in first] == [
        ("get-weather", ARGUMENTS, RESULT, "ok")]
    assert [(c["name"], c["status"], c["error"]) for c in second] == [
        ("get-weather", "error", "tool_error")]
