"""Pure extraction: an OTLP request in, the tool calls and conversation/turn facts out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from collector.extract.conventions import convention_of
from collector.extract.fields import NotExtractable, build_call
from collector.extract.otlp import BadSpan, iter_spans, span_view
from collector.extract.traces import TraceAccumulator
from collector.model import Batch, RejectedSpan, ToolCall

__all__ = ["ExtractOptions", "extract", "is_plumbing"]

PLUMBING_NAMES = frozenset({"transfer_to_agent", "final_result"})


@dataclass(frozen=True, slots=True)
class ExtractOptions:
    """Knobs of extraction (from Settings)."""

    conversation_keys: Sequence[str] = ()
    keep_plumbing: bool = False


def is_plumbing(name: str) -> bool:
    """Framework plumbing that is not a tool the agent chose (CONVENTIONS.md)."""
    return name in PLUMBING_NAMES or name.startswith(("adk_", "transfer_to_"))


def extract(request: ExportTraceServiceRequest, options: ExtractOptions | None = None) -> Batch:
    """Turn one OTLP request into a Batch. Bad spans are rejected alone, with a reason."""
    options = options or ExtractOptions()
    calls: list[ToolCall] = []
    rejected: list[RejectedSpan] = []
    unextracted: list[RejectedSpan] = []
    traces: dict[str, TraceAccumulator] = {}
    count = 0
    for raw, resource, scope in iter_spans(request):
        count += 1
        try:
            span = span_view(raw, resource, scope)
        except BadSpan as exc:
            rejected.append(RejectedSpan(raw.trace_id.hex(), raw.span_id.hex(), raw.name, str(exc)))
            continue
        convention = convention_of(span)
        is_tool = False
        if convention is not None and span.name != "execute_tool (merged)":
            try:
                call = build_call(span, convention)
            except NotExtractable as exc:
                unextracted.append(RejectedSpan(span.trace_id, span.span_id, span.name, str(exc)))
            else:
                if options.keep_plumbing or not is_plumbing(call.name):
                    calls.append(call)
                    is_tool = True
        acc = traces.get(span.trace_id)
        if acc is None:
            acc = traces[span.trace_id] = TraceAccumulator(span.trace_id)
        acc.add(span, options.conversation_keys, is_tool)
    infos = tuple(acc.info() for acc in traces.values() if acc.relevant)
    return Batch(tuple(calls), infos, tuple(rejected), tuple(unextracted), count)
