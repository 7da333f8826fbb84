"""What the verdict export takes, importable without the OpenTelemetry exporter: its header
setting and the verdicts, each with the root span of the turn it judges."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import Connection

from tooltrail.collector.capture.merge import logical_turns
from tooltrail.collector.store.leases import scope_key
from tooltrail.collector.store.production import turn_roots

if TYPE_CHECKING:
    from tooltrail.collector.scorer import Scored


def parse_headers(items: Sequence[str]) -> dict[str, str]:
    """`key=value` items (OTEL_EXPORTER_OTLP_HEADERS' form) as a dict; ValueError otherwise."""
    headers: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"an export header is key=value, not {item!r}")
        headers[key.strip()] = value.strip()
    return headers


@dataclass(frozen=True, slots=True)
class Verdict:
    """One result to export, with the span it judges (None when the turn's root is unknown)."""

    expectation: str
    expectation_version: int
    conversation: str
    passed: bool
    score: float
    reason: str
    scope: str
    trace_id: str | None
    span_id: str | None


def verdicts(conn: Connection, scored: Sequence[Scored]) -> list[Verdict]:
    """The results of `scored` as exportable verdicts, each with the root span of the turn it
    judges: turn `i` for a per-turn result, the conversation's last turn with a known root
    otherwise."""
    ids = sorted({s.conversation.id for s in scored})
    order, roots = turn_roots(conn, ids)
    spans: dict[int, list[tuple[str, str] | None]] = {}
    for cid in ids:
        per_turn: list[tuple[str, str] | None] = []
        for stored, explicit in logical_turns(order[cid]):
            found = [roots[tid] for tid in (stored, explicit) if tid is not None]
            per_turn.append(next(((tr, sp) for tr, sp in found if sp), None))
        spans[cid] = per_turn
    out: list[Verdict] = []
    for s in scored:
        per_turn = spans.get(s.conversation.id, [])
        for result in s.results:
            index = result.scope.get("turn") if result.scope.get("kind") == "turn" else None
            if isinstance(index, int) and 0 <= index < len(per_turn):
                parent = per_turn[index]
            else:
                parent = next((p for p in reversed(per_turn) if p), None)
            out.append(Verdict(
                expectation=s.expectation.slug, expectation_version=s.expectation.version,
                conversation=s.conversation.key, passed=result.passed, score=result.score,
                reason=result.reason, scope=scope_key(result.scope),
                trace_id=parent[0] if parent else None, span_id=parent[1] if parent else None))
    return out
