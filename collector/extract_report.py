"""What `tooltrail extract` reports: what each span contributed (or why not), and the resulting
trajectory; pure rendering of that report as text. The command itself is in collector.cli.

A file is read as `tooltrail check` reads it (collector.suites.inputs: OTLP/protobuf, OTLP/JSON,
JSON Lines of OTLP/JSON requests, ADK session events; gzip ok), decoded by the receivers'
decoder and extracted with the receivers' options; a stored conversation shows its stored rows
(tool executions and model requests, collector.store.extraction) and what reconciliation made
of them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tooltrail.collector.capture import adk_events
from tooltrail.collector.extract import ExtractOptions, analyze, reconcile
from tooltrail.collector.extract.analyze import SpanNote, describe
from tooltrail.collector.extract.approvals import UNEXECUTED
from tooltrail.collector.extract.keys import key_report, render_keys
from tooltrail.collector.extract.reconcile import call_from_row, place, settle
from tooltrail.collector.extract.suggest import render_suggestion, suggestion
from tooltrail.collector.ingest import with_refused
from tooltrail.collector.model import Batch, ToolCall
from tooltrail.collector.suites import inputs

WIDTH = 120


def read_request(path: Path) -> inputs.Decoded:
    """The OTLP trace request of a file, with the spans its decoding refused, decoded as a
    receiver would; raises ValueError (InputError, InvalidPayload, PayloadTooLarge) or OSError."""
    return _otlp(path, *inputs.load(str(path)))


def _otlp(path: Path, fmt: str, data: bytes) -> inputs.Decoded:
    """The requests of a file as one (a trace may span several lines of JSON Lines)."""
    if fmt not in inputs.OTLP_REQUESTS:
        raise inputs.InputError(f"{path}: {fmt} carries no spans: `tooltrail check` reads it")
    decoded = inputs.OTLP_REQUESTS[fmt](data)
    request, refused = next(decoded)
    for more, more_refused in decoded:
        request.MergeFrom(more)  # appends its resource_spans
        refused = [*refused, *more_refused]
    return request, refused


def file_report(
    path: Path, options: ExtractOptions, conversation: str | None = None
) -> dict[str, Any]:
    """Extract a file span by span (ADK events: event by event), then reconcile each turn.
    The requests of a JSON Lines file are read as one (a trace may span several lines)."""
    fmt, data = inputs.load(str(path))
    if fmt == "adk-events":
        reading = adk_events.read_events(data, conversation=conversation, fallback=path.stem,
                                         options=options)
        return {"source": str(path), "format": "adk_events", "event_count": len(reading.events),
                "events": adk_events.notes_as_rows(reading.events),
                "closing": reading.closing_line(),
                "conversations": trajectory(reading.batch, {})}
    request, refused = _otlp(path, fmt, data)
    analysis = analyze(request, options, explain=True)
    batch = with_refused(analysis.batch, refused)
    fates: dict[str, str] = {}
    conversations = trajectory(batch, fates)
    notes = {n.span_id: n for n in analysis.spans}
    for call in batch.calls:
        span, _, j = call.span_id.partition("#")
        note = notes.get(span)
        if note is None or call.span_id not in fates:
            continue
        if j.isdigit() and int(j) < len(note.notes):  # request j is the span's note j
            note.notes[int(j)] += f": {fates[call.span_id]}"
        else:
            note.notes.append(fates[call.span_id])
    return {
        "source": str(path),
        "span_count": batch.span_count,
        "spans": [span_row(n, depth) for depth, n in ordered(analysis.spans)],
        "rejected": [vars_of(r) for r in batch.rejected],
        "unextracted": [vars_of(r) for r in batch.unextracted],
        "conversation_keys": key_report(request, batch.traces, options.keys()),
        "unmatched_tools": suggestion(request, batch.calls, options.conventions, options.keys()),
        "conversations": conversations,
    }


def trajectory(batch: Batch, fates: dict[str, str]) -> list[dict[str, Any]]:
    """Conversations → turns (start order) → reconciled calls."""
    by_key: dict[str, list[Any]] = {}
    for info in sorted(batch.traces, key=lambda t: t.start_ns):
        by_key.setdefault(info.conversation_key, []).append(info)
    out = []
    for key, infos in by_key.items():
        turns = []
        placed = settle([place([c for c in batch.calls if c.trace_id == info.trace_id], fates)
                         for info in infos])
        for info, calls in zip(infos, placed, strict=True):
            turns.append({"trace_id": info.trace_id, "turn_key": info.turn_key,
                          "start_ns": info.start_ns, "has_agent_root": info.has_agent_root,
                          "calls": [call_row(p.resolved()) for p in calls]})
        out.append({"key": key, "turns": turns})
    return out


def stored_report(url: str, key: str) -> dict[str, Any]:
    """A stored conversation: its rows, what reconciliation made of each, and its trajectory."""
    from tooltrail.collector.conversation_view import shown_turns
    from tooltrail.collector.store.extraction import stored_conversation

    held = stored_conversation(url, key)
    rows, turns = held.rows, shown_turns(held.turns, held.rows)
    fates: dict[str, str] = {}
    stored = [call_from_row(r) for r in rows]
    by_turn: dict[Any, list[ToolCall]] = {}
    for row, call in zip(rows, stored, strict=True):
        by_turn.setdefault(row["turn_id"], []).append(call)
    for calls in by_turn.values():
        reconcile(calls, fates)
    spans = [
        {"trace_id": c.trace_id, "span_id": c.span_id, "parent_span_id": c.parent_span_id,
         "depth": 0, "name": c.name,
         "kind": ("tool" if c.executed else "llm request") + f" ({c.convention})",
         "contributed": [("call " if c.executed else "request ") + describe(c),
                         fates.get(c.span_id, "")], "why_not": ""}
        for c in stored
    ]
    return {
        "source": f"stored conversation {key!r} (only spans that left a row are stored)",
        "span_count": len(rows),
        "spans": spans, "rejected": [], "unextracted": [],
        "conversations": [{"key": key, "turns": [
            {"trace_id": t["trace_id"], "turn_key": t["turn_key"], "start_ns": t["start_ns"],
             "has_agent_root": t["has_agent_root"],
             "calls": [stored_call(c) for c in t["tool_calls"]]} for t in turns]}],
    }


def ordered(notes: Sequence[SpanNote]) -> list[tuple[int, SpanNote]]:
    """(depth, span) per trace, each trace depth-first in start order (orphans as roots)."""
    by_parent: dict[tuple[str, str | None], list[SpanNote]] = {}
    ids = {(n.trace_id, n.span_id) for n in notes}
    for n in sorted(notes, key=lambda n: (n.start_ns, n.span_id)):
        parent = n.parent_span_id if (n.trace_id, n.parent_span_id) in ids else None
        by_parent.setdefault((n.trace_id, parent), []).append(n)
    out: list[tuple[int, SpanNote]] = []

    def visit(n: SpanNote, depth: int) -> None:
        out.append((depth, n))
        for child in by_parent.get((n.trace_id, n.span_id), []):
            visit(child, depth + 1)

    for (_, parent), roots in by_parent.items():
        if parent is None:
            for r in roots:
                visit(r, 0)
    return out


def span_row(n: SpanNote, depth: int) -> dict[str, Any]:
    return {"trace_id": n.trace_id, "span_id": n.span_id, "parent_span_id": n.parent_span_id,
            "depth": depth, "name": n.name, "kind": n.kind, "contributed": n.notes,
            "why_not": n.why_not}


def call_row(c: ToolCall) -> dict[str, Any]:
    return {"name": c.name, "arguments": c.arguments, "result": c.result, "error": c.error,
            "call_id": c.call_id, "step": c.step, "executed": c.executed, "span_id": c.span_id,
            "convention": c.convention, "source": c.source, "status": c.status}


def stored_call(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row.get(k) for k in ("name", "arguments", "result", "error", "call_id", "step",
                                    "executed", "span_id", "convention", "source", "status")}


def vars_of(span: Any) -> dict[str, Any]:
    return {"trace_id": span.trace_id, "span_id": span.span_id, "name": span.name,
            "reason": span.reason}


def render(report: dict[str, Any], *, summary: bool) -> list[str]:
    """The report as text: the span (or ADK event) table, then the trajectory."""
    if report.get("format") == "adk_events":
        return [f"{report['source']}: {report['event_count']} ADK events", "",
                *adk_events.table(report["events"], report["closing"]),
                *render_conversations(report, summary=summary)]
    lines = [f"{report['source']}: {report['span_count']} spans", "",
             f"{'TRACE':8}  {'SPAN':16}  {'KIND':22}  {'SPAN NAME':34}  CONTRIBUTED (or why not)"]
    for s in report["spans"]:
        said = [x for x in s["contributed"] if x] + ([f"- {s['why_not']}"] if s["why_not"] else [])
        said = said or ["-"]
        name = ("  " * s["depth"] + s["name"])[:34]
        head = f"{s['trace_id'][:8]}  {s['span_id']:16}  {s['kind'][:22]:22}  {name:34}"
        if summary:
            lines.append(f"{head}  {'; '.join(said)}"[:WIDTH * 2])
        else:
            lines.append(f"{head}  {said[0]}")
            lines.extend(f"{'':86}{x}" for x in said[1:])
    for kind in ("rejected", "unextracted"):
        lines.extend(f"{kind}: {r['trace_id'][:8]} {r['span_id']} {r['name']!r}: {r['reason']}"
                     for r in report[kind])
    if "conversation_keys" in report:  # a file's report (a stored one has its key already)
        lines += ["", *render_keys(report["conversation_keys"])]
    if report.get("unmatched_tools"):  # a file's report: its spans are all there
        lines += render_suggestion(report["unmatched_tools"])
    return lines + render_conversations(report, summary=summary)


def render_conversations(report: dict[str, Any], *, summary: bool) -> list[str]:
    """The trajectory part of a report: conversations → turns → calls."""
    lines: list[str] = []
    for conversation in report["conversations"]:
        lines += ["", f"conversation {conversation['key']!r}: {len(conversation['turns'])} turn(s)"]
        for i, turn in enumerate(conversation["turns"]):
            root = "" if turn["has_agent_root"] else " (agent root not seen)"
            lines.append(f"  turn {i}  trace {turn['trace_id']}{root}")
            if not turn["calls"]:
                lines.append("    (no tool call)")
            for c in turn["calls"]:
                status = "ERROR " + str(c["error"])[:60] if c["error"] else "ok"
                if c.get("status") in UNEXECUTED:
                    status = f"{c['status']} (waiting for or refused by the user)"
                elif not c["executed"]:
                    status = "requested, never executed"
                args = json.dumps(c["arguments"], ensure_ascii=False, default=str)
                text = f"    step {c['step']}  {c['name']}({args})  id={c['call_id']}  {status}"
                lines.append(text if not summary else text[:WIDTH * 2])
    return lines

