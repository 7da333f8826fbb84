"""A seeded random corpus of OTLP trace requests, and a canonical text of what extraction makes
of each, for differential runs of `collector.extract`.

Only `collector.extract.extract`, `ExtractOptions` and `collector.extract_report.read_request`
are used, so the same corpus runs against any version of the extraction: the differential
test compares this tree's outcomes with digests of the outcomes of the implementation it
replaced, and

    python -m tests.collector.extract.extract_corpus --requests 3000 --out outcomes.txt

writes every outcome in full (one line per request) for a line-by-line comparison with
another checkout (`cd <checkout> && PYTHONPATH=<checkout>:<this tree> python -m …`).

Requests are drawn from what the conventions read (docs/conventions.md): the keys and span
names of every tool, LLM and agent convention, conversation keys on spans and resources, JSON
arguments, results and messages (valid, invalid, double-encoded, deep), placeholders, bad ids
and times, duplicate keys, NUL characters, non-finite doubles, nested arrays and kvlists (past
the depth limit too), span events, and unrelated attributes. Each request draws from its own
`random.Random` (seed and index), so requests do not shift when the generator grows at the end.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from tooltrail.collector.extract import ExtractOptions, extract
from tooltrail.collector.receivers.codec import JSON, PROTOBUF, decode_body

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
TOOLS = ("get_weather", "search", "lookup", "transfer_to_billing", "final_result",
         "adk_request_confirmation", "(merged tools)", " spaced ", "")
SCOPES = ("gcp.vertex.agent", "opentelemetry.instrumentation.genai.openai_agents",
          "openinference.instrumentation.openai_agents", "tests.agent", "")
EXTRA_KEYS = ("app.session", "traceloop.association.properties.session_id",
              "ai.telemetry.metadata.sessionId", "mcp.session.id")
CONVERSATION_KEYS = ("gen_ai.conversation.id", "session.id", "gcp.vertex.agent.session_id",
                     "langfuse.session.id", *EXTRA_KEYS, "thread_id", "chat.id")
PLAIN_KEYS = ("gen_ai.request.model", "gen_ai.usage.input_tokens", "gen_ai.system",
              "gen_ai.input.messages", "gen_ai.input.extra", "llm.model_name",
              "llm.input_messages.0.message.content", "input.mime_type", "http.method",
              "user.id", "app.note", "gen_ai.tool.type", "logfire.msg_template")
SPAN_NAMES = ("execute_tool get_weather", "execute_tool", "execute_tool (merged)",
              "tools/call search", "tools/call", "search.tool", "lookup.run", "ai.toolCall",
              "running tool", "handoff to billing", "invocation", "call_llm", "chat gpt-4o",
              "ai.generateText", "ai.generateText.doGenerate", "ai.streamText.doStream",
              "Agent workflow", "Agent Workflow", "invoke_agent support", "get_weather",
              "LangGraph", "tools", "", " ", "ai.streamText")
TEXTS = ("", " ", "N/A", "none", "null", "<not specified>", "unknown", "[REDACTED]",
         "__REDACTED__", "Paris", "a\x00b", "\x00", "héllo", "日本", "true", "42", "-1.5",
         "{", "[1,", "not json", "call_1", "error", "tools/call", "1e400", "NaN")


def _json_value(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if depth > 2 or r < 0.6:
        return rng.choice((1, 0, -7, 2.5, 1.0, 0.1, True, False, None, "Paris", "", "x\u00e9",
                           "a\x00b", 2**70))
    if r < 0.8:
        return [_json_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(("city", "q", "n", "id", "text", "type")): _json_value(rng, depth + 1)
            for _ in range(rng.randrange(4))}


def _dumps(rng: random.Random, value: Any) -> str:
    """`value` as JSON text, sometimes double-encoded, broken, padded, non-finite or deep."""
    r = rng.random()
    text = json.dumps(value)
    if r < 0.06:
        return json.dumps(text)  # double-encoded
    if r < 0.1:
        return text[: max(1, len(text) // 2)]  # cut short: not JSON
    if r < 0.13:
        return rng.choice(('{"x": NaN}', '{"x": Infinity, "y": -Infinity}', '[1e400]',
                           '{"n": 123456789012345678901234567890}', '{"a": 1, "a": 2}'))
    if r < 0.15:
        depth = rng.choice((63, 64, 65, 80))
        return "[" * depth + "1" + "]" * depth
    if r < 0.2:
        return f"  {text}\n"
    return text


def _arguments(rng: random.Random) -> Any:
    r = rng.random()
    if r < 0.5:
        return _dumps(rng, {"city": rng.choice(("Paris", "Berlin", "")), "n": rng.randrange(3)})
    if r < 0.6:
        return _dumps(rng, {"args": [{"city": "Paris"}], "kwargs": {}})
    if r < 0.65:
        return _dumps(rng, {"inputs": {"q": "x"}})
    if r < 0.7:
        return _dumps(rng, {"type": "object", "properties": {"city": {"type": "string"}}})
    if r < 0.8:
        return rng.choice(TEXTS)
    return _dumps(rng, _json_value(rng))


def _result(rng: random.Random) -> Any:
    r = rng.random()
    if r < 0.15:
        return _dumps(rng, {"content": [{"type": "text", "text": rng.choice(('{"t": 1}', "ok"))}],
                            "isError": rng.random() < 0.3})
    if r < 0.2:
        return _dumps(rng, {"content": [], "structuredContent": {"t": 2}})
    if r < 0.25:
        return _dumps(rng, {"type": "tool", "data": {"content": "4", "status": "error",
                                                     "tool_call_id": "call_9"}})
    if r < 0.3:
        return _dumps(rng, [{"text": "a"}, {"text": "b"}])
    if r < 0.35:
        return _dumps(rng, [{"json": {"k": 1}}])
    if r < 0.42:
        return _dumps(rng, {rng.choice(("result", "output", "response")): _json_value(rng)})
    if r < 0.47:
        return _dumps(rng, {"error": rng.choice((
            "This tool call requires confirmation, please approve or reject.",
            "This tool call is rejected.", "other"))})
    if r < 0.6:
        return rng.choice(TEXTS)
    return _dumps(rng, _json_value(rng))


def _tool_call_part(rng: random.Random, j: int) -> dict[str, Any]:
    part: dict[str, Any] = {"type": rng.choice(("tool_call", "tool_call", "text")),
                            "name": rng.choice(TOOLS), "id": rng.choice((f"call_{j}", "", None))}
    if rng.random() < 0.8:
        part["arguments"] = rng.choice(({"city": "Paris"}, None, "{\"q\": 1}", "text"))
    return part


def _messages(rng: random.Random) -> str:
    messages = [{"role": "assistant",
                 "parts": [_tool_call_part(rng, j) for j in range(rng.randrange(4))]}]
    if rng.random() < 0.3:
        messages.append({"role": "assistant", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": rng.choice(TOOLS),
                                                           "arguments": "{}"}}]})
    return _dumps(rng, messages)


def _openai_calls(rng: random.Random) -> Any:
    calls = [{"id": f"call_{j}", "type": "function",
              "function": {"name": rng.choice(TOOLS), "arguments": "{\"city\": \"Paris\"}"}}
             for j in range(rng.randrange(3))]
    shape = rng.randrange(3)
    if shape == 0:
        return calls
    if shape == 1:
        return {"role": "assistant", "tool_calls": calls}
    return {"choices": [{"message": {"tool_calls": calls}}]}


def _any(rng: random.Random, depth: int = 0) -> AnyValue:
    """A random AnyValue of any kind, nested arrays and kvlists included."""
    value = AnyValue()
    k = rng.randrange(12)
    if k == 0:
        return value  # no value set
    if k in (1, 2):
        value.string_value = rng.choice(TEXTS)
    elif k == 3:
        value.bool_value = rng.random() < 0.5
    elif k == 4:
        value.int_value = rng.choice((0, 1, -(2**63), 2**63 - 1, 42))
    elif k == 5:
        value.double_value = rng.choice((0.5, -0.0, 1e308, math.inf, -math.inf, math.nan, 3.0))
    elif k == 6:
        value.bytes_value = rng.randbytes(rng.randrange(4))
    elif k in (7, 8) and depth < 4:
        for _ in range(rng.randrange(4)):
            value.array_value.values.append(_any(rng, depth + 1))
    elif k in (9, 10) and depth < 4:
        for _ in range(rng.randrange(4)):
            value.kvlist_value.values.append(
                KeyValue(key=rng.choice(("a", "b", "a\x00")), value=_any(rng, depth + 1)))
    elif k == 11 and depth == 0:
        deep = inner = AnyValue()
        for _ in range(rng.choice((31, 32, 33, 40))):
            inner = inner.array_value.values.add() if rng.random() < 0.5 else (
                inner.kvlist_value.values.add(key="k").value)
        inner.string_value = rng.choice(("leaf", "x\x00"))
        return deep
    else:
        value.string_value = rng.choice(TEXTS)
    return value


def _put(attrs: Any, key: str, value: Any) -> None:
    kv = attrs.add()
    kv.key = key
    if isinstance(value, AnyValue):
        kv.value.CopyFrom(value)
    elif isinstance(value, bool):
        kv.value.bool_value = value
    elif isinstance(value, int):
        kv.value.int_value = value
    elif isinstance(value, float):
        kv.value.double_value = value
    elif isinstance(value, str):
        kv.value.string_value = value
    else:
        raise TypeError(type(value))


def _tool_attributes(rng: random.Random) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    kind = rng.randrange(8)
    if kind == 0:
        out.append(("mcp.method.name", rng.choice(("tools/call", "tools/list"))))
    elif kind == 1:
        out.append(("gen_ai.operation.name", "execute_tool"))
    elif kind == 2:
        out.append(("openinference.span.kind", "TOOL"))
    elif kind == 3:
        out.append(("traceloop.span.kind", "tool"))
    elif kind == 4:
        out.append(("ai.operationId", "ai.toolCall"))
    for key in ("gen_ai.tool.name", "tool.name", "ai.toolCall.name", "traceloop.entity.name",
                "tool_call.function.name"):
        if rng.random() < 0.3:
            out.append((key, rng.choice((*TOOLS, "x" * 1100))))
    for key in ("gen_ai.tool.call.id", "tool.id", "ai.toolCall.id", "tool_call.id"):
        if rng.random() < 0.15:
            out.append((key, rng.choice(("call_1", "call_2", "", "none", " call_3 "))))
    for key in ("gen_ai.tool.call.arguments", "tool_arguments", "ai.toolCall.args",
                "gcp.vertex.agent.tool_call_args", "tool_call.function.arguments", "input.value",
                "tool.parameters", "traceloop.entity.input"):
        if rng.random() < 0.15:
            out.append((key, _arguments(rng)))
    if rng.random() < 0.1:
        out.append(("input.value", _dumps(rng, {"tool_call": {"name": rng.choice(TOOLS),
                                                              "args": {"city": "Rome"},
                                                              "id": "call_lg"}})))
    for key in ("gen_ai.tool.call.result", "tool_response", "ai.toolCall.result",
                "gcp.vertex.agent.tool_response", "output.value", "traceloop.entity.output"):
        if rng.random() < 0.15:
            out.append((key, _result(rng)))
    if rng.random() < 0.1:
        out.append(("error.type", rng.choice(("TimeoutError", ""))))
    if rng.random() < 0.1:
        out.append(("gen_ai.tool.status", rng.choice(("error", "ok"))))
    if rng.random() < 0.1:
        out.append(("logfire.msg", rng.choice(("running tool: search", "running tool:", "x"))))
    return out


def _llm_attributes(rng: random.Random) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    kind = rng.randrange(5)
    if kind == 0:
        out.append(("gen_ai.operation.name", rng.choice(("chat", "text_completion",
                                                         "generate_content", "completion"))))
    elif kind == 1:
        out.append(("openinference.span.kind", "LLM"))
    elif kind == 2:
        out.append(("traceloop.span.kind", "llm"))
    if rng.random() < 0.4:
        out.append(("gen_ai.output.messages", _messages(rng)))
    if rng.random() < 0.3:
        for j in range(rng.randrange(1, 4)):
            i = rng.randrange(2)
            prefix = f"llm.output_messages.{i}.message.tool_calls.{j}.tool_call."
            out.append((prefix + "function.name", rng.choice(TOOLS)))
            if rng.random() < 0.8:
                out.append((prefix + "function.arguments", _arguments(rng)))
            if rng.random() < 0.7:
                out.append((prefix + "id", f"call_{j}"))
    if rng.random() < 0.2:
        out.append(("output.value", _dumps(rng, _openai_calls(rng))))
    if rng.random() < 0.2:
        for j in range(rng.randrange(1, 3)):
            prefix = rng.choice(("gen_ai.completion", "gen_ai.completions", "llm.completion"))
            out.append((f"{prefix}.0.tool_calls.{j}.name", rng.choice(TOOLS)))
            out.append((f"{prefix}.0.tool_calls.{j}.arguments", _arguments(rng)))
            out.append((f"{prefix}.0.tool_calls.{j}.id", f"call_{j}"))
    if rng.random() < 0.15:
        out.append(("ai.response.toolCalls", _dumps(rng, [
            {"toolName": rng.choice(TOOLS), "toolCallId": "v1", "input": {"a": 1}},
            {"toolName": "search", "args": "{}"}])))
    if rng.random() < 0.15:
        out.append(("gcp.vertex.agent.llm_response", _dumps(rng, {"content": {"parts": [
            {"function_call": {"name": rng.choice(TOOLS), "id": "adk-1", "args": {"x": 1}}},
            {"text": "hi"}]}})))
    return out


def _agent_attributes(rng: random.Random) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    kind = rng.randrange(4)
    if kind == 0:
        out.append(("gen_ai.operation.name", rng.choice(("invoke_agent", "invoke_workflow"))))
    elif kind == 1:
        out.append(("openinference.span.kind", "AGENT"))
    elif kind == 2:
        out.append(("traceloop.span.kind", rng.choice(("workflow", "agent", "task"))))
    if rng.random() < 0.5:
        out.append(("gen_ai.agent.name", rng.choice(("support", "billing", "", 7))))
    return out


def _key_value(rng: random.Random) -> Any:
    return rng.choice(("conv-1", "conv-2", " ", "", 42, 0, True, "k\x00ey", "x" * 1030,
                       "日本" * 200, AnyValue(array_value={"values": [{"string_value": "a"}]})))


def _attributes(rng: random.Random, kind: int) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    if kind == 0:
        out += _tool_attributes(rng)
    elif kind == 1:
        out += _llm_attributes(rng)
    elif kind == 2:
        out += _agent_attributes(rng)
    elif kind == 3:
        out += _tool_attributes(rng) + _llm_attributes(rng) + _agent_attributes(rng)
    for _ in range(rng.randrange(3) if rng.random() < 0.5 else 0):
        out.append((rng.choice(CONVERSATION_KEYS), _key_value(rng)))
    for _ in range(rng.randrange(6)):
        out.append((rng.choice(PLAIN_KEYS), _any(rng) if rng.random() < 0.5 else
                    rng.choice(TEXTS)))
    if rng.random() < 0.05:
        out.append(("k\x00" + rng.choice(PLAIN_KEYS), "v"))
    if out and rng.random() < 0.08:
        out.append((rng.choice(out)[0], _any(rng)))  # a duplicate key: the last wins
    if rng.random() < 0.3:
        rng.shuffle(out)
    return out


def _events(rng: random.Random, span: Span, start: int) -> None:
    for _ in range(rng.randrange(4) if rng.random() < 0.3 else 0):
        event = span.events.add()
        event.time_unix_nano = start + rng.randrange(1000)
        event.name = rng.choice(("exception", "gen_ai.tool.message", "gen_ai.choice",
                                 "gen_ai.client.inference.operation.details", "log", ""))
        if event.name == "exception":
            for key in ("exception.message", "exception.type"):
                if rng.random() < 0.7:
                    _put(event.attributes, key, rng.choice(("boom", "", "ValueError")))
        elif event.name == "gen_ai.tool.message":
            _put(event.attributes, "content", _arguments(rng))
            if rng.random() < 0.5:
                _put(event.attributes, "id", rng.choice(("ev-1", "", "none")))
        elif event.name == "gen_ai.choice":
            message = rng.choice((
                [{"toolUse": {"name": rng.choice(TOOLS), "toolUseId": "tu1", "input": {}}}],
                {"tool_calls": _openai_calls(rng) if rng.random() < 0.5 else []},
                [{"text": "result text"}], "plain"))
            _put(event.attributes, "message", _dumps(rng, message))
            if rng.random() < 0.3:
                _put(event.attributes, "tool_calls", _dumps(rng, [
                    {"id": "c2", "function": {"name": "lookup", "arguments": "{}"}}]))
            if rng.random() < 0.5:
                _put(event.attributes, "id", "ev-2")
        elif event.name == "gen_ai.client.inference.operation.details":
            for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
                if rng.random() < 0.6:
                    parts = [rng.choice((
                        {"type": "tool_call", "name": rng.choice(TOOLS), "id": "d1",
                         "arguments": {"q": 1}},
                        {"type": "tool_call_response", "id": "d1", "response": "ok"},
                        {"type": "tool_call_response", "result": {"r": 1}},
                        {"type": "text", "content": "x"})) for _ in range(rng.randrange(3))]
                    _put(event.attributes, key, _dumps(rng, [{"role": "x", "parts": parts}]))
        for key, value in _attributes(rng, 4)[: rng.randrange(3)]:
            _put(event.attributes, key, value)


def _id(rng: random.Random, size: int) -> bytes:
    r = rng.random()
    if r < 0.015:
        return bytes(size)  # all zeros: rejected
    if r < 0.03:
        return rng.randbytes(rng.choice((0, size - 1, size + 1)))  # bad length: rejected
    return rng.randbytes(size)


def request(rng: random.Random) -> tuple[ExportTraceServiceRequest, ExtractOptions]:
    """One random request and the options to extract it with."""
    req = ExportTraceServiceRequest()
    traces = [_id(rng, 16) for _ in range(rng.randrange(1, 5))]
    span_ids: dict[bytes, list[bytes]] = {t: [] for t in traces}
    for _ in range(rng.randrange(1, 4)):
        rs = req.resource_spans.add()
        if rng.random() < 0.8:
            _put(rs.resource.attributes, "service.name", rng.choice(("agent", "", "svc\x00")))
        for _ in range(rng.randrange(3)):
            _put(rs.resource.attributes, rng.choice(CONVERSATION_KEYS + PLAIN_KEYS),
                 _key_value(rng) if rng.random() < 0.5 else _any(rng))
        for _ in range(rng.randrange(1, 3)):
            ss = rs.scope_spans.add()
            ss.scope.name = rng.choice(SCOPES)
            for _ in range(rng.randrange(1, 9)):
                _span(rng, ss.spans.add(), traces, span_ids)
    return req, _options(rng)


def _span(rng: random.Random, span: Span, traces: list[bytes],
          span_ids: dict[bytes, list[bytes]]) -> None:
    trace = rng.choice(traces)
    span.trace_id = trace
    span.span_id = _id(rng, 8)
    known = span_ids[trace]
    r = rng.random()
    if r < 0.6:
        if known:
            span.parent_span_id = rng.choice(known)
    elif r < 0.65:
        span.parent_span_id = rng.randbytes(rng.choice((8, 4)))
    elif r < 0.68:
        span.parent_span_id = bytes(8)
    if len(span.span_id) == 8:
        known.append(span.span_id)
    span.name = rng.choice(SPAN_NAMES) if rng.random() < 0.9 else rng.choice(TEXTS)
    start = rng.randrange(1, 2**62) if rng.random() < 0.98 else 2**63 + 5
    span.start_time_unix_nano = start
    end = start + rng.randrange(-1000, 10**9)
    span.end_time_unix_nano = max(0, end) if rng.random() < 0.99 else 2**64 - 1
    kind = rng.randrange(6)
    for key, value in _attributes(rng, kind):
        _put(span.attributes, key, value)
    if rng.random() < 0.15:
        span.status.code = Status.STATUS_CODE_ERROR
        span.status.message = rng.choice(("", "boom\nline 2", "  ", "bad\x00"))
    _events(rng, span, start)


def _options(rng: random.Random) -> ExtractOptions:
    extra = tuple(k for k in EXTRA_KEYS if rng.random() < 0.3)
    if rng.random() < 0.5:
        return ExtractOptions(keep_plumbing=rng.random() < 0.3,
                              **({"conversation_keys": extra} if extra else {}))
    return ExtractOptions()


def canonical(value: Any) -> Any:
    """A JSON-ready form of an extraction outcome: dataclasses as dicts of their fields, sets
    sorted (their order is the interpreter's), floats as their repr (exact, and the same on
    every Python version). Dict key order is kept: it is the order the spans carried."""
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return {"float": repr(value)}
    if isinstance(value, dict):
        return {"dict": [[canonical(k), canonical(v)] for k, v in value.items()]}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    if isinstance(value, frozenset | set):
        return {"set": sorted(json.dumps(canonical(v)) for v in value)}
    slots = getattr(type(value), "__slots__", None)
    if slots is not None:
        return {"type": type(value).__name__,
                **{name: canonical(getattr(value, name)) for name in slots}}
    raise TypeError(f"no canonical form for {type(value).__name__}")


def outcome(req: ExportTraceServiceRequest, options: ExtractOptions) -> str:
    """The canonical JSON text of `extract(req, options)`: calls, traces, rejected and
    unextracted spans, span count and lossy counts; or the type of the exception it raises
    (ingest then extracts trace by trace, `collector.ingest.extract_safely`)."""
    try:
        result = canonical(extract(req, options))
    except Exception as exc:  # an outcome like any other, compared as such
        result = {"raises": type(exc).__name__}
    return json.dumps(result, ensure_ascii=True, separators=(",", ":"))


def corpus_outcome(seed: int, index: int) -> str:
    """The outcome of the corpus's request `index` (drawn from seed and index)."""
    req, options = request(random.Random(f"{seed}:{index}"))
    return outcome(req, options)


