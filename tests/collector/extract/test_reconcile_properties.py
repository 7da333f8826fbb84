"""Reconciliation pairs a requested call with an execution whose input wraps the requested
arguments in a framework's envelope, without call ids (issue 27): each call once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry.trace import SpanKind

from tests.spans import capture, to_request
from tooltrail.collector.extract import extract
from tooltrail.collector.extract.reconcile import reconcile

ENVELOPES = [
    lambda a: {"kwargs": a},  # LlamaIndex's OpenInference
    lambda a: {"args": [], "sanitize_inputs_outputs": True, "kwargs": a},  # smolagents
]


def _turn(envelope: Any, arguments: dict[str, Any], executed: bool = True) -> list[Any]:
    """One OpenInference turn, on real SDK spans: an LLM span requesting `lookup(arguments)`
    and `search({"q": "x"})` with call ids, a TOOL span (no call id) running lookup with its
    input wrapped, search never executed."""
    tp, exporter = capture()
    tracer = tp.get_tracer("openinference.instrumentation.test")
    with tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT"}):
        calls = [("call_1", "lookup", arguments), ("call_2", "search", {"q": "x"})]
        attrs: dict[str, Any] = {"openinference.span.kind": "LLM"}
        for j, (cid, name, args) in enumerate(calls):
            prefix = f"llm.output_messages.0.message.tool_calls.{j}.tool_call."
            attrs |= {prefix + "id": cid, prefix + "function.name": name,
                      prefix + "function.arguments": json.dumps(args)}
        with tracer.start_as_current_span("llm", attributes=attrs):
            pass
        if executed:
            with tracer.start_as_current_span("lookup", kind=SpanKind.INTERNAL, attributes={
                    "openinference.span.kind": "TOOL", "tool.name": "lookup",
                    "input.value": json.dumps(envelope(arguments)),
                    "output.value": "found"}):
                pass
    batch = extract(to_request(exporter.get_finished_spans()))
    return reconcile(list(batch.calls))


@pytest.mark.parametrize("envelope", ENVELOPES)
@pytest.mark.parametrize("arguments", [{"city": "Paris"}, {"filter": {"city": "Paris"}}, {}])
def test_an_envelope_execution_is_the_requested_call(envelope: Any,
                                                     arguments: dict[str, Any]) -> None:
    calls = [(c.name, c.call_id, c.arguments, c.executed, c.result, c.step)
             for c in _turn(envelope, arguments)]
    assert [c[:5] for c in calls] == [
        ("lookup", "call_1", arguments, True, "found"),
        ("search", "call_2", {"q": "x"}, False, None),  # requested, never executed
    ]
    unwrapped = _turn(lambda a: a, arguments)  # as if the framework sent the arguments
    assert [(c.name, c.call_id, c.arguments, c.executed, c.result, c.step)
            for c in unwrapped] == calls


def test_without_execution_both_stay_requested() -> None:
    calls = _turn(ENVELOPES[0], {"city": "Paris"}, executed=False)
    assert [(c.name, c.executed) for c in calls] == [("lookup", False), ("search", False)]
