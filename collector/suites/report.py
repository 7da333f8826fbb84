"""What `tooltrail check` found, and its renderings: table, JSON document, GitHub annotations,
JUnit XML, HTML. The JSON document's schema is `REPORT_SCHEMA` (docs/suites.md).

Every rendering is written as it is made, from the report's checks read in order (a `Spool`
re-read, for `check` without a server), so memory never holds every result at once."""

from __future__ import annotations

import json
import marshal
import struct
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from xml.sax.saxutils import escape, quoteattr

from tooltrail.collector.suites.inputs import Read
from tooltrail.collector.suites.suite import Suite

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


def dump(value: Any) -> bytes:
    """`value` (JSON-like: what `load` gives back is equal to it, NaN, integers past 64 bits and
    lone surrogates included, as the outputs must show what was scored) for a file this process
    reads back: marshal, faster both ways than json (README, "Measured")."""
    return marshal.dumps(value)


def load(data: bytes) -> Any:
    """A value `dump` wrote (in this process: never bytes from elsewhere)."""
    return marshal.loads(data)


_SIZE = struct.Struct("<I")  # before each record of a spool file: its length


class Spool:
    """Checks written as they are made, one `dump`ed record each in a file per expectation; read
    back (any number of times) in suite order, each file in the order it was written. Only
    the tally stays in memory."""

    def __init__(self, directory: Path, expectations: Sequence[str]) -> None:
        self.paths = {e: directory / f"checks-{i}.spool" for i, e in enumerate(expectations)}
        self.files: dict[str, IO[bytes]] = {}
        self.tally: dict[str, Counter[str]] = {e: Counter() for e in expectations}

    def __enter__(self) -> Spool:
        self.files = {e: path.open("wb") for e, path in self.paths.items()}
        return self

    def __exit__(self, *_: object) -> None:
        for out in self.files.values():
            out.close()

    def add(self, c: Check) -> None:
        data = dump((c.conversation, c.status, c.reason, c.result, c.scores, c.turn))
        self.files[c.expectation].write(_SIZE.pack(len(data)) + data)
        self.tally[c.expectation][c.status] += 1

    def __iter__(self) -> Iterator[Check]:
        for expectation, path in self.paths.items():
            with path.open("rb") as records:
                while header := records.read(_SIZE.size):
                    (size,) = _SIZE.unpack(header)
                    conv, status, reason, result, scores, turn = load(records.read(size))
                    yield Check(expectation, conv, status, reason, result, scores, turn)


def tally(checks: Iterable[Check]) -> dict[str, Counter[str]]:
    """expectation → status → how many checks."""
    out: dict[str, Counter[str]] = {}
    for c in checks:
        out.setdefault(c.expectation, Counter())[c.status] += 1
    return out


@dataclass(slots=True)
class Report:
    suite: Suite
    reads: list[Read]
    checks: Iterable[Check]  # in report order; iterable again (a list, or a Spool)
    conversations: Mapping[str, Any]  # key → the conversation as GET /api/v1/conversations/{key}
    conversation_keys: list[str]
    unselected: list[str]
    origin: dict[str, str] = field(default_factory=dict)  # conversation key → input
    tally: dict[str, Counter[str]] | None = None  # expectation → status → count (of `checks`)

    def __post_init__(self) -> None:
        if self.tally is None:
            self.tally = tally(self.checks)

    @property
    def statuses(self) -> Counter[str]:
        return sum((self.tally or {}).values(), Counter())

    @property
    def unreadable(self) -> list[Read]:
        return [r for r in self.reads if r.error is not None]

    @property
    def exit_code(self) -> int:
        if self.unreadable or self.statuses["error"]:
            return EXIT_ERROR
        return EXIT_FAILED if self.statuses["fail"] else EXIT_PASSED


