"""Reading a tool call's fields from a span, first present key wins (docs/conventions.md, "Fields").

Each key may have an adapter that reads its value or says "absent" (None): a JSON Schema in
`tool.parameters` is not arguments, `traceloop.entity.input` is unwrapped, a placeholder call id
is no id. Span events are the last resort (Strands, pre-1.37 semconv).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tooltrail.collector.extract import otlp
from tooltrail.collector.extract.approvals import PENDING, REJECTED, approval_status, waiting_span
from tooltrail.collector.extract.conventions import Convention, beside, builtin
from tooltrail.collector.extract.decoding import (
    as_arguments,
    clean_id,
    decode,
    is_placeholder,
    langchain_tool_message,
    unwrap_result,
)
from tooltrail.collector.extract.events import event_arguments, event_call_id, event_result
from tooltrail.collector.extract.otlp import SpanView
from tooltrail.collector.model import ToolCall

Adapter = Callable[[Any], Any]

PEEK = 200  # LangGraph's `tools` node input starts with its `tool_call`
MAX_NAME = 1024  # characters of a tool name: a longer one is refused, never cut
LOGFIRE_MESSAGE = re.compile(r"^running tool:\s*(.+)$")


class NotExtractable(ValueError):
    """A span that looks like a tool call but cannot be turned into one."""


def _present(value: Any) -> Any:
    return None if is_placeholder(value) else value


def _present_or_null(value: Any) -> Any:
    """Arguments: JSON `null` is a value (kept as null), other placeholders are absent."""
    return value if isinstance(value, str) and value.strip() == "null" else _present(value)


def _not_schema(value: Any) -> Any:
    decoded, _ = decode(value)
    if isinstance(decoded, dict) and (
        "$schema" in decoded or ("properties" in decoded and decoded.get("type") == "object")
    ):
        return None
    return _present(value)


def _traceloop_input(value: Any) -> Any:
    """`{"args": [...], "kwargs": {...}}` or `{"inputs": x}` → the arguments themselves."""
    decoded, _ = decode(value)
    if not isinstance(decoded, dict):
        return _present(value)
    if set(decoded) == {"inputs"}:
        return decoded["inputs"]
    if decoded and set(decoded) <= {"args", "kwargs"}:
        args = decoded.get("args") or []
        kwargs = decoded.get("kwargs") or {}
        if not args:
            return kwargs
        if len(args) == 1 and isinstance(args[0], dict) and not kwargs:
            return args[0]
        return {"args": args, **kwargs} if isinstance(kwargs, dict) else decoded
    return decoded


ADAPTERS: dict[str, Adapter] = {
    "present": _present, "present_or_null": _present_or_null, "not_schema": _not_schema,
    "traceloop_input": _traceloop_input,
}


def _keys(spec: list[Any]) -> tuple[str, ...]:
    return tuple(str(k) for k in spec)


# The shared field lists of builtin_conventions.yaml (docs/conventions.md, "Fields"), in order.
# OpenInference's own `tool_call.*` keys, which some of its instrumentations put on TOOL spans,
# come after the documented keys, except that the precise `tool_call.function.arguments` comes
# before the sometimes collapsed `input.value`.
_FIELDS: dict[str, list[Any]] = builtin()[1]["fields"]
NAME_KEYS = _keys(_FIELDS["tool_name"])
CALL_ID_KEYS = _keys(_FIELDS["call_id"])
SPAN_NAME_PATTERNS = tuple(re.compile(p) for p in _FIELDS["tool_name_from_span"])
ARGUMENT_KEYS: tuple[tuple[str, Adapter], ...] = tuple(
    (e["attribute"], ADAPTERS[e["adapter"]]) for e in _FIELDS["arguments"])
RESULT_KEYS = _keys(_FIELDS["result"])


def first(attributes: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The value of the first key present (and not None) in `attributes`."""
    for key in keys:
        value = attributes.get(key)
        if value is not None:
            return value
    return None