def digests(seed: int, count: int, chunk: int) -> Iterator[str]:
    """SHA-256 of the outcomes of requests [i, i + chunk), for each chunk up to `count`."""
    for start in range(0, count, chunk):
        h = hashlib.sha256()
        for index in range(start, min(count, start + chunk)):
            h.update(corpus_outcome(seed, index).encode() + b"\n")
        yield h.hexdigest()


def capture_files() -> list[Path]:
    """Every captured OTLP request (protobuf and JSON) under tests/captures."""
    return sorted(p for p in CAPTURES.glob("*/spans.otlp.*") if p.suffix in (".pb", ".json"))


CAPTURE_OPTIONS = (
    ("default", ExtractOptions()),
    ("plumbing", ExtractOptions(keep_plumbing=True)),
)


def read_request(path: Path) -> ExportTraceServiceRequest:
    """A capture file decoded as a receiver decodes a request body (no span is refused)."""
    media = PROTOBUF if path.suffix == ".pb" else JSON
    request, refused = decode_body(path.read_bytes(), media, None, 1 << 30)
    assert not refused, f"{path}: the decoder refused spans"
    return request  # type: ignore[no-any-return]


def capture_outcomes(path: Path) -> Iterator[tuple[str, str]]:
    """(label, outcome) of one capture under each of CAPTURE_OPTIONS."""
    req = read_request(path)
    for label, options in CAPTURE_OPTIONS:
        yield f"{path.relative_to(CAPTURES)}:{label}", outcome(req, options)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--chunk", type=int, default=100)
    parser.add_argument("--digests", action="store_true",
                        help="print the digest file: one line per capture, then per chunk")
    parser.add_argument("--out", type=Path, help="write every outcome in full")
    args = parser.parse_args(argv)
    if args.out is not None:
        with args.out.open("w") as out:
            for path in capture_files():
                for label, text in capture_outcomes(path):
                    out.write(f"{label} {text}\n")
            for index in range(args.requests):
                out.write(f"{args.seed}:{index} {corpus_outcome(args.seed, index)}\n")
    if args.digests:
        for path in capture_files():
            for label, text in capture_outcomes(path):
                print(label, hashlib.sha256(text.encode()).hexdigest())
        for i, digest in enumerate(digests(args.seed, args.requests, args.chunk)):
            print(f"corpus:{args.seed}:{i * args.chunk}-{(i + 1) * args.chunk}", digest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
