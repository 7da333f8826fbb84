"""`tooltrail extract`: span by span on a file, or a stored conversation, as text or JSON."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.collector.extract.test_extract_fixtures import CAPTURES, expected_turns, load
from tooltrail.collector.cli import main as tooltrail
from tooltrail.collector.extract import ExtractOptions, extract
from tooltrail.collector.extract_report import file_report
from tooltrail.collector.store.db import make_engine, migrate
from tooltrail.collector.store.persist import write_batches


def main(argv: list[str]) -> int:
    return tooltrail(["extract", *argv])


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    assert main([*argv, "--json"]) == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


def trajectory(report: dict[str, Any]) -> list[list[dict[str, Any]]]:
    (conversation,) = report["conversations"]
    return [
        [{"name": c["name"], "arguments": c["arguments"], "error": c["error"] is not None,
          "step": c["step"], "call_id": c["call_id"], "status": c["status"]}
         for c in turn["calls"]]
        for turn in conversation["turns"]
    ]


@pytest.mark.parametrize("suffix", ["pb", "json"])
def test_file_report_explains_every_span(capsys: pytest.CaptureFixture[str], suffix: str) -> None:
    path = CAPTURES / "adk" / f"spans.otlp.{suffix}"
    report = run_json(capsys, str(path))
    _, expected = load("adk")
    assert report["span_count"] == len(report["spans"]) == 18
    assert trajectory(report) == expected_turns(expected)
    by_name = {s["name"]: s for s in report["spans"]}
    merged = by_name["execute_tool (merged)"]
    assert merged["contributed"] == [] and merged["why_not"].startswith("skipped: ADK summary")
    root = report["spans"][0]
    assert root["depth"] == 0 and "turn root" in root["contributed"]
    assert any("conversation key 'conv-adk-0001'" in x for x in root["contributed"])
    tools = [s for s in report["spans"] if s["kind"] == "tool (genai)" and s["contributed"]]
    assert all(any(x.startswith("step ") for x in s["contributed"]) for s in tools)
    llm = [s for s in report["spans"] if s["kind"] == "llm"]
    assert any("answered by span" in x for s in llm for x in s["contributed"])
    assert any(s["why_not"] == "model response without tool calls" for s in llm)


def test_text_and_summary(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    gz = tmp_path / "spans.pb.gz"
    gz.write_bytes(gzip.compress((CAPTURES / "pydantic_ai_mcp" / "spans.otlp.pb").read_bytes()))
    assert main([str(gz)]) == 0
    text = capsys.readouterr().out
    assert "nested duplicate of span" in text and "conversation 'conv-pydantic-ai-mcp-0001'" in text
    assert "    (no tool call)" in text and "step 1  get_time({\"city\": \"Paris\"})" in text
    assert main([str(gz), "--summary"]) == 0
    summary = capsys.readouterr().out.splitlines()
    table = [line for line in summary if line[:8] in {"21bade02", "83faac57", "9b70e769",
                                                     "471968ce"}]
    assert len(table) == 35  # one line per span


def test_stored_conversation(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    migrate(url)
    engine = make_engine(url)
    request, expected = load("strands_latest")
    with engine.begin() as conn:
        write_batches(conn, [extract(request)], time.time())
    engine.dispose()
    report = run_json(capsys, "--database-url", url, "--conversation", "conv-strands-0001")
    assert trajectory(report) == expected_turns(expected)
    rows = report["spans"]
    assert len(rows) == 10  # 5 executions + 5 requests, one stored row each
    requests = [r for r in rows if r["kind"].startswith("llm request")]
    assert all(r["contributed"][1].startswith("answered by span") for r in requests)
    assert main(["--database-url", url, "--conversation", "conv-strands-0001"]) == 0
    assert "step 0  convert_currency" in capsys.readouterr().out


def test_bad_usage_and_bad_files(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main([]) == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main([str(bad)]) == 2
    assert main([str(tmp_path / "missing.pb")]) == 2
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    migrate(url)
    assert main(["--database-url", url, "--conversation", "nope"]) == 2
    assert "no conversation 'nope'" in capsys.readouterr().err


def test_runs_as_a_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tooltrail", "extract",
         str(CAPTURES / "vercel_ai" / "spans.otlp.json"), "--summary"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "conversation 'conv-vercel-ai-0001': 3 turn(s)" in done.stdout


def test_unknown_conversation_key_is_named_not_silently_split() -> None:
    """Vercel AI's session id is user-chosen metadata (`ai.telemetry.metadata.sessionId`):
    without it configured, each turn becomes a conversation of its own, and the report says
    so and names the attribute to configure."""
    path = CAPTURES / "vercel_ai" / "spans.otlp.pb"
    keys = file_report(path, ExtractOptions(conversation_keys=()))["conversation_keys"]
    assert keys["used"] == {} and keys["unkeyed"] == 3
    assert keys["candidates"] == {"ai.telemetry.metadata.sessionId": 1}
    assert "ai.telemetry.metadata.sessionId" in keys["warning"]
    configured = file_report(path, ExtractOptions())["conversation_keys"]
    assert configured == {"used": {"ai.telemetry.metadata.sessionId": 3}, "unkeyed": 0,
                          "candidates": {}, "warning": None}


def test_summary_names_the_key_used_and_never_mcp_session_id(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The MCP capture's server spans carry `mcp.session.id`: a transport session, never a
    conversation key nor a candidate for one."""
    assert main([str(CAPTURES / "pydantic_ai_mcp" / "spans.otlp.pb"), "--summary"]) == 0
    out = capsys.readouterr().out
    assert "conversation key: gen_ai.conversation.id (3 trace(s))" in out
    assert "key-like attributes" not in out and "WARNING" not in out
    request, _ = load("pydantic_ai_mcp")
    assert any(a.key == "mcp.session.id" for rs in request.resource_spans
               for ss in rs.scope_spans for s in ss.spans for a in s.attributes)