def tool_name(span: SpanView, convention: Convention) -> str:
    """The tool's name: an attribute's value as sent, else parsed from the span name."""
    name = _parsed_name(span, convention)
    if len(name) > MAX_NAME:
        raise NotExtractable(f"tool name is {len(name)} characters; at most {MAX_NAME} are "
                             "stored")
    return name


def _parsed_name(span: SpanView, convention: Convention) -> str:
    if convention.fields or convention.name_pattern:  # a user's entry: its own fields first
        own = _user_name(span, convention)
        if own:
            return own
    value = first(span.attributes, NAME_KEYS)
    if isinstance(value, str) and value.strip():
        return value
    patterns = (convention.span_name, *SPAN_NAME_PATTERNS) if convention.span_name else (
        SPAN_NAME_PATTERNS
    )
    for pattern in patterns:
        match = pattern.search(span.name)
        if match and match.group(1).strip():
            return match.group(1).strip()
    message = span.attributes.get("logfire.msg")
    match = LOGFIRE_MESSAGE.match(message) if isinstance(message, str) else None
    if match:
        return match.group(1).strip()
    if convention.name_is_tool and span.name.strip():
        return span.name.strip()
    raise NotExtractable(f"tool span {span.name!r} carries no tool name")


def _user_name(span: SpanView, convention: Convention) -> str | None:
    where = convention.source("tool_name")
    value = where.read(span.attributes) if where is not None else None
    if isinstance(value, str) and value.strip():
        return value
    match = convention.name_pattern.search(span.name) if convention.name_pattern else None
    return match.group(1).strip() if match and match.group(1) else None


def _own(span: SpanView, convention: Convention | None, field: str) -> Any:
    """A user's entry's value of `field` (None when it names none or it is absent)."""
    if convention is None or not convention.fields:
        return None
    where = convention.source(field)
    return None if where is None else _present(where.read(span.attributes))


def arguments_of(span: SpanView, convention: Convention | None = None) -> Any:
    """The raw arguments value (the convention's own source, first present key, else the span
    events), or None."""
    own = _own(span, convention, "arguments")
    if own is not None:
        return own
    for key, adapter in ARGUMENT_KEYS:
        value = span.attributes.get(key)
        if value is not None:
            value = adapter(value)
            if value is not None:
                return value
    return event_arguments(span)


def result_of(span: SpanView, convention: Convention | None = None) -> tuple[Any, bool, bool]:
    """(result, envelope says error, a result was present) from the convention's own source,
    the attributes, else events."""
    own = _own(span, convention, "result")
    if own is not None:
        result, is_error = unwrap_result(own)
        if result is not None or is_error:
            return result, is_error, True
    for key in RESULT_KEYS:
        value = span.attributes.get(key)
        if value is not None:
            result, is_error = unwrap_result(value)
            if result is not None or is_error:
                return result, is_error, True
    value = event_result(span)
    if value is None:
        return None, False, False
    result, is_error = unwrap_result(value)
    return result, is_error, result is not None


def call_id_of(span: SpanView, convention: Convention | None = None) -> str | None:
    """The call id: the convention's own source, attributes, else span events, else a LangChain
    ToolMessage output."""
    own = clean_id(_own(span, convention, "call_id"))
    if own is not None:
        return own
    for key in CALL_ID_KEYS:
        found = clean_id(span.attributes.get(key))
        if found is not None:
            return found
    found = clean_id(event_call_id(span))
    if found is not None:
        return found
    message = langchain_tool_message(decode(span.attributes.get("output.value"))[0])
    return clean_id(message.get("tool_call_id")) if message else None


