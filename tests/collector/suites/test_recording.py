"""Recording spans to a file `tooltrail check` reads, and the inputs it must refuse clearly.

The recordings are made by the real OpenTelemetry SDK (TracerProvider, BatchSpanProcessor,
ConsoleSpanExporter) and tooltrail's own exporter, then read by the CLI in process.
"""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExportResult,
)

from tests.collector.suites.checkutil import run, run_json, verdicts
from tooltrail.collector.capture.record import agent_turn
from tooltrail.collector.otlp_file import OTLPJsonLinesSpanExporter

SUITE = """
name: recorded
expectations:
  - id: looks-up-the-order
    calls: [{name: lookup_order, arguments: {order_id: 42}}]
  - id: never-refunds
    forbid: [issue_refund]
"""


def _record(provider: TracerProvider, conversation: str, refund: bool) -> None:
    with agent_turn(conversation, agent="support", tracer_provider=provider) as turn:
        with turn.tool("lookup_order", {"order_id": 42}, call_id="c1") as call:
            call.result = {"status": "shipped"}
        if refund:
            turn.call("issue_refund", {"order_id": 42}, result="ok", call_id="c2")


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE)
    return path


def test_a_run_recorded_with_the_file_exporter_is_scored_by_check(
        tmp_path: Path, suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recording = tmp_path / "run.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPJsonLinesSpanExporter(recording)))
    _record(provider, "good-1", refund=False)
    _record(provider, "bad-1", refund=True)
    provider.shutdown()
    lines = recording.read_text().splitlines()
    assert lines and all("resourceSpans" in json.loads(line) for line in lines)
    code, document = run_json(capsys, "check", str(suite), str(recording))
    assert code == 1
    assert verdicts(document) == {
        ("looks-up-the-order", "good-1"): "pass", ("looks-up-the-order", "bad-1"): "pass",
        ("never-refunds", "good-1"): "pass", ("never-refunds", "bad-1"): "fail",
    }


def test_runs_append_to_one_file_and_lines_stay_whole_under_threads(tmp_path: Path) -> None:
    recording = tmp_path / "run.jsonl"
    for run_number in range(2):  # two processes' worth of runs, one after the other
        provider = TracerProvider()
        exporter = OTLPJsonLinesSpanExporter(recording)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        threads = [threading.Thread(target=_record, args=(provider, f"c{run_number}-{i}", True))
                   for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        provider.shutdown()
    lines = recording.read_text().splitlines()
    spans = [s for line in lines for r in json.loads(line)["resourceSpans"]
             for sc in r["scopeSpans"] for s in sc["spans"]]
    assert len(spans) == 2 * 8 * 3  # each turn: its agent span and two tool spans
    assert all(len(s["spanId"]) == 16 and len(s["traceId"]) == 32 for s in spans)
    assert all(isinstance(s["kind"], int) for s in spans)


def test_after_shutdown_exports_fail_and_a_stream_is_left_open() -> None:
    stream = io.StringIO()
    exporter = OTLPJsonLinesSpanExporter(stream)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    _record(provider, "s-1", refund=False)
    provider.shutdown()
    assert not stream.closed and stream.getvalue().count("\n") == 2
    assert exporter.export(()) is SpanExportResult.SUCCESS
    spans = [object()]  # never encoded: a closed exporter refuses before it reads
    assert exporter.export(spans) is SpanExportResult.FAILURE  # type: ignore[arg-type]


def test_an_unwritable_file_fails_the_export_without_raising(tmp_path: Path) -> None:
    exporter = OTLPJsonLinesSpanExporter(tmp_path / "missing-dir" / "run.jsonl")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    results: list[SpanExportResult] = []
    original = exporter.export
    exporter.export = lambda spans: results.append(original(spans)) or results[-1]  # type: ignore[method-assign]
    _record(provider, "s-1", refund=False)
    provider.shutdown()
    assert results and set(results) == {SpanExportResult.FAILURE}


def test_console_exporter_text_is_named_with_what_to_use_instead(
        tmp_path: Path, suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = io.StringIO()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=text)))
    _record(provider, "c-1", refund=False)
    provider.shutdown()
    console = tmp_path / "console.txt"
    console.write_text(text.getvalue())
    code, out, _ = run(capsys, "check", str(suite), str(console))
    assert code == 2
    line = next(line for line in out.splitlines() if line.startswith("ERROR"))
    assert "this is ConsoleSpanExporter text, not OTLP" in line
    assert "OTLPJsonLinesSpanExporter" in line and "`file` exporter" in line
    code, _, err = run(capsys, "extract", str(console))
    assert code == 2 and "ConsoleSpanExporter text" in err


@pytest.mark.parametrize(("content", "looks"), [
    (b"2026-12-04 INFO agent started\nmore log lines\n",
     "plain text (first line: '2026-12-04 INFO agent started')"),
    (b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), "binary data (first bytes 7f 45 4c 46"),
])
def test_a_file_of_no_known_format_says_what_it_looks_like(
        tmp_path: Path, suite: Path, capsys: pytest.CaptureFixture[str], content: bytes,
        looks: str) -> None:
    path = tmp_path / "input.log"
    path.write_bytes(content)
    code, out, _ = run(capsys, "check", str(suite), str(path))
    assert code == 2
    assert f"ERROR  {path}: {looks}" in out
    assert "protobuf" not in out.split("not an input tooltrail reads")[0]
    code, _, err = run(capsys, "extract", str(path))
    assert code == 2 and err.startswith(f"tooltrail extract: {looks}") and "Traceback" not in err


def test_an_empty_directory_and_an_empty_suite_are_usage_errors(
        tmp_path: Path, suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "recordings"
    (empty / ".hidden").mkdir(parents=True)
    (empty / ".hidden" / "x.jsonl").write_text("{}")
    code, out, err = run(capsys, "check", str(suite), str(empty))
    assert (code, out) == (2, "")
    assert err == f"tooltrail check: {empty}: directory holds no input file\n"
    nothing = tmp_path / "nothing.yaml"
    nothing.write_text("name: nothing\nexpectations: []\n")
    recording = tmp_path / "run.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPJsonLinesSpanExporter(recording)))
    _record(provider, "c-1", refund=False)
    provider.shutdown()
    code, out, err = run(capsys, "check", str(nothing), str(recording))
    assert (code, out) == (2, "")
    assert err == (f"tooltrail check: {nothing}: expectations: empty: a suite needs at least "
                   "one expectation\n")
