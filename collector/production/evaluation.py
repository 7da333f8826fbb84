"""What the verdict export takes, importable without the OpenTelemetry exporter: its header
setting and the verdicts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


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
