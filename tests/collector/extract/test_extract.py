"""Extraction of GenAI-semconv tool calls from spans made by the real OTel SDK."""

from __future__ import annotations

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.spans import ToolStep, agent_turn, capture, to_request
from tooltrail.collector.extract import ExtractOptions, extract
from tooltrail.collector.model import KEY_FROM_ROOT, KEY_FROM_TRACE


def test_tool_calls_fields_and_conversation_from_root() -> None:
    tp, spans = capture()
    trace_id = agent_turn(tp, "conv-1", [
        ToolStep("lookup_order", {"order_id": 42}, {"status": "late"}, call_id="c1"),
        ToolStep("issue_refund", {"amount": 19.99}, raises="card declined"),
    ])
    batch = extract(to_request(spans.get_finished_spans()))
    assert [c.name for c in batch.calls] == ["lookup_order", "issue_refund"]
    first, second = batch.calls
    assert first.arguments == {"order_id": 42} and first.result == {"status": "late"}
    assert first.call_id == "c1" and first.error is None and first.status == "ok"
    assert first.trace_id == trace_id and first.convention == "genai"
    assert second.error == "RuntimeError: card declined" and second.status == "error"
    (info,) = batch.traces
    assert info.conversation_key == "conv-1" and info.key_rank == KEY_FROM_ROOT
    assert info.turn_key == trace_id and info.has_agent_root
    assert info.agents == frozenset({"support"}) and info.service == "support-agent"
    assert batch.rejected == () and batch.span_count == 4


def test_agent_that_called_nothing_is_still_a_turn() -> None:
    tp, spans = capture()
    agent_turn(tp, "conv-quiet", [])
    batch = extract(to_request(spans.get_finished_spans()))
    assert batch.calls == ()
    (info,) = batch.traces
    assert info.conversation_key == "conv-quiet" and info.has_agent_root


def test_a_lone_create_agent_span_is_no_turn() -> None:
    """GenAI `create_agent` sets an agent up and runs nothing: a trace of only that span (AutoGen
    AgentChat's agent constructor) is no turn, while a root of another GenAI operation is one."""
    tp, spans = capture()
    tracer = tp.get_tracer("tests.agent")
    with tracer.start_as_current_span("create_agent support", attributes={
            "gen_ai.operation.name": "create_agent", "gen_ai.agent.name": "support"}):
        pass
    with tracer.start_as_current_span("chat model", attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted"}) as chat:
        pass
    trace_id = agent_turn(tp, None, [ToolStep("search", {"q": "x"}, [])])
    traces = extract(to_request(spans.get_finished_spans())).traces
    assert sorted(t.trace_id for t in traces) == sorted(
        [trace_id, format(chat.get_span_context().trace_id, "032x")])


def test_without_conversation_id_the_trace_is_the_conversation() -> None:
    tp, spans = capture()
    trace_id = agent_turn(tp, None, [ToolStep("search", {"q": "x"}, [])])
    (info,) = extract(to_request(spans.get_finished_spans())).traces
    assert info.conversation_key == trace_id and info.key_rank == KEY_FROM_TRACE


def test_child_before_root_keyed_by_trace_then_root_outranks() -> None:
    tp, spans = capture()
    agent_turn(tp, "conv-late-root", [ToolStep("search", {"q": "x"}, [])])
    finished = spans.get_finished_spans()
    tools = [s for s in finished if s.name.startswith("execute_tool")]
    roots = [s for s in finished if s.parent is None]
    early = extract(to_request(tools))
    late = extract(to_request(roots))
    assert early.traces[0].key_rank == KEY_FROM_TRACE
    assert late.traces[0].conversation_key == "conv-late-root"
    assert late.traces[0].key_rank > early.traces[0].key_rank


def test_plumbing_filtered_unless_kept() -> None:
    tp, spans = capture()
    agent_turn(tp, "c", [ToolStep("transfer_to_agent", {"agent_name": "b"}, None),
                         ToolStep("adk_request_confirmation", {}, None),
                         ToolStep("final_result", {"x": 1}, None),
                         ToolStep("search", {}, [])])
    request = to_request(spans.get_finished_spans())
    assert [c.name for c in extract(request).calls] == ["search"]
    kept = extract(request, ExtractOptions(keep_plumbing=True))
    assert len(kept.calls) == 4


def test_bad_span_ids_rejected_alone() -> None:
    tp, spans = capture()
    agent_turn(tp, "c", [ToolStep("search", {}, [])])
    request = to_request(spans.get_finished_spans())
    bad = request.resource_spans[0].scope_spans[0].spans.add()
    bad.name = "execute_tool broken"
    bad.trace_id = b"\x01" * 15
    bad.span_id = b"\x02" * 8
    zero = request.resource_spans[0].scope_spans[0].spans.add()
    zero.trace_id = b"\x00" * 16
    zero.span_id = b"\x03" * 8
    batch = extract(request)
    assert [c.name for c in batch.calls] == ["search"]
    assert sorted(r.reason for r in batch.rejected) == [
        "trace_id is all zeros", "trace_id must be 16 bytes, got 15"]


def test_tool_span_without_name_is_unextracted_not_silent() -> None:
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"\x01" * 16, b"\x02" * 8, "execute_tool"
    kv = span.attributes.add()
    kv.key, kv.value.string_value = "gen_ai.operation.name", "execute_tool"
    batch = extract(request)
    assert batch.calls == () and batch.rejected == ()
    reasons = [u.reason for u in batch.unextracted]
    assert reasons == ["tool span 'execute_tool' carries no tool name"]


def test_arguments_decoding() -> None:
    from tooltrail.collector.extract.decoding import as_arguments, unwrap_result

    assert as_arguments('{"a": 1}') == ({"a": 1}, None)
    assert as_arguments('"{\\"a\\": 1}"') == ({"a": 1}, None)  # double-encoded
    assert as_arguments('{"a": 1') == ('{"a": 1', '{"a": 1')  # truncated: raw kept
    assert as_arguments(None) == ({}, None)
    assert as_arguments("Paris") == ("Paris", None)
    assert unwrap_result('{"result": {"ok": true}}') == ({"ok": True}, False)
    mcp = '{"content": [{"type": "text", "text": "boom"}], "isError": true}'
    assert unwrap_result(mcp) == ("boom", True)
    assert unwrap_result('{"content": [], "structuredContent": {"n": 2}}') == ({"n": 2}, False)


def test_a_list_or_map_where_a_name_belongs_is_no_name() -> None:
    """`gen_ai.operation.name` / `traceloop.span.kind` sent as an array or kvlist: the span is
    read as if it carried none (this used to raise, and ingest then refused the whole trace)."""
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue

    tp, spans = capture()
    agent_turn(tp, "odd-names", [ToolStep("lookup", {"q": "x"}, {"ok": True})])
    request = to_request(spans.get_finished_spans())
    odd = AnyValue(array_value=ArrayValue(values=[AnyValue(string_value="chat")]))
    for span in request.resource_spans[0].scope_spans[0].spans:
        if not span.name.startswith("execute_tool"):
            for kv in span.attributes:
                if kv.key == "gen_ai.operation.name":
                    kv.value.CopyFrom(odd)
            span.attributes.append(KeyValue(key="traceloop.span.kind", value=odd))
    batch = extract(request)
    assert [c.name for c in batch.calls] == ["lookup"] and batch.rejected == ()
    assert batch.traces[0].conversation_key == "odd-names"
