"""Realistic agent traces for the ingest benchmark, built fast enough not to be the bottleneck.

A turn is what a GenAI-semconv instrumented agent exports for one run: a root `invoke_agent`
span, one LLM `chat` span and 2–3 `execute_tool` spans with ~150-byte arguments and ~300-byte
results. A request carries whole turns; conversations run over several consecutive requests.

`RequestFactory` serialises one template per shape and stamps fresh ids into copies of its bytes
(same length, so the protobuf framing stays valid): making a request costs two `bytes.replace`.
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span, Status

TOOLS = ("search_orders", "get_customer", "issue_refund", "send_email", "lookup_policy")
SPANS_PER_TURN = 4.5  # root + chat + 2–3 tools, on average


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


@dataclass(frozen=True)
class Shape:
    """How a request looks: spans per request and turns per conversation."""

    spans: int = 500
    turns_per_conversation: int = 5


class RequestFactory:
    """Makes serialised ExportTraceServiceRequests with unique trace ids on every call.

    Trace ids are `request marker (8 bytes) + turn index (8 bytes)`; conversation ids embed a
    conversation marker in hex. Each call replaces both markers with fresh values.
    """

    def __init__(self, shape: Shape = Shape(), seed: int | None = None) -> None:
        self.shape = shape
        self._rng_prefix = os.urandom(4) if seed is None else seed.to_bytes(4, "big")
        self._trace_marker = b"\xfe\xed" + os.urandom(6)
        self._conv_marker = os.urandom(8).hex().encode()
        self._counter = itertools.count(1)
        self.template, self.span_count, self.turns = self._build()

    def _build(self) -> tuple[bytes, int, int]:
        turns = max(1, round(self.shape.spans / SPANS_PER_TURN))
        per_conv = max(1, self.shape.turns_per_conversation)
        request = ExportTraceServiceRequest()
        rs: ResourceSpans = request.resource_spans.add()
        rs.resource.attributes.extend([
            _kv("service.name", "support-agent"),
            _kv("service.version", "1.4.2"),
            _kv("telemetry.sdk.language", "python"),
            _kv("telemetry.sdk.name", "opentelemetry"),
            _kv("deployment.environment", "bench"),
        ])
        ss = rs.scope_spans.add()
        ss.scope.name = "tooltrail.bench.agent"
        conv_hex = self._conv_marker.decode()
        base_ns = 1_700_000_000_000_000_000
        spans = 0
        for t in range(turns):
            trace_id = self._trace_marker + t.to_bytes(8, "big")
            conversation = f"conv-{conv_hex}-{t // per_conv:04d}"
            start = base_ns + t * 5_000_000_000
            root_id = (t * 16 + 1).to_bytes(8, "big")
            root = ss.spans.add()
            root.trace_id, root.span_id, root.name = trace_id, root_id, "invoke_agent support"
            root.kind = Span.SPAN_KIND_INTERNAL
            root.start_time_unix_nano, root.end_time_unix_nano = start, start + 4_000_000_000
            root.attributes.extend([
                _kv("gen_ai.operation.name", "invoke_agent"),
                _kv("gen_ai.agent.name", "support"),
                _kv("gen_ai.conversation.id", conversation),
                _kv("gen_ai.output.messages", json.dumps(
                    [{"role": "assistant", "content": "Your refund was issued. " * 6}])),
            ])
            chat = ss.spans.add()
            chat.trace_id, chat.span_id, chat.parent_span_id = trace_id, (t * 16 + 2).to_bytes(
                8, "big"), root_id
            chat.name, chat.kind = "chat gpt-4o", Span.SPAN_KIND_CLIENT
            chat.start_time_unix_nano, chat.end_time_unix_nano = start + 1000, start + 900_000_000
            chat.attributes.extend([
                _kv("gen_ai.operation.name", "chat"),
                _kv("gen_ai.request.model", "gpt-4o"),
                _kv("gen_ai.usage.input_tokens", 812),
                _kv("gen_ai.usage.output_tokens", 64),
            ])
            spans += 2
            for i in range(2 + t % 2):
                tool = TOOLS[(t + i) % len(TOOLS)]
                span = ss.spans.add()
                span.trace_id, span.parent_span_id = trace_id, root_id
                span.span_id = (t * 16 + 3 + i).to_bytes(8, "big")
                span.name, span.kind = f"execute_tool {tool}", Span.SPAN_KIND_INTERNAL
                begin = start + 1_000_000_000 + i * 500_000_000
                span.start_time_unix_nano, span.end_time_unix_nano = begin, begin + 400_000_000
                ok = (t + i) % 11 != 0
                span.attributes.extend([
                    _kv("gen_ai.operation.name", "execute_tool"),
                    _kv("gen_ai.tool.name", tool),
                    _kv("gen_ai.tool.call.id", f"call_{t:05d}_{i}"),
                    _kv("gen_ai.tool.call.arguments", _pad_json(
                        {"order_id": f"A-{t:06d}", "customer": "c-1234", "amount": 42.5}, 150)),
                ])
                if ok:
                    span.attributes.append(_kv("gen_ai.tool.call.result", _pad_json(
                        {"status": "ok", "items": [{"sku": "X-1", "qty": 2}]}, 300)))
                else:
                    span.status.code = Status.STATUS_CODE_ERROR
                    span.status.message = "upstream timeout"
                    span.attributes.append(_kv("error.type", "TimeoutError"))
                spans += 1
        return request.SerializeToString(), spans, turns

    @property
    def tool_calls(self) -> int:
        """Tool spans per request."""
        return self.span_count - 2 * self.turns

    def make(self, conversation_group: int | None = None) -> tuple[bytes, bytes]:
        """(serialised request, its trace marker). Requests made with the same
        `conversation_group` continue the same conversations (later turns of them)."""
        n = next(self._counter)
        marker = self._rng_prefix + n.to_bytes(4, "big")
        group = n if conversation_group is None else conversation_group
        conv = (self._rng_prefix + group.to_bytes(4, "big")).hex().encode()
        body = self.template.replace(self._trace_marker, marker).replace(self._conv_marker, conv)
        return body, marker

    def conversation_keys(self, conversation_group: int) -> list[str]:
        """The conversation keys of requests made with `conversation_group`."""
        conv = (self._rng_prefix + conversation_group.to_bytes(4, "big")).hex()
        count = -(-self.turns // max(1, self.shape.turns_per_conversation))
        return [f"conv-{conv}-{i:04d}" for i in range(count)]

    @property
    def trace_prefix(self) -> str:
        """Hex prefix shared by every trace id this factory makes."""
        return self._rng_prefix.hex()

    def trace_ids(self, marker: bytes) -> list[str]:
        """The hex trace ids of the request made with `marker`."""
        return [(marker + t.to_bytes(8, "big")).hex() for t in range(self.turns)]
