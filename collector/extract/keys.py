"""Which attribute keyed each conversation, and which others looked like one.

A conversation key the extractor does not know must not silently split a conversation into
one-turn pieces (each trace keyed by its own id): `tooltrail extract` reports, per request,
the attribute each trace's key came from, how many traces had none, and every span or
resource attribute whose name looks like a session, conversation or thread id that is not a
configured key — the one to pass as `--conversation-key` (setting `conversation_keys`).

`mcp.session.id` is never a conversation key, nor a candidate (`traces.NOT_CONVERSATION_KEYS`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tooltrail.collector.extract.otlp import BadSpan, iter_spans, span_view
from tooltrail.collector.extract.traces import (
    CONVERSATION_KEYS,
    NOT_CONVERSATION_KEYS,
    conversation_source,
)
from tooltrail.collector.model import TraceInfo

# the id's name at the end of the key: `session.id`, `sessionId`, `thread_id`, `chat-id`
LOOKS_LIKE_A_KEY = re.compile(r"(session|conversation|thread|chat)[._-]?id$", re.IGNORECASE)


def key_report(
    request: ExportTraceServiceRequest, traces: Sequence[TraceInfo], extra_keys: Sequence[str]
) -> dict[str, Any]:
    """`used` (attribute → traces keyed by it), `unkeyed` (traces keyed by their own id),
    `candidates` (unconfigured key-like attribute → distinct values seen), and a `warning`
    when traces went unkeyed while a candidate was there."""
    known = {*CONVERSATION_KEYS, *extra_keys}
    key_of = {t.trace_id: t.conversation_key for t in traces}
    source: dict[str, str] = {}
    values: dict[str, set[str]] = {}
    for span, resource, scope in iter_spans(request):
        try:
            view = span_view(span, resource, scope)
        except BadSpan:
            continue  # rejected, and reported as such, by extraction
        found = conversation_source(view, extra_keys)
        if found is not None and found[0] == key_of.get(view.trace_id):
            source.setdefault(view.trace_id, found[1])
        for where, attrs in (("", view.attributes), ("resource ", view.resource)):
            for name, value in attrs.items():
                if (name not in known and name not in NOT_CONVERSATION_KEYS
                        and LOOKS_LIKE_A_KEY.search(name) and str(value).strip()):
                    values.setdefault(where + name, set()).add(str(value))
    used: dict[str, int] = {}
    for attribute in source.values():
        used[attribute] = used.get(attribute, 0) + 1
    unkeyed = sum(1 for t in traces if t.trace_id not in source)
    candidates = {name: len(v) for name, v in sorted(values.items())}
    warning = None
    if unkeyed and candidates:
        names = ", ".join(n.removeprefix("resource ") for n in candidates)
        warning = (f"{unkeyed} trace(s) carry no known conversation key and each became a "
                   f"conversation of its own; key-like attribute(s) seen: {names} "
                   "(pass --conversation-key NAME, setting conversation_keys)")
    return {"used": used, "unkeyed": unkeyed, "candidates": candidates, "warning": warning}


def render_keys(report: dict[str, Any]) -> list[str]:
    """The key report as text lines."""
    used = ", ".join(f"{k} ({n} trace(s))" for k, n in report["used"].items()) or "none"
    lines = [f"conversation key: {used}; {report['unkeyed']} trace(s) keyed by their trace id"]
    if report["candidates"]:
        lines.append("  key-like attributes not configured: " + ", ".join(
            f"{k} ({n} value(s))" for k, n in report["candidates"].items()))
    if report["warning"]:
        lines.append(f"  WARNING: {report['warning']}")
    return lines
