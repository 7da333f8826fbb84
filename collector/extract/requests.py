"""Tool calls a model *requested*, read from its LLM span (docs/conventions.md, "Each call once").

Sources, first that yields calls wins: GenAI `gen_ai.output.messages` `tool_call` parts (attribute
or operation-details event); OpenInference `llm.output_messages.{i}.message.tool_calls.{j}.*`, else
an OpenInference LLM span's `output.value` holding OpenAI-style tool calls (CrewAI's event-listener
mode puts the model's answer there as a list `[{"id", "type": "function", "function": {...}}]`);
older `gen_ai.completion.{i}.tool_calls.{j}.*` (OpenLLMetry); Vercel `ai.response.toolCalls`;
`gen_ai.choice` events (Strands `toolUse` blocks, pre-1.37 semconv `tool_calls`); ADK's legacy
`gcp.vertex.agent.llm_response` `function_call` parts; Mastra's tool-call `model_chunk` spans (the
one source that is not the LLM span itself: see `from_mastra_chunk`). Only LLM spans are read:
agent and event-loop spans repeat the same content as history.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from tooltrail.collector.extract import otlp
from tooltrail.collector.extract.decoding import as_arguments, clean_id, decode
from tooltrail.collector.extract.events import CHOICE, message_parts
from tooltrail.collector.extract.otlp import SpanView
from tooltrail.collector.model import ToolCall

LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "completion"})
OPENINFERENCE = re.compile(
    r"^llm\.output_messages\.(\d+)\.message\.tool_calls\.(\d+)\.tool_call\."
    r"(id|function\.name|function\.arguments)$"
)
COMPLETION = re.compile(
    r"^(?:gen_ai|llm)\.completions?\.(\d+)\.tool_calls\.(\d+)\.(id|name|arguments)$"
)


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs a call per field
class Requested:
    """One tool call as the model asked for it (read-only by contract)."""

    name: str
    call_id: str | None
    arguments: Any


MASTRA_CHUNK = "model_chunk"  # `mastra.span.type` of one streamed chunk of a model response


def _mastra_tool_chunk(span: SpanView) -> dict[str, Any] | None:
    """A Mastra tool-call chunk's `{"toolName", "toolCallId", "toolInput"}`, else None. The
    approval chunk Mastra emits for the same call (`args`, `resumeSchema`) is not a request."""
    if span.attributes.get("mastra.span.type") != MASTRA_CHUNK or span.parent_span_id is None:
        return None
    chunk, _ = decode(span.attributes.get("mastra.model_chunk.output"))
    if isinstance(chunk, dict) and "toolInput" in chunk and chunk.get("toolName"):
        return chunk
    return None


def is_llm_span(span: SpanView) -> bool:
    """True for spans that record one model response (or, for Mastra, one tool call of it)."""
    attrs = span.attributes
    operation = attrs.get("gen_ai.operation.name")
    if isinstance(operation, str) and operation in LLM_OPERATIONS:  # a list or map is no name
        return True
    if _mastra_tool_chunk(span) is not None:
        return True
    if attrs.get("openinference.span.kind") == "LLM" or attrs.get("traceloop.span.kind") == "llm":
        return True
    if span.name.endswith((".doGenerate", ".doStream")):
        return True
    return span.name == "call_llm" and "gcp.vertex.agent.llm_response" in attrs


def _semconv_messages(messages: Any) -> list[Requested]:
    out: list[Requested] = []
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        for part in message.get("parts") or []:
            if isinstance(part, dict) and part.get("type") == "tool_call":
                out.append(_requested(part.get("name"), part.get("id"), _arguments(part)))
        out.extend(_openai_tool_calls(message.get("tool_calls")))
    return [r for r in out if r.name]


def _openai_tool_calls(calls: Any) -> list[Requested]:
    out = []
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, dict):
            inner = call.get("function")
            function: dict[str, Any] = inner if isinstance(inner, dict) else call
            out.append(_requested(function.get("name"), call.get("id"), _arguments(function)))
    return out


def _arguments(holder: dict[str, Any], key: str = "arguments") -> Any:
    """`holder[key]`: missing is None (no arguments recorded), JSON null is the text "null"
    (decoded to null by as_arguments), so that the two stay apart."""
    value = holder.get(key)
    return "null" if value is None and key in holder else value


def _requested(name: Any, call_id: Any, arguments: Any) -> Requested:
    text = str(name) if name is not None else ""
    return Requested(text if text.strip() else "", clean_id(call_id), arguments)


def from_output_messages(span: SpanView) -> list[Requested]:
    value = span.attributes.get("gen_ai.output.messages")
    if value is not None:
        return _semconv_messages(decode(value)[0])
    out = [
        _requested(p.get("name"), p.get("id"), _arguments(p))
        for p in message_parts(span, "gen_ai.output.messages")
        if p.get("type") == "tool_call"
    ]
    return [r for r in out if r.name]


def _flattened(
    span: SpanView, prefixes: tuple[str, ...], pattern: re.Pattern[str], names: dict[str, str]
) -> list[Requested]:
    found: dict[tuple[int, int], dict[str, Any]] = {}
    for key, value in span.attributes.items():
        match = pattern.match(key) if key.startswith(prefixes) and ".tool_calls." in key else None
        if match:
            slot = found.setdefault((int(match.group(1)), int(match.group(2))), {})
            slot[names.get(match.group(3), match.group(3))] = value
    ordered = [found[slot] for slot in sorted(found)]
    out = [_requested(f.get("name"), f.get("id"), f.get("arguments")) for f in ordered]
    return [r for r in out if r.name]


def from_openinference(span: SpanView) -> list[Requested]:
    names = {"function.name": "name", "function.arguments": "arguments"}
    return _flattened(span, ("llm.output_messages.",), OPENINFERENCE, names)


def from_openinference_output(span: SpanView) -> list[Requested]:
    """OpenAI-style tool calls in an OpenInference LLM span's `output.value`: a list of them, an
    assistant message with `tool_calls`, or a chat completion's `choices[i].message.tool_calls`."""
    if span.attributes.get("openinference.span.kind") != "LLM":
        return []
    value, _ = decode(span.attributes.get("output.value"))
    calls: list[Any] = []
    if isinstance(value, dict):
        choices = value.get("choices")
        messages = (
            [c.get("message") for c in choices if isinstance(c, dict)]
            if isinstance(choices, list) else [value]
        )
        for message in messages:
            found = message.get("tool_calls") if isinstance(message, dict) else None
            calls.extend(found if isinstance(found, list) else [])
    elif isinstance(value, list):
        calls = value
    functions = [c for c in calls if isinstance(c, dict) and isinstance(c.get("function"), dict)]
    return [r for r in _openai_tool_calls(functions) if r.name]


