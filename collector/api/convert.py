"""Rows to API schemas. Pure (no web framework): `tooltrail check` gives results and
conversations the REST shape through it without loading the server."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from tooltrail.collector.api.schemas import (
    ConversationOut,
    ConversationSummary,
    ExpectationOut,
    ResultOut,
    ToolCallOut,
    TurnOut,
)


def rfc3339(seconds: float | None) -> str | None:
    """Unix seconds as RFC 3339 UTC (microseconds, Z)."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def rfc3339_ns(ns: int | None) -> str | None:
    """Unix nanoseconds as RFC 3339 UTC."""
    if not ns:
        return None
    return rfc3339(ns / 1e9)


def conversation_summary(row: dict[str, Any]) -> ConversationSummary:
    return ConversationSummary(
        key=row["key"],
        project=row["project"],
        service=row["service"],
        agents=list(row["agents"] or []),
        first_seen=rfc3339(row["first_seen"]),
        last_seen=rfc3339(row["last_seen"]),
        start_time=rfc3339_ns(row["start_ns"]),
        end_time=rfc3339_ns(row["end_ns"]),
        turn_count=row["turn_count"],
        call_count=row["call_count"],
        error_count=row["error_count"],
    )


def tool_call(row: dict[str, Any]) -> ToolCallOut:
    return ToolCallOut(
        name=row["name"],
        arguments=row["arguments"],
        arguments_raw=row["arguments_raw"],
        result=row["result"],
        error=row["error"],
        status=row["status"],
        call_id=row["call_id"],
        trace_id=row["trace_id"],
        span_id=row["span_id"],
        parent_span_id=row["parent_span_id"],
        step=row["step"],
        start_time=rfc3339_ns(row["start_ns"]),
        end_time=rfc3339_ns(row["end_ns"]),
        convention=row["convention"],
        executed=row["executed"],
        source=row.get("source") or "otel",
    )


def conversation(row: dict[str, Any], turns: list[dict[str, Any]]) -> ConversationOut:
    summary = conversation_summary(row)
    return ConversationOut(
        **summary.model_dump(),
        attributes=row["attributes"] or {},
        turns=[
            TurnOut(
                index=i,
                turn_key=t["turn_key"],
                trace_id=t["trace_id"],
                start_time=rfc3339_ns(t["start_ns"]),
                end_time=rfc3339_ns(t["end_ns"]),
                agents=list(t["agents"] or []),
                tool_calls=[tool_call(c) for c in t["tool_calls"]],
            )
            for i, t in enumerate(turns)
        ],
    )


def result(row: dict[str, Any], conversation_key: str | None) -> ResultOut:
    detail = dict(row["detail"])
    detail.update(
        expectation=row["expectation"],
        expectation_version=row["expectation_version"],
        conversation=conversation_key,
        scored_at=rfc3339(row["scored_at"]),
        current=row["current"],
    )
    return ResultOut(**detail)


def expectation(row: dict[str, Any]) -> ExpectationOut:
    return ExpectationOut(
        id=row["slug"],
        project=row["project"],
        version=row["version"],
        active=row["active"],
        created_at=rfc3339(row["created_at"]),
        expectation=row["body"],
    )
