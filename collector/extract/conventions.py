"""How each producer marks a span as a tool execution (docs/conventions.md, "Is this span a tool
execution?"). Each convention is one entry; the first whose `detect` holds claims the span.

MCP comes first only so that MCP spans are labelled `mcp` (they also set the GenAI operation);
every other entry follows the document's order.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from collector.extract.otlp import SpanView


@dataclass(frozen=True, slots=True)
class Convention:
    """A family of producers that encode tool calls the same way."""

    name: str
    detect: Callable[[SpanView], bool]
    span_name: re.Pattern[str] | None = None  # group 1 of a match is the tool name
    name_is_tool: bool = False  # OpenInference: the span name is the tool's name


def _mcp(span: SpanView) -> bool:
    return span.attributes.get("mcp.method.name") == "tools/call"


def _genai(span: SpanView) -> bool:
    return span.attributes.get("gen_ai.operation.name") == "execute_tool"


def _openinference(span: SpanView) -> bool:
    return span.attributes.get("openinference.span.kind") == "TOOL" and not span.name.startswith(
        "handoff to "
    )


def _traceloop(span: SpanView) -> bool:
    return span.attributes.get("traceloop.span.kind") == "tool"


def _vercel(span: SpanView) -> bool:
    return span.name == "ai.toolCall" or span.attributes.get("ai.operationId") == "ai.toolCall"


def _pydantic_ai(span: SpanView) -> bool:
    return span.name == "running tool"


CONVENTIONS: tuple[Convention, ...] = (
    Convention("mcp", _mcp, re.compile(r"tools/call\s+(\S+)\s*$")),
    Convention("genai", _genai, re.compile(r"^execute_tool\s+(.+)$")),
    Convention("openinference", _openinference, name_is_tool=True),
    Convention("traceloop", _traceloop, re.compile(r"^(.+)\.(?:tool|run)$")),
    Convention("vercel", _vercel),
    Convention("pydantic_ai", _pydantic_ai),
)

# Span names that are never a tool the agent chose, whatever their attributes say.
SKIPPED_SPANS = {
    "execute_tool (merged)": "ADK summary of parallel calls (`execute_tool (merged)`)",
}
SKIPPED_TOOL_NAMES = {"(merged tools)": "ADK summary of parallel calls (`(merged tools)`)"}


def convention_of(span: SpanView) -> Convention | None:
    """The first convention that claims the span as a tool execution, if any."""
    for convention in CONVENTIONS:
        if convention.detect(span):
            return convention
    return None


def skipped(span: SpanView) -> str | None:
    """Why a span that looks like a tool call is a framework summary, not a call (else None)."""
    reason = SKIPPED_SPANS.get(span.name)
    if reason is None:
        reason = SKIPPED_TOOL_NAMES.get(str(span.attributes.get("gen_ai.tool.name")))
    return reason