# The tracer of @ai-sdk/otel's `OpenTelemetry` (AI SDK 7): its `execute_tool` span has
# `gen_ai.tool.call.result` only when the call succeeded, and a failed call always has its
# `exception` event (ai 7 docs, "GenAI tool call spans"). OpenInference's span processor for it
# (@arizeai/openinference-vercel 3.2.1) gives every span that ends after a failed one in the
# trace status ERROR with that failure's message (it tests `span.parentSpanId`, which OTel JS 2.x
# spans no longer have, so each span passes for the root): that status is not the call's own.
AI_SDK_SCOPE = "gen_ai"


def _own_status_error(span: SpanView, exception: Any) -> bool:
    if span.scope == AI_SDK_SCOPE and exception is None:
        return span.status_error and "gen_ai.tool.call.result" not in span.attributes
    return span.status_error


def _own_error(span: SpanView, convention: Convention | None) -> str | None:
    """A user's error attribute: present and not false or empty means failed, with its text."""
    value = _own(span, convention, "error")
    if value is None or value is False or (isinstance(value, str) and not value.strip()):
        return None
    if value is True:
        return "error"
    text = value if isinstance(value, str) else str(value)
    return text.strip().splitlines()[0] if text.strip() else "error"


def error_of(span: SpanView, envelope_error: bool,
             convention: Convention | None = None) -> str | None:
    """An error message when the call failed, else None."""
    own = _own_error(span, convention)
    if own is not None:
        return own
    exception = next((e for e in span.events if e.name == "exception"), None) if (
        span.events) else None  # most spans have no events: no generator for them
    failed = (
        _own_status_error(span, exception)
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
    text = span.status_message.strip().splitlines()[0] if span.status_message.strip() else ""
    return text or str(span.attributes.get("error.type") or "error")


def parent_tool_call(parent: SpanView | None, name: str) -> dict[str, Any] | None:
    """LangGraph's `tools` node input for this tool: `{"tool_call": {"name", "args", "id"}}`
    (`create_react_agent`'s `Send`), or a list of such tool calls (langchain 1.x
    `create_agent`'s `Send`, `[{"name", "args", "id", "type": "tool_call"}]`); the one call of
    that name, None when there are several."""
    text = parent.attributes.get("input.value") if parent is not None else None
    if not isinstance(text, str) or not (
            '"tool_call"' in text[:PEEK] or text.startswith('[{"name": ')):
        return None  # not a `tools` node: do not parse a whole graph state
    value = decode(text)[0]
    calls = [value.get("tool_call")] if isinstance(value, dict) else (
        value if isinstance(value, list) else [])
    mine = [c for c in calls if isinstance(c, dict) and c.get("name") == name]
    return mine[0] if len(mine) == 1 else None


def build_call(span: SpanView, convention: Convention, parent: SpanView | None = None) -> ToolCall:
    """The ToolCall a tool span encodes; raises NotExtractable when it has no name.

    `parent` (the span's parent, when in the same request) may supply a call id and the
    uncollapsed arguments (LangGraph's `tools` node).
    """
    name = tool_name(span, convention)
    arguments, arguments_raw = as_arguments(arguments_of(span, convention))
    result, envelope_error, _ = result_of(span, convention)
    call_id = call_id_of(span, convention)
    hint = parent_tool_call(parent, name)
    if hint is not None:
        call_id = call_id or clean_id(hint.get("id"))
        if not isinstance(arguments, dict) and isinstance(hint.get("args"), dict):
            arguments, arguments_raw = hint["args"], None
    approval = approval_status(result, span.scope)
    error = None if approval == PENDING else error_of(span, envelope_error, convention)
    failed = error is not None
    if approval is None and waiting_span(convention.name, span.scope, span.attributes, failed):
        approval = PENDING
    if approval == REJECTED:
        error = f"rejected: {error}" if error else "rejected"
    # every field, positional, in ToolCall's order (`otlp.tool_call`)
    return otlp.tool_call(
        span.trace_id, span.span_id, span.parent_span_id, name, call_id, arguments,
        arguments_raw, result, error, approval or ("error" if error is not None else "ok"),
        span.start_ns, span.end_ns, convention.name, beside(span.attributes), None, True, "otel")