def from_completions(span: SpanView) -> list[Requested]:
    return _flattened(span, ("gen_ai.completion", "llm.completion"), COMPLETION, {})


def from_vercel(span: SpanView) -> list[Requested]:
    calls, _ = decode(span.attributes.get("ai.response.toolCalls"))
    out = []
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, dict):
            arguments = call.get("input", call.get("args"))
            out.append(_requested(call.get("toolName"), call.get("toolCallId"), arguments))
    return [r for r in out if r.name]


def from_choice_events(span: SpanView) -> list[Requested]:
    out: list[Requested] = []
    for event in span.events:
        if event.name != CHOICE:
            continue
        message, _ = decode(event.attributes.get("message"))
        if isinstance(message, list):
            for block in message:
                use = block.get("toolUse") if isinstance(block, dict) else None
                if isinstance(use, dict):
                    out.append(_requested(use.get("name"), use.get("toolUseId"), use.get("input")))
        elif isinstance(message, dict):
            out.extend(_openai_tool_calls(message.get("tool_calls")))
        out.extend(_openai_tool_calls(decode(event.attributes.get("tool_calls"))[0]))
    return [r for r in out if r.name]


def from_adk_response(span: SpanView) -> list[Requested]:
    response, _ = decode(span.attributes.get("gcp.vertex.agent.llm_response"))
    content = response.get("content") if isinstance(response, dict) else None
    parts = content.get("parts") if isinstance(content, dict) else None
    out = []
    for part in parts if isinstance(parts, list) else []:
        call = part.get("function_call") if isinstance(part, dict) else None
        if isinstance(call, dict):
            out.append(_requested(call.get("name"), call.get("id"), call.get("args")))
    return [r for r in out if r.name]


