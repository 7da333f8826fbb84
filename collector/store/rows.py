"""Preparing a batch for the store, with no database at hand: each tool call becomes a row
(JSON already encoded, oversized values capped). Conversation keys are stored as sent
(extraction refuses those an index cannot hold). Pure and cheap to import, so it runs in the
ingest worker processes and pickles back fast."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tooltrail.collector.model import Batch, RejectedSpan, ToolCall, TraceInfo
from tooltrail.collector.store.jsonio import capped_json

CALL_FIELDS = (
    "trace_id", "span_id", "parent_span_id", "call_id", "name", "arguments", "arguments_raw",
    "result", "error", "status", "start_ns", "end_ns", "step", "convention", "executed",
    "attributes", "source",
)
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
    lossy: tuple[tuple[str, int], ...] = ()  # conversions extraction made (docs/values.md)
    # the request's raw spans per trace (collector.store.archive.Archived), when archiving
    archive: tuple[Any, ...] = ()

    @property
    def empty(self) -> bool:
        """True when nothing in the request needs writing."""
        return not self.calls and not self.traces


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


def prepare(batch: Batch, redact: Callable[[Batch], Batch] | None = None) -> PreparedBatch:
    """Serialise a Batch for writing (pure; safe to run in a worker process). `redact` (the
    service's `collector.governance.redaction.Policy.apply`) runs first: every way in passes
    here, so nothing it removes reaches the store."""
    if redact is not None:
        batch = redact(batch)
    counter = [0]
    calls = tuple(call_row(c, counter) for c in batch.calls)
    return PreparedBatch(
        calls=calls,
        traces=batch.traces,
        rejected=batch.rejected,
        unextracted=batch.unextracted,
        span_count=batch.span_count,
        truncated=counter[0],
        lossy=batch.lossy,
    )
