"""How each producer marks a span as a tool execution (CONVENTIONS.md, "Is this span a tool
execution?"). Each convention is one entry; the first whose `detect` holds claims the span."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from collector.extract.otlp import SpanView


@dataclass(frozen=True, slots=True)
class Convention:
    """A family of producers that encode tool calls the same way."""

    name: str
    detect: Callable[[SpanView], bool]
    span_name_prefix: str = ""  # the tool name follows this prefix in the span name


def _genai(span: SpanView) -> bool:
    return span.attributes.get("gen_ai.operation.name") == "execute_tool"


CONVENTIONS: tuple[Convention, ...] = (
    Convention("genai", _genai, span_name_prefix="execute_tool "),
)


def convention_of(span: SpanView) -> Convention | None:
    """The first convention that claims the span as a tool execution, if any."""
    for convention in CONVENTIONS:
        if convention.detect(span):
            return convention
    return None
