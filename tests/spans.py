"""Emit agent spans the way a GenAI-semconv instrumented agent does, with the real OTel SDK."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode


@dataclass
class ToolStep:
    """One tool the scripted agent calls: its result, or the exception it raises."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    result: Any = None
    raises: str | None = None
    call_id: str | None = None


def provider(exporter: SpanExporter, service: str = "support-agent") -> TracerProvider:
    """A TracerProvider exporting every span at its end through `exporter`."""
    tp = TracerProvider(resource=Resource.create({"service.name": service}))
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    return tp


def agent_turn(
    tp: TracerProvider, conversation_id: str | None, tools: Sequence[ToolStep],
    agent: str = "support", answer: str | None = "done",
) -> str:
    """One agent run (one trace): invoke_agent → chat → execute_tool spans; returns the trace id.
    `answer` None: no message content on any span (content capture off)."""
    tracer = tp.get_tracer("tests.agent")
    root_attrs: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent",
                                  "gen_ai.agent.name": agent}
    if conversation_id is not None:
        root_attrs["gen_ai.conversation.id"] = conversation_id
    with tracer.start_as_current_span(f"invoke_agent {agent}", attributes=root_attrs) as root:
        with tracer.start_as_current_span("chat model", attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted",
        }):
            pass
        for i, tool in enumerate(tools):
            attrs: dict[str, Any] = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool.name,
                "gen_ai.tool.call.id": tool.call_id or f"call_{i}",
                "gen_ai.tool.call.arguments": json.dumps(tool.arguments),
            }
            with tracer.start_as_current_span(f"execute_tool {tool.name}", attributes=attrs,
                                              record_exception=False,
                                              set_status_on_exception=False) as span:
                if tool.raises is not None:
                    span.record_exception(RuntimeError(tool.raises))
                    span.set_status(Status(StatusCode.ERROR, tool.raises))
                    span.set_attribute("error.type", "RuntimeError")
                else:
                    span.set_attribute("gen_ai.tool.call.result", json.dumps(tool.result))
        if answer is not None:
            root.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant",
                                                                      "content": answer}]))
        return format(root.get_span_context().trace_id, "032x")


def capture() -> tuple[TracerProvider, InMemorySpanExporter]:
    """A provider that keeps finished spans in memory."""
    exporter = InMemorySpanExporter()
    return provider(exporter), exporter


def to_request(spans: Sequence[ReadableSpan]) -> ExportTraceServiceRequest:
    """The exact request the OTLP exporters would send for these spans."""
    return encode_spans(spans)


def to_otlp_json(request: ExportTraceServiceRequest) -> dict[str, Any]:
    """The request as OTLP/JSON: protobuf's JSON mapping, with ids in hex as OTLP/JSON wants
    (the mapping gives base64)."""
    import base64

    from google.protobuf import json_format

    data = json_format.MessageToDict(request)
    for rs in data["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return data
