"""Preparing a batch for the store, with no database at hand: each tool call becomes a row
(JSON already encoded, oversized values capped, keys shortened to what an index holds). Pure
and cheap to import, so it runs in the ingest worker processes and pickles back fast."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any

from collector.model import Batch, RejectedSpan, ToolCall, TraceInfo
from collector.store.jsonio import capped_json

CALL_FIELDS = (
    "trace_id", "span_id", "parent_span_id", "call_id", "name", "arguments", "arguments_raw",
    "result", "error", "status", "start_ns", "end_ns", "step", "convention", "executed",
    "attributes", "source",
)
MAX_KEY = 512  # conversation/turn keys longer than this are shortened (an index holds them)
MAX_TEXT = 16 * 1024  # names, ids, error messages
MAX_ARGUMENTS = 256 * 1024  # a tool call's arguments or result, as JSON
MAX_ATTRIBUTES = 256 * 1024  # a span's attributes, as JSON


@dataclass(frozen=True, slots=True)
class PreparedBatch:
    """One request's batch, ready to write: calls as rows in CALL_FIELDS order."""

    calls: tuple[tuple[Any, ...], ...]
    traces: tuple[TraceInfo, ...]
    rejected: tuple[RejectedSpan, ...] = ()
    unextracted: tuple[RejectedSpan, ...] = ()
    span_count: int = 0
    truncated: int = 0  # values cut to the size limits

    @property
    def empty(self) -> bool:
        """True when nothing in the request needs writing."""
        return not self.calls and not self.traces


def short_key(key: str) -> str:
    """A key short enough to index, still unique: long keys keep a prefix and their hash."""
    if len(key) <= MAX_KEY:
        return key
    digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{key[:MAX_KEY - 80]}…sha256:{digest}"


def _text(value: str | None, counter: list[int]) -> str | None:
    if value is None:
        return None
    if len(value) > MAX_TEXT:
        counter[0] += 1
        value = value[:MAX_TEXT] + "…[truncated]"
    # strings from OTLP/JSON may hold lone surrogates, which no database can store
    return value.encode("utf-8", "replace").decode() if not value.isascii() else value


def call_row(call: ToolCall, counter: list[int]) -> tuple[Any, ...]:
    """A tool call as a row of CALL_FIELDS; `counter[0]` counts values that were cut."""
    arguments, cut_a = capped_json(call.arguments, MAX_ARGUMENTS)
    result, cut_r = capped_json(call.result, MAX_ARGUMENTS)
    attributes, cut_t = capped_json(call.attributes, MAX_ATTRIBUTES)
    counter[0] += cut_a + cut_r + cut_t
    return (
        call.trace_id, call.span_id, call.parent_span_id, _text(call.call_id, counter),
        _text(call.name, counter), arguments, _text(call.arguments_raw, counter), result,
        _text(call.error, counter), call.status, call.start_ns, call.end_ns, call.step,
        call.convention, call.executed, attributes, call.source,
    )


def _safe_info(info: TraceInfo) -> TraceInfo:
    if len(info.conversation_key) <= MAX_KEY and len(info.turn_key) <= MAX_KEY:
        return info
    return replace(info, conversation_key=short_key(info.conversation_key),
                   turn_key=short_key(info.turn_key))


def prepare(batch: Batch) -> PreparedBatch:
    """Serialise a Batch for writing (pure; safe to run in a worker process)."""
    counter = [0]
    calls = tuple(call_row(c, counter) for c in batch.calls)
    return PreparedBatch(
        calls=calls,
        traces=tuple(_safe_info(i) for i in batch.traces),
        rejected=batch.rejected,
        unextracted=batch.unextracted,
        span_count=batch.span_count,
        truncated=counter[0],
    )