def test_mcp_session_id_is_never_a_conversation_key_even_configured() -> None:
    """The MCP server's spans, exported alone (a server in its own process sends its own
    requests), carry `mcp.session.id` and no conversation key: each stays keyed by its trace."""
    request, _ = load("pydantic_ai_mcp")
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            kept = [s for s in ss.spans if any(a.key == "mcp.session.id" for a in s.attributes)]
            del ss.spans[:]
            ss.spans.extend(kept)
    batch = extract(request, ExtractOptions(conversation_keys=("mcp.session.id",)))
    assert batch.traces
    assert all(t.conversation_key == t.trace_id for t in batch.traces)


def test_text_names_pending_and_rejected_calls(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(CAPTURES / "adk_approval" / "spans.otlp.pb")]) == 0
    out = capsys.readouterr().out
    assert out.count("pending (waiting for or refused by the user)") == 3
    assert out.count("rejected (waiting for or refused by the user)") == 1
    assert "requested, never executed" not in out


def test_an_approved_call_is_its_tool_span(capsys: pytest.CaptureFixture[str]) -> None:
    """Mastra resumes an approved call inside the asking trace: the `agent_run` span says the
    call waits, its tool span runs it. The tool span is the call (not a duplicate of the
    waiting row), and the waiting, refused and unanswered calls are named as such."""
    report = run_json(capsys, str(CAPTURES / "mastra_otel" / "spans.otlp.pb"))
    tools = [s for s in report["spans"] if s["name"] == "execute_tool delete_account"]
    assert len(tools) == 1
    assert not any("duplicate" in x for x in tools[0]["contributed"])
    assert any(x.startswith("step 0, answers request") for x in tools[0]["contributed"])
    approvals = [x for s in report["spans"] if s["kind"] == "approval"
                 for x in s["contributed"] if x.startswith("call ")]
    assert sorted(re.findall(r" \((pending|rejected)\)", " ".join(approvals))) == [
        "pending", "pending", "pending", "rejected"]


def test_json_lines_of_requests_read_as_check_and_ingest_read_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    """A Collector `file` exporter's output (one OTLP/JSON request a line), gzipped: read as
    one file, a trace split over lines is one trace, as the store would join it."""
    whole = json.loads((CAPTURES / "vercel_ai" / "spans.otlp.json").read_text())
    lines = []
    for rs in whole["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:  # one span a line
                lines.append(json.dumps({"resourceSpans": [
                    {**rs, "scopeSpans": [{**ss, "spans": [span]}]}]}))
    path = tmp_path / "export.jsonl.gz"
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n\n").encode()))
    split = run_json(capsys, str(path))
    one = run_json(capsys, str(CAPTURES / "vercel_ai" / "spans.otlp.json"))
    assert split["span_count"] == one["span_count"] == len(lines) > 1
    assert split["conversations"] == one["conversations"]


def test_a_span_the_receivers_refuse_is_rejected_alone(
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    """As on OTLP/HTTP (codec.decode_body): a span whose JSON does not map is rejected with
    the reason; the other spans are extracted."""
    data = json.loads((CAPTURES / "vercel_ai" / "spans.otlp.json").read_text())
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    total = sum(len(ss["spans"]) for rs in data["resourceSpans"] for ss in rs["scopeSpans"])
    spans[0]["startTimeUnixNano"] = {"not": "a number"}
    path = tmp_path / "bad_span.json"
    path.write_text(json.dumps(data))
    report = run_json(capsys, str(path))
    assert report["span_count"] == total
    (rejected,) = report["rejected"]
    assert rejected["span_id"] == spans[0]["spanId"] and "not a valid span" in rejected["reason"]
    assert len(report["spans"]) == total - 1
    assert main([str(path)]) == 0
    assert f"rejected: {spans[0]['traceId'][:8]} {spans[0]['spanId']}" in capsys.readouterr().out


def test_openai_messages_are_named_not_misread(
    capsys: pytest.CaptureFixture[str], tmp_path: Path,
) -> None:
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    assert main([str(path)]) == 2
    assert "openai carries no spans" in capsys.readouterr().err
