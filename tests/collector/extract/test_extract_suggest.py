"""`tooltrail extract --summary` on a framework no convention knows: it lists the tool-like spans'
attributes and prints a conventions-file entry that, saved as it is printed, extracts the calls;
and it says in one line when matched tool spans carry no arguments (content capture off).

Spans come from the real OpenTelemetry SDK: the made-up "acme" framework of
test_user_conventions.py, a second made-up one ("beta") that names no tool in its span names, and
GenAI tool spans exported without content.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.collector.extract.test_user_conventions import ACME, acme_request
from tests.spans import capture, to_otlp_json, to_request
from tooltrail.collector.cli import main
from tooltrail.collector.extract import ExtractOptions, extract
from tooltrail.collector.extract.conventions import read_conventions
from tooltrail.collector.extract_report import file_report

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
CAPTURE_FILES = sorted(str(p.relative_to(CAPTURES)) for p in CAPTURES.glob("*/spans.otlp.pb"))
HEADER = "a conventions file to start from"


def beta_request():  # type: ignore[no-untyped-def]
    """Every tool span is named `beta.step`; what it is says `beta.kind`, the tool's name an
    attribute, the input a `{"kwargs": …}` wrapper; the conversation id is on the run span only,
    which also holds a JSON object (not tool-like: no candidate while tool-like spans exist)."""
    tp, exporter = capture()
    tracer = tp.get_tracer("beta_sdk.tracing")
    with tracer.start_as_current_span("beta.run", attributes={
            "beta.conversation_id": "beta-1", "beta.config": json.dumps({"model": "m"})}):
        for i, (tool, kwargs, result) in enumerate([
                ("lookup_order", {"order": 7}, "shipped"),
                ("refund", {"order": 7, "amount": 12.5}, "refunded")]):
            with tracer.start_as_current_span("beta.step", attributes={
                "beta.kind": "tool", "beta.tool_name": tool, "beta.call_id": f"b{i}",
                "beta.input": json.dumps({"kwargs": kwargs}), "beta.result": result,
            }):
                pass
    return to_request(exporter.get_finished_spans())


FRAMEWORKS: dict[str, tuple[Callable[[], Any], str, list[tuple[Any, ...]]]] = {
    "acme": (acme_request, "acme-7", [("get_weather", {"city": "Paris"}, {"temp": 21}, "c0"),
                                      ("get_weather", {"city": "Oslo"}, {"temp": 4}, "c1")]),
    "beta": (beta_request, "beta-1", [("lookup_order", {"order": 7}, "shipped", "b0"),
                                      ("refund", {"order": 7, "amount": 12.5}, "refunded", "b1")]),
}


def summary(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    assert main(["extract", *argv, "--summary"]) == 0
    return capsys.readouterr().out.splitlines()


def printed_entry(lines: list[str]) -> str:
    """The file the summary prints: the lines after its header, up to the blank line."""
    (at,) = [i for i, line in enumerate(lines) if line.startswith(HEADER)]
    assert lines[at + 1] == ""
    end = lines.index("", at + 2)
    return "\n".join(lines[at + 2:end]) + "\n"


def write_spans(tmp_path: Path, request: Any) -> Path:
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(to_otlp_json(request)))
    return path


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_the_printed_entry_extracts_the_unknown_framework(
        framework: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make, conversation, expected = FRAMEWORKS[framework]
    spans = write_spans(tmp_path, make())
    out = summary(capsys, str(spans))
    assert any(line.startswith("tool-like spans no convention matched: 2 of scope") for line in out)
    attributes = {line.split()[0]: line.split()[1] for line in out
                  if line.startswith(f"  {framework}.")}
    assert {"2"} == set(attributes.values()) and len(attributes) >= 4  # key, on 2 spans
    entry = printed_entry(out)
    assert len(entry.splitlines()) < 15
    conventions = tmp_path / "proposed.yaml"
    conventions.write_text(entry)
    read_conventions(conventions)  # valid as printed

    assert main(["extract", str(spans), "--conventions", str(conventions), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    (found,) = report["conversations"]
    assert found["key"] == conversation
    calls = [(c["name"], c["arguments"], c["result"], c["call_id"])
             for turn in found["turns"] for c in turn["calls"]]
    assert calls == expected
    assert {c["convention"] for t in found["turns"] for c in t["calls"]} == {framework}
    assert report["unmatched_tools"]["groups"] == []  # matched now: nothing left to propose
    assert not any(line.startswith(HEADER) for line in summary(
        capsys, str(spans), "--conventions", str(conventions)))


def test_for_acme_it_proposes_the_documented_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's example: the entry proposed is the one docs/conventions.md shows."""
    out = summary(capsys, str(write_spans(tmp_path, acme_request())))
    assert yaml.safe_load(printed_entry(out)) == yaml.safe_load(ACME)
    example = next(line for line in out if line.startswith("  acme.out "))
    assert example.split(None, 2)[2] == '{"value": {"temp": 21}}'


