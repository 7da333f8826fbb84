"""Helpers for `tooltrail check` tests: write what real exporters write, run the CLI."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.spans import ToolStep, agent_turn, capture, to_request
from tooltrail.collector.cli import main
from tooltrail.collector.otlp_file import request_json

ROOT = Path(__file__).resolve().parents[3]
CAPTURES = ROOT / "tests" / "captures"


def otlp_json_line(request: ExportTraceServiceRequest) -> str:
    """One request as the Collector `file` exporter writes it (OTLP/JSON, hex ids, one line)."""
    return request_json(request)


def session_requests(conversation: str | None,
                     turns: Sequence[Sequence[ToolStep]]) -> list[ExportTraceServiceRequest]:
    """One request per turn, from the real SDK (tests.spans), as a BatchSpanProcessor sends."""
    tp, exporter = capture()
    out = []
    for tools in turns:
        agent_turn(tp, conversation, tools, agent="weather")
        out.append(to_request(exporter.get_finished_spans()))
        exporter.clear()
    tp.shutdown()
    return out


def write_jsonl(path: Path, requests: Sequence[ExportTraceServiceRequest]) -> Path:
    path.write_text("".join(otlp_json_line(r) + "\n" for r in requests))
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """`tooltrail ARGV…` in process: (exit code, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code, out, _ = run(capsys, *argv, "--format", "json")
    document: dict[str, Any] = json.loads(out)
    return code, document


def verdicts(document: dict[str, Any]) -> dict[tuple[str, str | None], str]:
    return {(c["expectation"], c["conversation"]): c["status"] for c in document["checks"]}
