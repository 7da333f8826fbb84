"""Reading a tool call's fields from a span, first present key wins (CONVENTIONS.md, "Fields")."""

from __future__ import annotations

from typing import Any

from collector.extract.conventions import Convention
from collector.extract.otlp import SpanView
from collector.extract.values import as_arguments, clean_id, unwrap_result
from collector.model import ToolCall

NAME_KEYS = ("gen_ai.tool.name", "tool.name", "ai.toolCall.name", "traceloop.entity.name")
CALL_ID_KEYS = ("gen_ai.tool.call.id", "tool.id", "ai.toolCall.id")
ARGUMENT_KEYS = (
    "gen_ai.tool.call.arguments",
    "tool_arguments",
    "ai.toolCall.args",
    "gcp.vertex.agent.tool_call_args",
    "input.value",
)
RESULT_KEYS = (
    "gen_ai.tool.call.result",
    "tool_response",
    "ai.toolCall.result",
    "gcp.vertex.agent.tool_response",
    "output.value",
)


class NotExtractable(ValueError):
    """A span that looks like a tool call but cannot be turned into one."""


def first(attributes: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The value of the first key present (and not None) in `attributes`."""
    for key in keys:
        value = attributes.get(key)
        if value is not None:
            return value
    return None


def tool_name(span: SpanView, convention: Convention) -> str:
    """The tool's name from attributes, else parsed from the span name."""
    value = first(span.attributes, NAME_KEYS)
    if isinstance(value, str) and value.strip():
        return value.strip()
    prefix = convention.span_name_prefix
    if prefix and span.name.startswith(prefix) and span.name[len(prefix) :].strip():
        return span.name[len(prefix) :].strip()
    raise NotExtractable(f"tool span {span.name!r} carries no tool name")


def error_of(span: SpanView, envelope_error: bool) -> str | None:
    """An error message when the call failed, else None."""
    exception = next((e for e in span.events if e.name == "exception"), None)
    failed = (
        span.status_error
        or "error.type" in span.attributes
        or span.attributes.get("gen_ai.tool.status") == "error"
        or envelope_error
        or exception is not None
    )
    if not failed:
        return None
    if exception is not None:
        message = exception.attributes.get("exception.message")
        kind = exception.attributes.get("exception.type")
        if message or kind:
            return ": ".join(str(x) for x in (kind, message) if x)
    return span.status_message or str(span.attributes.get("error.type") or "error")


def build_call(span: SpanView, convention: Convention) -> ToolCall:
    """The ToolCall a tool span encodes; raises NotExtractable when it has no name."""
    arguments, arguments_raw = as_arguments(first(span.attributes, ARGUMENT_KEYS))
    raw_result = first(span.attributes, RESULT_KEYS)
    result, envelope_error = unwrap_result(raw_result) if raw_result is not None else (None, False)
    error = error_of(span, envelope_error)
    return ToolCall(
        trace_id=span.trace_id,
        span_id=span.span_id,
        parent_span_id=span.parent_span_id,
        name=tool_name(span, convention),
        call_id=clean_id(first(span.attributes, CALL_ID_KEYS)),
        arguments=arguments,
        arguments_raw=arguments_raw,
        result=result,
        error=error,
        status="error" if error is not None else "ok",
        start_ns=span.start_ns,
        end_ns=span.end_ns,
        convention=convention.name,
        attributes=span.attributes,
    )
