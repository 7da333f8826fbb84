"""An agent project's own code, run by a fresh install's interpreter from the project's
directory, which holds the project's own `collector` and `matcher` packages: imports those and
tooltrail side by side, records one turn with tooltrail's recording helper, exports it with the
real OTel SDK (one OTLP/HTTP request, and a JSON Lines file through tooltrail's file exporter),
and scores the same calls locally with the matcher API. Prints what it imported from where, as
JSON."""
# rename_imports: skip (`collector` and `matcher` here are the project's own packages)

from __future__ import annotations

import json
import sys
from pathlib import Path

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import collector  # the project's own
import matcher  # the project's own
from tooltrail import (
    Call,
    OTLPJsonLinesSpanExporter,
    Trajectory,
    agent_turn,
    parse_expectation,
    score,
)


def main() -> None:
    endpoint, spans_file, expectation_file = sys.argv[1:4]
    provider = TracerProvider()
    # batched: the three spans leave in one request, at shutdown
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    provider.add_span_processor(BatchSpanProcessor(OTLPJsonLinesSpanExporter(spans_file)))
    order = collector.collect_order(42)  # the project's code in the project's packages
    with agent_turn("smoke-refund", agent="support", tracer_provider=provider) as turn:
        with turn.tool("lookup_order", {"order_id": order["id"]}, call_id="call_1") as call:
            call.result = {"status": order["status"]}
        turn.call("issue_refund", {"amount": 19.99}, result="refunded")
    provider.shutdown()
    expectation = parse_expectation(json.loads(Path(expectation_file).read_text()))
    trajectory = Trajectory([[Call("lookup_order", {"order_id": 42}),
                              Call("issue_refund", {"amount": 19.99})]])
    print(json.dumps({
        "passed": [r.passed for r in score(expectation, trajectory)],
        "own": [collector.__file__, matcher.__file__, matcher.route("refund please")],
        "tooltrail": [sys.modules[m].__file__ for m in (
            "tooltrail", "tooltrail.collector.capture.record", "tooltrail.collector.otlp_file",
            "tooltrail.matcher")],
    }))


if __name__ == "__main__":
    main()