def test_the_beta_entry_reads_its_wrapper_and_kind(tmp_path: Path) -> None:
    report = file_report(write_spans(tmp_path, beta_request()), ExtractOptions())
    (group,) = report["unmatched_tools"]["groups"]
    assert group["span_names"] == ["beta.step"] and group["scope"] == "beta_sdk.tracing"
    (entry,) = yaml.safe_load(report["unmatched_tools"]["entry"])["conventions"]
    assert entry == {
        "name": "beta",
        "match": {"span_name_is": "beta.step", "attributes": {"beta.kind": "tool"},
                  "has_attributes": ["beta.input"]},
        "tool_name": "beta.tool_name", "arguments": {"attribute": "beta.input", "path": "kwargs"},
        "result": "beta.result", "call_id": "beta.call_id",
        "conversation_key": "beta.conversation_id",
    }


def test_a_span_that_is_not_tool_like_is_no_candidate(tmp_path: Path) -> None:
    """An HTTP span, a span listing tool definitions, and (beside a tool-like span) a span
    holding a JSON object: none is a candidate."""
    tp, exporter = capture()
    tracer = tp.get_tracer("shop.web")
    with tracer.start_as_current_span("GET /orders", attributes={
            "http.request.method": "GET", "url.path": "/orders", "http.response.status_code": 200}):
        pass
    with tracer.start_as_current_span("plan", attributes={
            "shop.tools": json.dumps([{"name": "lookup_order"}])}):
        pass
    quiet = file_report(write_spans(tmp_path, to_request(exporter.get_finished_spans())),
                        ExtractOptions())["unmatched_tools"]
    assert quiet == {"groups": [], "entry": None, "no_arguments": None}

    with tracer.start_as_current_span("shop.load", attributes={
            "shop.params": json.dumps({"page": 1})}):
        pass
    with tracer.start_as_current_span("shop.tool.lookup_order", attributes={
            "shop.args": json.dumps({"order": 7})}):
        pass
    report = file_report(write_spans(tmp_path, to_request(exporter.get_finished_spans())),
                         ExtractOptions())["unmatched_tools"]
    (group,) = report["groups"]
    assert group["span_names"] == ["shop.tool.lookup_order"]


@pytest.mark.parametrize("capture_file", CAPTURE_FILES)
def test_a_known_framework_is_proposed_nothing(capture_file: str) -> None:
    """Nothing to propose for a known framework; where its content went to log events (a
    `logs.otlp.pb` beside the spans), or where its capture says no span of a turn carries the
    arguments (`"arguments_in_turn_trace": false`, AutoGen), its spans lack them, and say so."""
    unmatched = file_report(CAPTURES / capture_file, ExtractOptions())["unmatched_tools"]
    content_in_logs = (CAPTURES / capture_file).with_name("logs.otlp.pb").exists()
    expected = (CAPTURES / capture_file).with_name("expected.json")
    exported = not expected.exists() or json.loads(expected.read_text()).get(
        "arguments_in_turn_trace", True)
    assert unmatched["groups"] == [] and unmatched["entry"] is None
    if content_in_logs:
        assert "log events" in unmatched["no_arguments"]
    elif not exported:
        assert unmatched["no_arguments"].startswith("arguments: not exported")
    else:
        assert unmatched["no_arguments"] is None


