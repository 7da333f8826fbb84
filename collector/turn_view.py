"""Each turn as it happened, for the conversation page: durations from the stored rows, and
from the span archive (where it is kept) the turn's spans as a waterfall, its model steps with
the calls each requested, the user's message and the agent's final answer (GenAI content
attributes, present only with content capture on).

Read-only and above the store: rows come from `collector.store.archive`; nothing here scores
or extracts. Content is read from the GenAI message attributes (`gen_ai.input.messages`,
`gen_ai.output.messages`) and Pydantic AI's `final_result`; log-event content is not archived,
so a turn whose content arrived only as log records shows none.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Span
from sqlalchemy import Connection

from tooltrail.collector.extract.otlp import any_value
from tooltrail.collector.store import archive

MODEL_OPERATIONS = {"chat", "text_completion", "generate_content"}
READ = frozenset({"final_result", "gen_ai.input.messages", "gen_ai.output.messages",
                  "gen_ai.operation.name"})  # the only attributes a turn's detail reads
MAX_SPANS = 200  # the waterfall of a huge turn is cut here (and says so)


@dataclass
class Bar:
    name: str
    depth: int
    offset: float  # percent of the turn
    width: float
    duration_ms: float
    error: bool


@dataclass
class ModelStep:
    name: str
    duration_ms: float
    requested: list[str]
    text: str | None


@dataclass
class TurnDetail:
    duration_ms: float | None
    archived: bool
    user_message: str | None = None
    final_answer: str | None = None
    steps: list[ModelStep] = field(default_factory=list)
    bars: list[Bar] = field(default_factory=list)
    cut: int = 0  # spans left out of the waterfall


def ms(start_ns: int, end_ns: int) -> float | None:
    return (end_ns - start_ns) / 1e6 if start_ns and end_ns >= start_ns else None


def _messages(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def _text(message: dict[str, Any]) -> str | None:
    parts = message.get("parts")
    if isinstance(parts, list):
        texts = [str(p.get("content")) for p in parts
                 if isinstance(p, dict) and p.get("type") == "text" and p.get("content")]
        return "\n".join(texts) or None
    content = message.get("content")
    return content if isinstance(content, str) and content else None


def _requested(messages: list[dict[str, Any]]) -> list[str]:
    out = []
    for m in messages:
        for p in m.get("parts") or []:
            if isinstance(p, dict) and p.get("type") == "tool_call" and p.get("name"):
                out.append(str(p["name"]))
    return out


def _spans_by_trace(conn: Connection, conversation_id: int) -> dict[str, list[Span]]:
    entries = archive.conversation_entries(conn, [conversation_id])
    wanted = {t for traces in entries.values() for t in traces}
    found: dict[str, list[Span]] = {}
    for data in archive.load(conn, list(entries)).values():
        for rs in archive.unpack(data).resource_spans:
            for ss in rs.scope_spans:
                for s in ss.spans:
                    trace = s.trace_id.hex()
                    if trace in wanted:
                        found.setdefault(trace, []).append(s)
    return found


def _detail(turn: dict[str, Any], spans: list[Span]) -> TurnDetail:
    detail = TurnDetail(ms(turn["start_ns"], turn["end_ns"]), archived=bool(spans))
    if not spans:
        return detail
    spans = sorted(spans, key=lambda s: (s.start_time_unix_nano, s.span_id))
    t0 = min(s.start_time_unix_nano for s in spans)
    t1 = max(s.end_time_unix_nano for s in spans)
    if detail.duration_ms is None or not turn["end_ns"]:
        detail.duration_ms = ms(t0, t1)
    total = max(t1 - t0, 1)
    parents = {s.span_id: s.parent_span_id for s in spans}

    def depth(s: Span) -> int:
        n, p = 0, s.parent_span_id
        while p in parents and n < 50:
            n, p = n + 1, parents[p]
        return n

    for s in spans[:MAX_SPANS]:
        detail.bars.append(Bar(
            s.name, depth(s), (s.start_time_unix_nano - t0) * 100 / total,
            max((s.end_time_unix_nano - s.start_time_unix_nano) * 100 / total, 0.3),
            (s.end_time_unix_nano - s.start_time_unix_nano) / 1e6, s.status.code == 2))
    detail.cut = max(len(spans) - MAX_SPANS, 0)
    final_result = None
    agent_answer = None
    for s in spans:  # only the attributes read are decoded: a turn's spans carry many more
        a = {kv.key: any_value(kv.value) for kv in s.attributes if kv.key in READ}
        if isinstance(a.get("final_result"), str):
            final_result = a["final_result"]
        inputs = _messages(a.get("gen_ai.input.messages"))
        output = _messages(a.get("gen_ai.output.messages"))
        texts = [t for t in (_text(m) for m in output if m.get("role") != "user") if t]
        if detail.user_message is None:
            users = [m for m in inputs if m.get("role") == "user"]
            detail.user_message = _text(users[-1]) if users else None
        if a.get("gen_ai.operation.name") not in MODEL_OPERATIONS:
            if texts:  # an agent span's output: the turn's answer
                agent_answer = "\n".join(texts)
            continue
        detail.steps.append(ModelStep(s.name, (s.end_time_unix_nano - s.start_time_unix_nano)
                                      / 1e6, _requested(output), "\n".join(texts) or None))
    answers = [st.text for st in detail.steps if st.text and not st.requested]
    detail.final_answer = final_result or agent_answer or (answers[-1] if answers else None)
    return detail


def turn_details(conn: Connection, conversation_id: int,
                 turns: Sequence[dict[str, Any]]) -> list[TurnDetail]:
    """One `TurnDetail` per shown turn (`conversation_view.conversation_turns` rows)."""
    spans = _spans_by_trace(conn, conversation_id)
    return [_detail(t, spans.get(t["trace_id"], [])) for t in turns]
