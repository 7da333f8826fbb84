"""What `tooltrail check` found, and its renderings: table, JSON document, GitHub annotations,
JUnit XML. The JSON document's schema is `REPORT_SCHEMA` (docs/suites.md)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from collector.suites.inputs import Read
from collector.suites.suite import Suite

SCHEMA_ID = "tooltrail.check/1"
EXIT_PASSED, EXIT_FAILED, EXIT_ERROR = 0, 1, 2


@dataclass(frozen=True, slots=True)
class Check:
    """One expectation × conversation (× scope) verdict; `result` is the REST result object."""

    expectation: str
    conversation: str | None
    status: str  # pass | fail | skipped | error (no verdict: scoring still pending)
    reason: str
    result: dict[str, Any] | None
    scores: tuple[float, float, float, float] | None = None  # P, R, F1, arguments (no result)
    turn: int | None = None  # the turn of a turn-scoped result (when `result` is not kept)

    @property
    def turn_index(self) -> int | None:
        if self.result is None:
            return self.turn
        scope = self.result.get("scope") or {}
        return scope.get("turn") if scope.get("kind") == "turn" else None

    @property
    def scope(self) -> str:
        turn = self.turn_index
        return "conversation" if turn is None else f"turn {turn}"


@dataclass(slots=True)
class Report:
    suite: Suite
    reads: list[Read]
    checks: list[Check]
    conversations: dict[str, Any]  # key → the conversation as GET /api/v1/conversations/{key}
    conversation_keys: list[str]
    unselected: list[str]
    origin: dict[str, str] = field(default_factory=dict)  # conversation key → input

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.status == "fail"]

    @property
    def unreadable(self) -> list[Read]:
        return [r for r in self.reads if r.error is not None]

    @property
    def exit_code(self) -> int:
        if self.unreadable or any(c.status == "error" for c in self.checks):
            return EXIT_ERROR
        return EXIT_FAILED if self.failed else EXIT_PASSED


def document(report: Report) -> dict[str, Any]:
    """The `--format json` document (REPORT_SCHEMA)."""
    statuses = [c.status for c in report.checks]
    return {
        "schema": SCHEMA_ID,
        "suite": {"name": report.suite.name, "source": report.suite.source},
        "exit_code": report.exit_code,
        "counts": {
            "expectations": len(report.suite.entries),
            "conversations": len(report.conversation_keys),
            "checks": len(statuses),
            "passed": statuses.count("pass"),
            "failed": statuses.count("fail"),
            "skipped": statuses.count("skipped"),
            "errors": statuses.count("error"),
            "unreadable_inputs": len(report.unreadable),
        },
        "inputs": [
            {"source": r.source, "format": r.format, "error": r.error,
             "conversations": sorted(r.conversations), "spans": r.spans,
             "rejected_spans": [{"span_id": s.span_id, "name": s.name, "reason": s.reason}
                                for s in r.rejected]}
            for r in report.reads
        ],
        "expectations": [
            {"id": e.id, "optional": e.optional, "definition": e.body}
            for e in report.suite.entries
        ],
        "checks": [
            {"expectation": c.expectation, "conversation": c.conversation, "scope": c.scope,
             "status": c.status, "reason": c.reason, "source": report.origin.get(
                 c.conversation or ""), "result": c.result}
            for c in report.checks
        ],
        "conversations": report.conversations,
        "unselected": report.unselected,
    }


def html(report: Report) -> str:
    """The `--html` report: every verdict with its aligned diff (collector.ui.report), and the
    outcomes with no verdict to draw (no conversation matched, pending) in its summary."""
    from collector.ui.report import render_report

    definitions = {e.id: e.expectation.to_dict() for e in report.suite.entries}
    items, other = [], []
    for c in report.checks:
        conversation = report.conversations.get(c.conversation or "")
        if c.result is not None and conversation is not None:
            items.append({"expectation": definitions[c.expectation], "conversation": conversation,
                          "result": c.result})
        else:
            other.append({"expectation": c.expectation, "conversation": c.conversation,
                          "status": c.status, "reason": c.reason})
    return render_report(f"tooltrail check: {report.suite.name}", items, other)


def _scores(check: Check) -> str:
    r = check.result
    scores = check.scores if r is None else (r["precision"], r["recall"], r["f1"],
                                             r["argument_score"])
    if scores is None:
        return ""
    return "P {:.2f} R {:.2f} F1 {:.2f} args {:.2f}".format(*scores)


def _row(c: Check) -> tuple[str, str, str, str, str]:
    where = (c.conversation or "-") + (f" [{c.scope}]" if c.scope != "conversation" else "")
    return c.status.upper(), c.expectation, where, _scores(c), c.reason


def table(report: Report) -> Iterator[str]:
    """The default output: one line per check, then the summary (lines made as printed)."""
    for read in report.unreadable:
        yield f"ERROR  {read.source}: {read.error}"
    head = ("STATUS", "EXPECTATION", "CONVERSATION", "SCORES", "REASON")
    widths = [len(h) for h in head[:4]]
    for c in report.checks:
        widths = [max(w, len(cell)) for w, cell in zip(widths, _row(c), strict=False)]
    for row in (head, *(_row(c) for c in report.checks)):
        cells = [row[i].ljust(widths[i]) for i in range(4)]
        yield "  ".join([*cells, row[4]]).rstrip()
    if report.unselected:
        yield f"not selected by any expectation: {', '.join(report.unselected)}"
    counts = document_counts(report)
    yield (f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped"
           + (f", {counts['errors']} without a verdict" if counts["errors"] else "")
           + f"; {len(report.conversation_keys)} conversation(s)"
           + (f"; {len(report.unreadable)} input(s) unreadable" if report.unreadable else ""))


def document_counts(report: Report) -> dict[str, int]:
    statuses = [c.status for c in report.checks]
    return {s: statuses.count(k) for s, k in
            (("passed", "pass"), ("failed", "fail"), ("skipped", "skipped"), ("errors", "error"))}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github(report: Report) -> list[str]:
    """GitHub Actions workflow commands: an error per failure and unreadable input, a notice
    per skipped check, then the table for the log."""
    lines = []
    suite_file = _escape_property(report.suite.source)
    for read in report.unreadable:
        lines.append(f"::error file={_escape_property(read.source)},title=unreadable input::"
                     f"{_escape_data(read.error or '')}")
    for c in report.checks:
        title = _escape_property(f"{c.expectation} × {c.conversation or '(none)'}")
        if c.status in ("fail", "error"):
            lines.append(f"::error file={suite_file},title={title}::{_escape_data(c.reason)}")
        elif c.status == "skipped":
            lines.append(f"::notice file={suite_file},title={title}::{_escape_data(c.reason)}")
    return [*lines, *table(report)]


def junit(report: Report) -> bytes:
    """JUnit XML: one testsuite per expectation, one testcase per conversation (× scope), the
    reason as the failure message and the differences in its body."""
    root = ET.Element("testsuites", name=report.suite.name)
    by_expectation: dict[str, list[Check]] = {}
    for c in report.checks:
        by_expectation.setdefault(c.expectation, []).append(c)
    for exp, checks in by_expectation.items():
        suite = ET.SubElement(
            root, "testsuite", name=exp, tests=str(len(checks)),
            failures=str(sum(c.status == "fail" for c in checks)),
            skipped=str(sum(c.status == "skipped" for c in checks)),
            errors=str(sum(c.status == "error" for c in checks)))
        for c in checks:
            name = (c.conversation or "(no conversation)") + (
                f" [{c.scope}]" if c.scope != "conversation" else "")
            case = ET.SubElement(suite, "testcase", name=name,
                                 classname=f"{report.suite.name}.{exp}")
            if c.status == "fail":
                failure = ET.SubElement(case, "failure", message=c.reason, type="tooltrail")
                differences = (c.result or {}).get("differences") or []
                failure.text = "\n".join(d.get("message") or json.dumps(d) for d in differences)
            elif c.status == "skipped":
                ET.SubElement(case, "skipped", message=c.reason)
            elif c.status == "error":
                ET.SubElement(case, "error", message=c.reason, type="pending")
    if report.unreadable:
        suite = ET.SubElement(root, "testsuite", name="inputs",
                              tests=str(len(report.unreadable)), failures="0",
                              errors=str(len(report.unreadable)), skipped="0")
        for read in report.unreadable:
            case = ET.SubElement(suite, "testcase", name=read.source, classname="inputs")
            ET.SubElement(case, "error", message=read.error or "", type="unreadable")
    tree = ET.ElementTree(root)
    ET.indent(tree)
    out: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return out


REPORT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://tooltrail.dev/schemas/check-1.json",
    "title": "tooltrail check report",
    "type": "object",
    "required": ["schema", "suite", "exit_code", "counts", "inputs", "expectations", "checks",
                 "conversations", "unselected"],
    "additionalProperties": False,
    "properties": {
        "schema": {"const": SCHEMA_ID},
        "suite": {"type": "object", "required": ["name", "source"],
                  "properties": {"name": {"type": "string"}, "source": {"type": "string"}}},
        "exit_code": {"enum": [0, 1, 2]},
        "counts": {
            "type": "object",
            "required": ["expectations", "conversations", "checks", "passed", "failed",
                         "skipped", "errors", "unreadable_inputs"],
            "additionalProperties": {"type": "integer", "minimum": 0},
        },
        "inputs": {"type": "array", "items": {
            "type": "object", "required": ["source", "format", "error", "conversations"],
            "properties": {
                "source": {"type": "string"},
                "format": {"type": ["string", "null"]},
                "error": {"type": ["string", "null"]},
                "conversations": {"type": "array", "items": {"type": "string"}},
                "spans": {"type": "integer"},
                "rejected_spans": {"type": "array"},
            }}},
        "expectations": {"type": "array", "items": {
            "type": "object", "required": ["id", "optional", "definition"],
            "properties": {"id": {"type": "string"}, "optional": {"type": "boolean"},
                           "definition": {"type": "object"}}}},
        "checks": {"type": "array", "items": {
            "type": "object",
            "required": ["expectation", "conversation", "scope", "status", "reason", "result"],
            "properties": {
                "expectation": {"type": "string"},
                "conversation": {"type": ["string", "null"]},
                "scope": {"type": "string"},
                "status": {"enum": ["pass", "fail", "skipped", "error"]},
                "reason": {"type": "string"},
                "source": {"type": ["string", "null"]},
                "result": {"oneOf": [{"type": "null"}, {
                    "type": "object",
                    "required": ["expectation", "expectation_version", "conversation", "scope",
                                 "passed", "score", "precision", "recall", "f1",
                                 "argument_score", "reason", "differences"],
                    "properties": {"passed": {"type": "boolean"},
                                   "differences": {"type": "array"}}}]},
            }}},
        "conversations": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["key", "turns"]}},
        "unselected": {"type": "array", "items": {"type": "string"}},
    },
}


def render(report: Report, fmt: str) -> Iterator[str]:
    """The output's lines."""
    if fmt == "json":
        yield json.dumps(document(report), indent=2, ensure_ascii=False)
    else:
        yield from github(report) if fmt == "github" else table(report)
