"""Tool-call content carried in span events rather than attributes.

Strands (default conventions) and GenAI semconv before 1.37 put content in events:
`gen_ai.tool.message` (`content` = the arguments, `id`) and `gen_ai.choice` (`message` = the
result, `id`) on the tool span; Strands with `gen_ai_latest_experimental` puts the messages in a
`gen_ai.client.inference.operation.details` event (`gen_ai.input.messages` /
`gen_ai.output.messages`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tooltrail.collector.extract.decoding import decode
from tooltrail.collector.extract.otlp import SpanView

TOOL_MESSAGE = "gen_ai.tool.message"
CHOICE = "gen_ai.choice"
DETAILS = "gen_ai.client.inference.operation.details"


def _event_value(span: SpanView, event: str, key: str) -> Any:
    for e in span.events:
        if e.name == event and e.attributes.get(key) is not None:
            return e.attributes[key]
    return None


def message_parts(span: SpanView, key: str) -> Iterator[dict[str, Any]]:
    """Every part of the messages under `key` in operation-details events."""
    for e in span.events:
        if e.name != DETAILS or key not in e.attributes:
            continue
        messages, _ = decode(e.attributes[key])
        for message in messages if isinstance(messages, list) else []:
            parts = message.get("parts") if isinstance(message, dict) else None
            for part in parts if isinstance(parts, list) else []:
                if isinstance(part, dict):
                    yield part


def event_arguments(span: SpanView) -> Any:
    """The arguments from `gen_ai.tool.message`, else an operation-details `tool_call` part."""
    value = _event_value(span, TOOL_MESSAGE, "content")
    if value is not None:
        return value
    for part in message_parts(span, "gen_ai.input.messages"):
        if part.get("type") == "tool_call" and part.get("arguments") is not None:
            return part["arguments"]
    return None


def event_result(span: SpanView) -> Any:
    """The result from `gen_ai.choice`, else an operation-details `tool_call_response` part."""
    value = _event_value(span, CHOICE, "message")
    if value is not None:
        return value
    for part in message_parts(span, "gen_ai.output.messages"):
        if part.get("type") == "tool_call_response":
            return part.get("response", part.get("result"))
    return None


def event_call_id(span: SpanView) -> Any:
    """The call id the content events carry."""
    for event in (TOOL_MESSAGE, CHOICE):
        value = _event_value(span, event, "id")
        if value is not None:
            return value
    for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
        for part in message_parts(span, key):
            if part.get("type") in ("tool_call", "tool_call_response") and part.get("id"):
                return part["id"]
    return None
