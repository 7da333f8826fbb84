"""Shared helpers for the capture scripts (OTel SDK setup + OTLP serialisation).

Every capture script imports this file by path; it only needs
opentelemetry-sdk and opentelemetry-exporter-otlp-proto-common (which brings
opentelemetry-proto + protobuf).
"""
from __future__ import annotations

import base64
import json
import os
import random
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator


class SeededIdGenerator(IdGenerator):
    """Deterministic trace/span ids so that regenerated fixtures diff cleanly."""

    def __init__(self, seed: int = 4242) -> None:
        self._rng = random.Random(seed)

    def generate_span_id(self) -> int:
        return self._rng.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        return self._rng.getrandbits(128) or 1


def setup_tracing(service_name: str, *, set_global: bool = True, seed: int = 4242,
                  processor: bool = True):
    """TracerProvider -> SimpleSpanProcessor -> InMemorySpanExporter. `processor=False`: the
    provider gets no processor, for an SDK that adds its own around the exporter
    (`Traceloop.init(exporter=...)`)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": service_name}),
        id_generator=SeededIdGenerator(seed),
    )
    if processor:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    if set_global:
        trace.set_tracer_provider(provider)
    return provider, exporter


_HEX_KEYS = ("traceId", "spanId", "parentSpanId")


def _b64_to_hex(obj):
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k in _HEX_KEYS and isinstance(v, str):
                out[k] = base64.b64decode(v).hex()
            else:
                out[k] = _b64_to_hex(v)
        return out
    if isinstance(obj, list):
        return [_b64_to_hex(x) for x in obj]
    return obj


def write_otlp(out_dir, spans) -> None:
    """Write exactly what the OTLP exporter would send: spans.otlp.pb and spans.otlp.json."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    out_dir = Path(out_dir)
    spans = sorted(spans, key=lambda s: (s.start_time or 0, s.context.span_id))
    req = encode_spans(spans)  # ExportTraceServiceRequest
    (out_dir / "spans.otlp.pb").write_bytes(req.SerializeToString())
    as_dict = MessageToDict(req, use_integers_for_enums=True)
    (out_dir / "spans.otlp.json").write_text(json.dumps(_b64_to_hex(as_dict), indent=1) + "\n")


def setup_logs():
    """The global LoggerProvider -> SimpleLogRecordProcessor -> in-memory exporter, for an
    instrumentation that sends content as OTel log events."""
    from opentelemetry import _logs
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import (
        InMemoryLogRecordExporter,
        SimpleLogRecordProcessor,
    )

    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=trace.get_tracer_provider().resource)
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    _logs.set_logger_provider(provider)
    return provider, exporter


def write_otlp_logs(out_dir, records) -> None:
    """Write exactly what the OTLP log exporter would send: logs.otlp.pb and logs.otlp.json."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs

    out_dir = Path(out_dir)
    req = encode_logs(list(records))  # ExportLogsServiceRequest
    (out_dir / "logs.otlp.pb").write_bytes(req.SerializeToString())
    as_dict = MessageToDict(req, use_integers_for_enums=True)
    (out_dir / "logs.otlp.json").write_text(json.dumps(_b64_to_hex(as_dict), indent=1) + "\n")


def write_expected(out_dir, expected: dict) -> None:
    Path(out_dir, "expected.json").write_text(json.dumps(expected, indent=2) + "\n")


def versions(*dists: str) -> dict:
    from importlib.metadata import version

    return {d: version(d) for d in dists}


# The scripted conversation of the frameworks that hand a tool's error back to the model
# (turn 2: convert_currency fails, then get_weather(Berlin)). Each model response is a list
# of ("tool", name, args, call_id) / ("text", t) items; TURNS pairs each user prompt with
# the responses of its turn, SCRIPT is every response in order.
def call(name, args, cid):
    return ("tool", name, args, cid)


def text(t):
    return ("text", t)


TURNS = [
    (
        "What's the weather in Paris and London, and what time is it in Paris?",
        [
            [call("get_weather", {"city": "Paris"}, "call_w_paris"), call("get_weather", {"city": "London"}, "call_w_london")],
            [call("get_time", {"city": "Paris"}, "call_t_paris")],
            [text("Paris 18C, London 14C; it is 12:00 in Paris.")],
        ],
    ),
    (
        "Convert 100 EUR to USD, and tell me the weather in Berlin.",
        [
            [call("convert_currency", {"amount": 100, "from_currency": "EUR", "to_currency": "USD"}, "call_fx")],
            [call("get_weather", {"city": "Berlin"}, "call_w_berlin")],
            [text("The FX service failed; Berlin is 11C.")],
        ],
    ),
    ("Thanks, that's all!", [[text("You're welcome!")]]),
]
SCRIPT = [r for _, rs in TURNS for r in rs]


def expected_turns(failing=("convert_currency",)):
    """The ground truth of TURNS: each turn's tool calls in order; the calls of one model
    response share a step (its index in the turn); the `failing` tools raise."""
    return [
        {"calls": [
            {"name": name, "arguments": args, "error": name in failing, "step": step, "call_id": cid}
            for step, response in enumerate(responses)
            for kind, *item in response if kind == "tool"
            for name, args, cid in [item]
        ]}
        for _, responses in TURNS
    ]
