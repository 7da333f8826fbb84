"""`tooltrail extract`: what each span contributed (or why not), and the resulting trajectory.

    tooltrail extract FILE [--summary] [--json]        an OTLP/JSON or OTLP/protobuf request,
                                                       or ADK session events (JSON Lines,
                                                       a JSON array, kagent rows)
    tooltrail extract --database-url URL --conversation KEY [--summary] [--json]

A file is extracted exactly as the receivers would (same options); a stored conversation shows
its stored rows (tool executions and model requests) and what reconciliation made of them.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import gzip
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from collector.capture import adk_events
from collector.clihelp import HelpFormatter
from collector.extract import DEFAULT_CONVERSATION_KEYS, ExtractOptions, analyze, reconcile
from collector.extract.analyze import SpanNote, describe
from collector.extract.approvals import UNEXECUTED
from collector.extract.keys import key_report, render_keys
from collector.extract.reconcile import place, settle
from collector.model import Batch, ToolCall

WIDTH = 120


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tooltrail extract", description=__doc__,
                                formatter_class=HelpFormatter)
    p.add_argument("file", nargs="?", help="OTLP request: .json (OTLP/JSON) or protobuf (.gz ok)")
    p.add_argument("--database-url", help="read a stored conversation instead of a file")
    p.add_argument("--conversation", help="the stored conversation's key (with FILE: the key "
                   "of ADK events that carry no session id; default the file's name)")
    p.add_argument("--summary", action="store_true", help="one line per span, then trajectory")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--conversation-key", action="append", dest="keys", metavar="KEY",
                   help="an extra attribute key carrying the conversation id (repeatable)")
    p.add_argument("--keep-plumbing", action="store_true", help="keep framework plumbing calls")
    return p


def main(argv: list[str]) -> int:
    """Entry point (wired in collector.cli); returns the exit code."""
    args = parser().parse_args(argv)
    try:
        if args.file and not args.database_url:
            options = ExtractOptions((*DEFAULT_CONVERSATION_KEYS, *(args.keys or ())),
                                     keep_plumbing=args.keep_plumbing)
            report = file_report(Path(args.file), options, args.conversation)
        elif args.database_url and args.conversation and not args.file:
            report = stored_report(args.database_url, args.conversation)
        else:
            print("tooltrail extract: give FILE, or --database-url URL --conversation KEY",
                  file=sys.stderr)
            return 2
    except (OSError, ValueError, LookupError) as exc:
        print(f"tooltrail extract: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print("\n".join(render(report, summary=args.summary)))
    return 0


ID_KEYS = ("traceId", "spanId", "parentSpanId")


def read_request(path: Path) -> ExportTraceServiceRequest:
    """An ExportTraceServiceRequest from a file of OTLP/JSON or OTLP/protobuf (gzip ok)."""
    body = path.read_bytes()
    if body[:2] == b"\x1f\x8b":
        body = gzip.decompress(body)
    request = ExportTraceServiceRequest()
    try:
        if body.lstrip()[:1] == b"{":
            json_format.ParseDict(_hex_ids_to_base64(json.loads(body)), request,
                                  ignore_unknown_fields=True)
        else:
            request.ParseFromString(body)
    except (ValueError, DecodeError, json_format.ParseError) as exc:
        raise ValueError(f"{path}: not an OTLP/JSON or OTLP/protobuf trace request: {exc}") from exc
    return request


def _hex_ids_to_base64(value: Any) -> Any:
    """OTLP/JSON writes ids as hex; protobuf's JSON mapping wants base64."""
    if isinstance(value, list):
        return [_hex_ids_to_base64(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        if key in ID_KEYS and isinstance(item, str) and item:
            with contextlib.suppress(ValueError):  # else it is base64 already
                item = base64.b64encode(bytes.fromhex(item)).decode()
        out[key] = _hex_ids_to_base64(item)
    return out


def file_report(
    path: Path, options: ExtractOptions, conversation: str | None = None
) -> dict[str, Any]:
    """Extract a file span by span (ADK events: event by event), then reconcile each turn."""
    body = path.read_bytes()
    if adk_events.looks_like_events(body):
        reading = adk_events.read_events(body, conversation=conversation, fallback=path.stem,
                                         options=options)
        return {"source": str(path), "format": "adk_events", "event_count": len(reading.events),
                "events": adk_events.notes_as_rows(reading.events),
                "closing": reading.closing_line(),
                "conversations": trajectory(reading.batch, {})}
    request = read_request(path)
    analysis = analyze(request, options, explain=True)
    batch = analysis.batch
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
        "conversation_keys": key_report(request, batch.traces, options.conversation_keys),
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
    from sqlalchemy import select

    from collector.extract.reconcile import call_from_row
    from collector.store import queries
    from collector.store.db import make_engine
    from collector.store.tables import tool_calls

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            conversation = queries.get_conversation(conn, key)
            if conversation is None:
                raise LookupError(f"no conversation {key!r} in the store")
            turns = queries.conversation_turns(conn, conversation["id"])
            rows = conn.execute(
                select(tool_calls).where(tool_calls.c.conversation_id == conversation["id"])
                .order_by(tool_calls.c.start_ns, tool_calls.c.span_id)
            ).all()
    finally:
        engine.dispose()
    fates: dict[str, str] = {}
    stored = [call_from_row(r._mapping) for r in rows]
    by_turn: dict[Any, list[ToolCall]] = {}
    for row, call in zip(rows, stored, strict=True):
        by_turn.setdefault(row.turn_id, []).append(call)
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