def document(report: Report) -> Iterator[str]:
    """The `--format json` document (REPORT_SCHEMA) in pieces, as it is written: one check
    and one conversation a line."""
    statuses = report.statuses
    head = {
        "schema": SCHEMA_ID,
        "suite": {"name": report.suite.name, "source": report.suite.source},
        "exit_code": report.exit_code,
        "counts": {
            "expectations": len(report.suite.entries),
            "conversations": len(report.conversation_keys),
            "checks": sum(statuses.values()),
            "passed": statuses["pass"],
            "failed": statuses["fail"],
            "skipped": statuses["skipped"],
            "errors": statuses["error"],
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
    }
    yield json.dumps(head, indent=2, ensure_ascii=False)[:-2] + ",\n"
    checks = ({"expectation": c.expectation, "conversation": c.conversation, "scope": c.scope,
               "status": c.status, "reason": c.reason,
               "source": report.origin.get(c.conversation or ""), "result": c.result}
              for c in report.checks)
    yield from _members("checks", "[", (_json(c) for c in checks), "]")
    yield ",\n"
    yield from _members("conversations", "{", (
        f"{_json(k)}: {_json(v)}" for k, v in report.conversations.items()), "}")
    yield f',\n  "unselected": {_json(report.unselected)}\n}}\n'


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _members(name: str, opening: str, items: Iterable[str], closing: str) -> Iterator[str]:
    """`"name": [` or `{`, the items one a line, then the closing bracket."""
    yield f'  "{name}": {opening}'
    first = True
    for item in items:
        yield ("\n    " if first else ",\n    ") + item
        first = False
    yield closing if first else f"\n  {closing}"


def write_html(report: Report, out: IO[str]) -> None:
    """The `--html` report, written as it is rendered: every verdict with its aligned diff
    (collector.ui.report), and the outcomes with no verdict to draw (no conversation matched,
    pending) in its summary."""
    from tooltrail.collector.ui.report import stream_report

    definitions = {e.id: e.expectation.to_dict() for e in report.suite.entries}

    def drawn(c: Check) -> bool:
        return c.result is not None and c.conversation in report.conversations

    def items() -> Iterator[Mapping[str, Any]]:
        for c in report.checks:
            if drawn(c):
                yield {"expectation": definitions[c.expectation],
                       "conversation": report.conversations[c.conversation or ""],
                       "result": c.result}

    other = [{"expectation": c.expectation, "conversation": c.conversation,
              "status": c.status, "reason": c.reason} for c in report.checks if not drawn(c)]
    for chunk in stream_report(f"tooltrail check: {report.suite.name}", items, other,
                               total=sum(report.statuses.values()),
                               passed=report.statuses["pass"]):
        out.write(chunk)


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


UNSELECTED_SHOWN = 5  # keys named on the table's "not selected" line; JSON lists them all


def unselected_line(keys: Sequence[str]) -> str:
    """One short line whatever their number: the first few keys and how many more."""
    shown = ", ".join(keys[:UNSELECTED_SHOWN])
    more = len(keys) - UNSELECTED_SHOWN
    return (f"not selected by any expectation: {shown}"
            + (f" and {more:,} more (--format json lists them)" if more > 0 else ""))


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
        yield unselected_line(report.unselected)
    counts = report.statuses
    yield (f"{counts['pass']} passed, {counts['fail']} failed, {counts['skipped']} skipped"
           + (f", {counts['error']} without a verdict" if counts["error"] else "")
           + f"; {len(report.conversation_keys)} conversation(s)"
           + (f"; {len(report.unreadable)} input(s) unreadable" if report.unreadable else ""))


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github(report: Report) -> Iterator[str]:
    """GitHub Actions workflow commands: an error per failure and unreadable input, a notice
    per skipped check, then the table for the log."""
    suite_file = _escape_property(report.suite.source)
    for read in report.unreadable:
        yield (f"::error file={_escape_property(read.source)},title=unreadable input::"
               f"{_escape_data(read.error or '')}")
    for c in report.checks:
        title = _escape_property(f"{c.expectation} × {c.conversation or '(none)'}")
        if c.status in ("fail", "error"):
            yield f"::error file={suite_file},title={title}::{_escape_data(c.reason)}"
        elif c.status == "skipped":
            yield f"::notice file={suite_file},title={title}::{_escape_data(c.reason)}"
    yield from table(report)


def _element(name: str, attributes: dict[str, str], text: str | None = None,
             close: bool = True) -> str:
    attrs = "".join(f" {k}={quoteattr(v)}" for k, v in attributes.items())
    if not close:
        return f"<{name}{attrs}>"
    return f"<{name}{attrs} />" if text is None else f"<{name}{attrs}>{escape(text)}</{name}>"


def junit(report: Report) -> Iterator[str]:
    """JUnit XML, as it is written: one testsuite per expectation, one testcase per
    conversation (× scope), the reason as the failure message and the differences in its
    body."""
    yield "<?xml version='1.0' encoding='utf-8'?>\n"
    yield _element("testsuites", {"name": report.suite.name}, close=False) + "\n"
    current = None
    for c in report.checks:
        if c.expectation != current:
            if current is not None:
                yield "  </testsuite>\n"
            current = c.expectation
            counts = (report.tally or {})[current]
            yield "  " + _element("testsuite", {
                "name": current, "tests": str(sum(counts.values())),
                "failures": str(counts["fail"]), "skipped": str(counts["skipped"]),
                "errors": str(counts["error"])}, close=False) + "\n"
        name = (c.conversation or "(no conversation)") + (
            f" [{c.scope}]" if c.scope != "conversation" else "")
        case = {"name": name, "classname": f"{report.suite.name}.{c.expectation}"}
        if c.status == "fail":
            differences = (c.result or {}).get("differences") or []
            body = "\n".join(d.get("message") or json.dumps(d) for d in differences)
            inner = _element("failure", {"message": c.reason, "type": "tooltrail"}, body)
        elif c.status == "skipped":
            inner = _element("skipped", {"message": c.reason})
        elif c.status == "error":
            inner = _element("error", {"message": c.reason, "type": "pending"})
        else:
            yield "    " + _element("testcase", case) + "\n"
            continue
        yield f"    {_element('testcase', case, close=False)}\n      {inner}\n    </testcase>\n"
    if current is not None:
        yield "  </testsuite>\n"
    if report.unreadable:
        count = str(len(report.unreadable))
        yield "  " + _element("testsuite", {"name": "inputs", "tests": count, "failures": "0",
                                            "errors": count, "skipped": "0"}, close=False) + "\n"
        for read in report.unreadable:
            opening = _element("testcase", {"name": read.source, "classname": "inputs"},
                               close=False)
            error = _element("error", {"message": read.error or "", "type": "unreadable"})
            yield f"    {opening}\n      {error}\n    </testcase>\n"
        yield "  </testsuite>\n"
    yield "</testsuites>\n"


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
    """The output's lines (`json`: pieces of the document, each to be written as it comes)."""
    if fmt == "json":
        yield from document(report)
    else:
        for line in github(report) if fmt == "github" else table(report):
            yield line + "\n"