def from_langsmith(span: SpanView) -> list[Requested]:
    """LangSmith's OTel export: `gen_ai.completion` is the LangChain `LLMResult`, each
    generation's serialized AIMessage holding its `tool_calls` (name, args, id)."""
    result, _ = decode(span.attributes.get("gen_ai.completion"))
    generations = result.get("generations") if isinstance(result, dict) else None
    out = []
    for group in generations if isinstance(generations, list) else []:
        for generation in group if isinstance(group, list) else []:
            message = generation.get("message") if isinstance(generation, dict) else None
            kwargs = message.get("kwargs") if isinstance(message, dict) else None
            calls = kwargs.get("tool_calls") if isinstance(kwargs, dict) else None
            for call in calls if isinstance(calls, list) else []:
                if isinstance(call, dict):
                    out.append(_requested(call.get("name"), call.get("id"), call.get("args")))
    return [r for r in out if r.name]


def from_mastra_chunk(span: SpanView) -> list[Requested]:
    """@mastra/otel-exporter 1.4: the `chat` span's `gen_ai.output.messages` hold only the text;
    each requested call is a child `model_chunk` span of it (capture `tests/captures/mastra_otel`).
    Its row is filed under the parent `chat` span (`request_rows`), so that the calls of one
    response stay one step."""
    chunk = _mastra_tool_chunk(span)
    if chunk is None:
        return []
    return [_requested(chunk.get("toolName"), chunk.get("toolCallId"), chunk.get("toolInput"))]


SOURCES: tuple[tuple[str, Callable[[SpanView], list[Requested]]], ...] = (
    ("genai", from_output_messages),
    ("openinference", from_openinference),
    ("openinference.output", from_openinference_output),
    ("traceloop", from_completions),
    ("vercel", from_vercel),
    ("genai.events", from_choice_events),
    ("adk", from_adk_response),
    ("mastra", from_mastra_chunk),
    ("langsmith", from_langsmith),
)


def requested_calls(span: SpanView) -> tuple[str, list[Requested]]:
    """(source, calls) of an LLM span; ("", []) when it requested nothing."""
    return llm_requested_calls(span) if is_llm_span(span) else ("", [])


def llm_requested_calls(span: SpanView) -> tuple[str, list[Requested]]:
    """`requested_calls` of a span `is_llm_span` holds for (not tested again)."""
    for source, read in SOURCES:
        calls = read(span)
        if calls:
            return source, calls
    return "", []


def request_rows(span: SpanView, source: str, calls: Iterable[Requested]) -> list[ToolCall]:
    """Requested calls as not-executed ToolCall rows: span id `{llm span}#{j}`, parent the LLM span.

    They are paired with their executions at read time (`reconcile`), because request and
    execution may arrive in different OTLP requests.
    """
    llm_span, first = span.span_id, 0
    if source == "mastra" and span.parent_span_id is not None:
        # one chunk span per call: the row goes under the response (`chat`) span, numbered in
        # the order of the chunks (start time; the span id's low bits keep equal times apart)
        llm_span, first = span.parent_span_id, span.start_ns * 65536 + int(span.span_id[-4:], 16)
    rows = []
    name = span.name
    for j, call in enumerate(calls, start=first):
        arguments, raw = as_arguments(call.arguments)
        # every field, positional, in ToolCall's order (`otlp.tool_call`); not executed
        rows.append(otlp.tool_call(
            span.trace_id, f"{llm_span}#{j}", llm_span, call.name, call.call_id, arguments, raw,
            None, None, "requested", span.start_ns, span.end_ns, f"{source}.request",
            {"llm.span.name": name}, None, False, "otel"))
    return rows
