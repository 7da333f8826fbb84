"""An agent project's own code, run by a fresh install's interpreter from the project's
directory: records one turn with tooltrail's recording helper, exports it with the real OTel
SDK (one OTLP/HTTP request, and a JSON Lines file through tooltrail's file exporter), and scores
the same calls locally with the matcher API. Prints what it imported from where, as JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import tooltrail.collector
import tooltrail.matcher
from tooltrail.collector.capture.record import agent_turn
from tooltrail.collector.otlp_file import OTLPJsonLinesSpanExporter
from tooltrail.matcher import Call, Trajectory, parse_expectation, score


def main() -> None:
    endpoint, spans_file, expectation_file = sys.argv[1:4]
    provider = TracerProvider()
    # batched: the three spans leave in one request, at shutdown
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    provider.add_span_processor(BatchSpanProcessor(OTLPJsonLinesSpanExporter(spans_file)))
    with agent_turn("smoke-refund", agent="support", tracer_provider=provider) as turn:
        with turn.tool("lookup_order", {"order_id": 42}, call_id="call_1") as call:
            call.result = {"status": "shipped"}
        turn.call("issue_refund", {"amount": 19.99}, result="refunded")
    provider.shutdown()
    expectation = parse_expectation(json.loads(Path(expectation_file).read_text()))
    trajectory = Trajectory([[Call("lookup_order", {"order_id": 42}),
                              Call("issue_refund", {"amount": 19.99})]])
    print(json.dumps({"passed": [r.passed for r in score(expectation, trajectory)],
                      "modules": [tooltrail.collector.__file__, tooltrail.matcher.__file__]}))


if __name__ == "__main__":
    main()