def genai_tools(with_arguments: bool, request_arguments: bool = False,  # type: ignore[no-untyped-def]
                arguments: str = '{"city": "Paris"}'):
    """GenAI tool spans as an instrumentation with content capture off exports them: operation,
    tool name and call id only (optionally arguments, or a chat span requesting the calls)."""
    tp, exporter = capture()
    tracer = tp.get_tracer("some.genai.instrumentation")
    with tracer.start_as_current_span("invoke_agent helper", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "conv-1"}):
        if request_arguments:
            with tracer.start_as_current_span("chat scripted", attributes={
                    "gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps([
                        {"role": "assistant", "parts": [
                            {"type": "tool_call", "name": "get_weather", "id": f"call_{i}",
                             "arguments": {"city": city}} for i, city in enumerate(
                                ["Paris", "Oslo", "Rome"])]}])}):
                pass
        for i in range(3):
            attributes = {"gen_ai.operation.name": "execute_tool",
                          "gen_ai.tool.name": "get_weather", "gen_ai.tool.call.id": f"call_{i}"}
            if with_arguments:
                attributes["gen_ai.tool.call.arguments"] = arguments
            with tracer.start_as_current_span("execute_tool get_weather", attributes=attributes):
                pass
    return to_request(exporter.get_finished_spans())


def test_matched_tool_spans_without_arguments_say_so_once(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = summary(capsys, str(write_spans(tmp_path, genai_tools(with_arguments=False))))
    said = [line for line in out if line.startswith("arguments: not exported")]
    assert said == ["arguments: not exported (none on the tool spans: 3 genai); turn on the "
                    "instrumentation's content capture: README.md \"Turning on tool-argument "
                    "capture\", docs/conventions.md \"Frameworks\" (content sent as OTel log "
                    "events comes with the logs, not in this file)"]
    assert not any(line.startswith(HEADER) for line in out)  # matched: nothing to propose
    root = Path(__file__).resolve().parents[3]  # the line's pointers are headings there
    assert "\n### Turning on tool-argument capture\n" in (root / "README.md").read_text()
    assert "\n## Frameworks\n" in (root / "docs" / "conventions.md").read_text()


@pytest.mark.parametrize("variant", ["span arguments", "requested arguments", "no parameters"])
def test_no_such_line_when_the_arguments_are_there(
        variant: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Arguments on the tool spans, or only in the model's requests, or `{}` on the spans (a
    tool without parameters: exported, and empty)."""
    request = {
        "span arguments": lambda: genai_tools(with_arguments=True),
        "requested arguments": lambda: genai_tools(with_arguments=False, request_arguments=True),
        "no parameters": lambda: genai_tools(with_arguments=True, arguments="{}"),
    }[variant]()
    out = summary(capsys, str(write_spans(tmp_path, request)))
    assert not any(line.startswith("arguments: not exported") for line in out)
    shown = "get_weather({})" if variant == "no parameters" else 'get_weather({"city": "Paris"})'
    assert any(shown in line for line in out)


def test_the_documented_summary_is_what_it_prints(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/conventions.md shows the acme summary: it is the command's output, line for line."""
    docs = (Path(__file__).resolve().parents[3] / "docs" / "conventions.md").read_text()
    section = docs.split("### Starting from `tooltrail extract --summary`", 1)[1]
    shown = section.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    out = summary(capsys, str(write_spans(tmp_path, acme_request())))
    at = out.index(shown[0])
    assert out[at:at + len(shown)] == shown


def test_the_entry_quotes_whatever_the_names_are(tmp_path: Path) -> None:
    """Attribute and span names with YAML's and regular expressions' special characters: the
    entry still reads, and still extracts the calls."""
    tp, exporter = capture()
    tracer = tp.get_tracer("x-corp/agent kit")
    with tracer.start_as_current_span("run: 'main'"):
        for i, tool in enumerate(["a(b)", "c*d"]):
            with tracer.start_as_current_span(f"Tool: {tool}", attributes={
                    "x'args": json.dumps({"q": i}), "true": "yes",
                    "x #out": json.dumps({"result": i}), "x.call id": f"k{i}"}):
                pass
    request = to_request(exporter.get_finished_spans())
    report = file_report(write_spans(tmp_path, request), ExtractOptions())
    entry = report["unmatched_tools"]["entry"]
    path = tmp_path / "proposed.yaml"
    path.write_text(entry)
    batch = extract(request, ExtractOptions(conventions=read_conventions(path)))
    assert [(c.name, c.arguments, c.result, c.call_id) for c in batch.calls] == [
        ("a(b)", {"q": 0}, 0, "k0"), ("c*d", {"q": 1}, 1, "k1")]
