"""Realistic agent traces for the ingest benchmark, built fast enough not to be the bottleneck.

The traffic (docs/observability.md, "Benchmark traffic"): conversations of 3–6 turns (lengths
cycling 3, 4, 5, 6). A turn is what an instrumented agent run exports:

- a root `invoke_agent` span (GenAI `gen_ai.*` and OpenInference `AGENT` attributes: the
  conversation id, the user's input, the final answer);
- one LLM `chat` span with GenAI and OpenInference attributes: `gen_ai.input.messages` /
  `gen_ai.output.messages` (system prompt, history, the user's question; the assistant's
  `tool_call` parts) and the same content flattened as `llm.input_messages.*` /
  `llm.output_messages.*`, token counts, model names;
- 2–3 `execute_tool` spans (~150-byte arguments, ~300-byte results; one call in 11 fails),
  the calls the LLM span requested, each with
- one HTTP client child span (what the tool called): so about a third of all spans are tools.

A request carries whole conversations (about `Shape.spans` spans, ending at a conversation's
end). With `Shape.logs`, each tool call's content (arguments and result) is not on its
`execute_tool` span but in a GenAI `gen_ai.client.inference.operation.details` log record that
names the span (as events-only instrumentations send it), in an `ExportLogsServiceRequest` sent
beside the traces request (`RequestFactory.logs`).

`RequestFactory` serialises one template per shape and stamps fresh ids into copies of its
bytes (same length, so the protobuf framing stays valid): making a request costs two
`bytes.replace`.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from dataclasses import dataclass

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import ScopeLogs
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

TOOLS = ("search_orders", "get_customer", "issue_refund", "send_email", "lookup_policy")
SYSTEM_PROMPT = ("You are the support agent of an online shop. Use the tools to look up orders, "
                 "customers and policies before answering; never invent an order status. "
                 "Refunds above 100 EUR need a policy lookup first. Answer in the customer's "
                 "language, briefly and politely.")
QUESTIONS = (
    "Hi, my order A-{n:06d} never arrived, can you check where it is and refund it if lost?",
    "I was charged twice for order A-{n:06d}. Could you look into it please?",
    "What is your return policy for opened electronics? I bought a kettle last week.",
    "Can you send me the invoice for my last order again? I cannot find the email.",
)
ANSWER = ("I checked your order and the carrier confirms it was lost in transit. I have issued "
          "a refund of 42.50 EUR to your original payment method; it should appear within "
          "3-5 business days. Is there anything else I can help you with?")


def _kv(key: str, value: str | int | bool) -> KeyValue:
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=value))


def _pad_json(base: dict[str, object], size: int) -> str:
    """`base` as JSON, padded with a `note` field to about `size` bytes."""
    text = json.dumps(base)
    return json.dumps({**base, "note": "x" * max(0, size - len(text) - 12)})


def _content_record(sl: ScopeLogs, span: Span, tool: str, call_id: str, turn: int,
                    ok: bool) -> None:
    """A tool call's content as the operation-details event naming its span: its arguments as
    a `tool_call` input part, its result (when it succeeded) as a `tool_call_response` part."""
    record = sl.log_records.add(event_name=DETAILS, time_unix_nano=span.end_time_unix_nano,
                                trace_id=span.trace_id, span_id=span.span_id)
    call = {"type": "tool_call", "id": call_id, "name": tool,
            "arguments": json.loads(_arguments(tool, turn))}
    record.attributes.extend([
        _kv("gen_ai.operation.name", "execute_tool"),
        _kv("gen_ai.input.messages", json.dumps([{"role": "assistant", "parts": [call]}])),
    ])
    if ok:
        response = {"type": "tool_call_response", "id": call_id,
                    "response": json.loads(_result(turn))}
        record.attributes.append(_kv("gen_ai.output.messages", json.dumps(
            [{"role": "tool", "parts": [response]}])))


def _arguments(tool: str, turn: int) -> str:
    return _pad_json({"order_id": f"A-{turn:06d}", "customer": "c-1234", "amount": 42.5,
                      "tool": tool}, 150)


def _result(turn: int) -> str:
    return _pad_json({"status": "ok", "order": f"A-{turn:06d}",
                      "items": [{"sku": "X-1", "qty": 2, "price": 21.25}]}, 300)


@dataclass(frozen=True)
class Shape:
    """How a request looks: about `spans` spans of whole conversations, whose lengths in turns
    cycle through `conversation_turns`; each turn has 2 or 3 tool calls, alternately."""

    spans: int = 500
    conversation_turns: tuple[int, ...] = (3, 4, 5, 6)
    logs: bool = False  # tool calls' content in log records beside the spans


DETAILS = "gen_ai.client.inference.operation.details"


@dataclass(frozen=True)
class Template:
    """One serialised request and what it holds."""

    body: bytes
    spans: int
    turns: int
    tool_calls: int
    conversations: int
    logs: bytes = b""  # the ExportLogsServiceRequest beside it (Shape.logs), else empty


class RequestFactory:
    """Makes serialised ExportTraceServiceRequests with unique trace ids on every call.

    Trace ids are `request marker (8 bytes) + turn index (8 bytes)`; conversation ids embed a
    conversation marker in hex. Each call replaces both markers with fresh values. The
    conversation marker is a hash of the group, random hex as real conversation ids (UUIDs,
    `conv_…` ids) are: a zero-padded counter would put a long digit run, which the `card`
    redaction pattern must examine, in every id.
    """

    def __init__(self, shape: Shape = Shape(), seed: int | None = None) -> None:
        if not shape.conversation_turns or min(shape.conversation_turns) < 1:
            raise ValueError("conversation_turns: one or more lengths of at least one turn")
        self.shape = shape
        self._rng_prefix = os.urandom(4) if seed is None else seed.to_bytes(4, "big")
        self._trace_marker = b"\xfe\xed" + os.urandom(6)
        self._conv_marker = os.urandom(8).hex().encode()
        self._counter = itertools.count(1)
        built = self._build()
        self.template, self.span_count, self.turns = built.body, built.spans, built.turns
        self.tool_calls, self.conversations = built.tool_calls, built.conversations
        self.logs_template = built.logs
        self._marker_at = self.template.index(self._trace_marker)

    def _build(self) -> Template:
        request = ExportTraceServiceRequest()
        rs: ResourceSpans = request.resource_spans.add()
        rs.resource.attributes.extend([
            _kv("service.name", "support-agent"),
            _kv("service.version", "1.4.2"),
            _kv("telemetry.sdk.language", "python"),
            _kv("telemetry.sdk.name", "opentelemetry"),
            _kv("telemetry.sdk.version", "1.38.0"),
            _kv("deployment.environment", "bench"),
        ])
        ss = rs.scope_spans.add()
        ss.scope.name = "tooltrail.bench.agent"
        logs = ExportLogsServiceRequest()
        rl = logs.resource_logs.add()
        rl.resource.CopyFrom(rs.resource)
        sl = rl.scope_logs.add()
        sl.scope.name = ss.scope.name
        conv_hex = self._conv_marker.decode()
        spans = turn = tools = conversation = 0
        lengths = itertools.cycle(self.shape.conversation_turns)
        while spans < self.shape.spans:
            key = f"conv-{conv_hex}-{conversation:04d}"
            for position in range(next(lengths)):
                added, calls = self._turn(ss, sl if self.shape.logs else None, turn, position,
                                          key)
                spans, tools, turn = spans + added, tools + calls, turn + 1
            conversation += 1
        return Template(request.SerializeToString(), spans, turn, tools, conversation,
                        logs.SerializeToString() if self.shape.logs else b"")

    def _turn(self, ss: ScopeSpans, sl: ScopeLogs | None, t: int, position: int,
              conversation: str) -> tuple[int, int]:
        """Append turn `t` (the `position`-th of its conversation); (spans, tool calls) added.
        With `sl`, the tool calls' content goes there as log records instead."""
        trace_id = self._trace_marker + t.to_bytes(8, "big")
        start = 1_700_000_000_000_000_000 + t * 5_000_000_000
        question = QUESTIONS[t % len(QUESTIONS)].format(n=t)
        calls = [(TOOLS[(t + i) % len(TOOLS)], f"call_{t:05d}_{i}") for i in range(2 + t % 2)]

        def span(n: int, parent: bytes, name: str, kind: Span.SpanKind.ValueType,
                 begin: int, end: int) -> Span:
            s = ss.spans.add()
            s.trace_id, s.span_id, s.parent_span_id = trace_id, (t * 16 + n).to_bytes(
                8, "big"), parent
            s.name, s.kind = name, kind
            s.start_time_unix_nano, s.end_time_unix_nano = start + begin, start + end
            return s

        root = span(1, b"", "invoke_agent support", Span.SPAN_KIND_INTERNAL, 0, 4_000_000_000)
        root.attributes.extend([
            _kv("gen_ai.operation.name", "invoke_agent"),
            _kv("gen_ai.agent.name", "support"),
            _kv("gen_ai.conversation.id", conversation),
            _kv("openinference.span.kind", "AGENT"),
            _kv("session.id", conversation),
            _kv("input.value", question),
            _kv("output.value", ANSWER),
            _kv("gen_ai.output.messages", json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}],
                  "finish_reason": "stop"}])),
        ])
        root_id = root.span_id
        history = [{"role": "user", "parts": [{"type": "text", "content": q}]}
                   for q in (QUESTIONS[(t - k) % len(QUESTIONS)].format(n=t - k)
                             for k in range(min(position, 2), 0, -1))]
        inputs = [{"role": "system", "parts": [{"type": "text", "content": SYSTEM_PROMPT}]},
                  *history, {"role": "user", "parts": [{"type": "text", "content": question}]}]
        outputs = [{"role": "assistant", "finish_reason": "tool_calls", "parts": [
            {"type": "tool_call", "id": cid, "name": tool,
             "arguments": json.loads(_arguments(tool, t))} for tool, cid in calls]}]
        chat = span(2, root_id, "chat gpt-4o", Span.SPAN_KIND_CLIENT, 1000, 900_000_000)
        chat.attributes.extend([
            _kv("gen_ai.operation.name", "chat"),
            _kv("gen_ai.system", "openai"),
            _kv("gen_ai.request.model", "gpt-4o"),
            _kv("gen_ai.response.model", "gpt-4o-2024-08-06"),
            _kv("gen_ai.request.temperature", "0.2"),
            _kv("gen_ai.usage.input_tokens", 812 + 40 * position),
            _kv("gen_ai.usage.output_tokens", 64),
            _kv("gen_ai.input.messages", json.dumps(inputs)),
            _kv("gen_ai.output.messages", json.dumps(outputs)),
            _kv("openinference.span.kind", "LLM"),
            _kv("llm.model_name", "gpt-4o-2024-08-06"),
            _kv("llm.provider", "openai"),
            _kv("llm.token_count.prompt", 812 + 40 * position),
            _kv("llm.token_count.completion", 64),
            _kv("llm.token_count.total", 876 + 40 * position),
        ])
        for i, message in enumerate(inputs):
            text = message["parts"][0]["content"]  # type: ignore[index]
            chat.attributes.extend([
                _kv(f"llm.input_messages.{i}.message.role", str(message["role"])),
                _kv(f"llm.input_messages.{i}.message.content", str(text)),
            ])
        chat.attributes.append(_kv("llm.output_messages.0.message.role", "assistant"))
        for j, (tool, cid) in enumerate(calls):
            prefix = f"llm.output_messages.0.message.tool_calls.{j}.tool_call"
            chat.attributes.extend([
                _kv(f"{prefix}.id", cid),
                _kv(f"{prefix}.function.name", tool),
                _kv(f"{prefix}.function.arguments", _arguments(tool, t)),
            ])
        for i, (tool, cid) in enumerate(calls):
            begin = 1_000_000_000 + i * 500_000_000
            call = span(3 + 2 * i, root_id, f"execute_tool {tool}", Span.SPAN_KIND_INTERNAL,
                        begin, begin + 400_000_000)
            call.attributes.extend([
                _kv("gen_ai.operation.name", "execute_tool"),
                _kv("gen_ai.tool.name", tool),
                _kv("gen_ai.tool.type", "function"),
                _kv("gen_ai.tool.call.id", cid),
            ])
            ok = (t + i) % 11 != 0
            if sl is not None:
                _content_record(sl, call, tool, cid, t, ok)
            else:
                call.attributes.append(_kv("gen_ai.tool.call.arguments", _arguments(tool, t)))
            if ok and sl is None:
                call.attributes.append(_kv("gen_ai.tool.call.result", _result(t)))
            if not ok:
                call.status.code = Status.STATUS_CODE_ERROR
                call.status.message = "upstream timeout"
                call.attributes.append(_kv("error.type", "TimeoutError"))
            http = span(4 + 2 * i, call.span_id, "GET", Span.SPAN_KIND_CLIENT,
                        begin + 10_000_000, begin + 380_000_000)
            http.attributes.extend([
                _kv("http.request.method", "GET"),
                _kv("url.full", f"https://orders.internal.example/v2/orders/A-{t:06d}"),
                _kv("server.address", "orders.internal.example"),
                _kv("server.port", 443),
                _kv("http.response.status_code", 200 if ok else 504),
            ])
        return 2 + 2 * len(calls), len(calls)

    def logs(self, body: bytes) -> bytes:
        """The logs request that goes beside the traces request `body` (made by `make`):
        its content records, stamped with the same trace ids (Shape.logs)."""
        marker = body[self._marker_at:self._marker_at + len(self._trace_marker)]
        return self.logs_template.replace(self._trace_marker, marker)

    def make(self, conversation_group: int | None = None) -> tuple[bytes, bytes]:
        """(serialised request, its trace marker). Requests made with the same
        `conversation_group` continue the same conversations (later turns of them)."""
        n = next(self._counter)
        marker = self._rng_prefix + n.to_bytes(4, "big")
        group = n if conversation_group is None else conversation_group
        conv = self._conversation_marker(group).encode()
        body = self.template.replace(self._trace_marker, marker).replace(self._conv_marker, conv)
        return body, marker

    def conversation_keys(self, conversation_group: int) -> list[str]:
        """The conversation keys of requests made with `conversation_group`."""
        conv = self._conversation_marker(conversation_group)
        return [f"conv-{conv}-{i:04d}" for i in range(self.conversations)]

    def _conversation_marker(self, group: int) -> str:
        return hashlib.blake2b(self._rng_prefix + group.to_bytes(8, "big"),
                               digest_size=8).hexdigest()

    @property
    def trace_prefix(self) -> str:
        """Hex prefix shared by every trace id this factory makes."""
        return self._rng_prefix.hex()

    def trace_ids(self, marker: bytes) -> list[str]:
        """The hex trace ids of the request made with `marker`."""
        return [(marker + t.to_bytes(8, "big")).hex() for t in range(self.turns)]
