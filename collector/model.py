"""Frozen domain types that flow from extraction to the writer."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

from tooltrail.collector.projects import DEFAULT_PROJECT

# How sure we are of a trace's conversation key; a higher rank replaces a lower one.
KEY_FROM_TRACE = 0  # no key seen: the trace id stands in (a one-turn conversation)
KEY_FROM_SPAN = 1  # a non-root span of the trace carried the key
KEY_FROM_ROOT = 2  # the trace's root span carried the key

# A turn key with this prefix names a position, not a trace: the turn holds the explicit calls
# of the conversation's turn at that position (`collector.capture.merge.position_key`).
POSITION_PREFIX = "turn#"


class Unread:
    """The arguments of a call read without them (`leases.trajectory_calls(arguments=False)`):
    reconciliation raises `decoding.ArgumentsUnread` wherever it would look at them, so a
    reader that needs no arguments reads them only for the turns whose pairing asks."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNREAD"


UNREAD = Unread()

_SURROGATE = re.compile("[\ud800-\udfff]")


def storable_text(text: str, replaced: Callable[[], None] | None = None) -> str:
    """`text` as a store holds it: NUL characters (no PostgreSQL text or jsonb holds one) and
    lone surrogates (OTLP/JSON may carry them; no UTF-8 store holds one) replaced by U+FFFD,
    calling `replaced` once per kind replaced. Extraction stores text through it
    (`collector.extract.otlp.clean_text`, which notes each), and lookups by conversation key
    apply it, so a key finds what it was stored as."""
    if "\x00" in text:
        if replaced is not None:
            replaced()
        text = text.replace("\x00", "\ufffd")
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError:
            if replaced is not None:
                replaced()
            text = _SURROGATE.sub("\ufffd", text)
    return text


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool execution found in a span."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    call_id: str | None
    arguments: Any
    arguments_raw: str | None
    result: Any
    error: str | None
    status: str
    start_ns: int
    end_ns: int
    convention: str
    attributes: dict[str, Any] = field(default_factory=dict)
    step: int | None = None
    executed: bool = True  # False: the model requested it but no execution span was seen
    source: str = "otel"  # provenance: otel | explicit | a2a | adk_events (collector.capture)

    def evolve(self, **changes: Any) -> ToolCall:
        """A copy with `changes` applied: `dataclasses.replace` without its per-call field
        introspection (reconciliation copies every stored call it scores)."""
        new = object.__new__(ToolCall)
        for name, value in zip(_TOOL_CALL_FIELDS, _tool_call_values(self), strict=True):
            _set(new, name, value)
        for name, value in changes.items():
            if name not in _TOOL_CALL_FIELD_SET:
                raise TypeError(f"ToolCall has no field {name!r}")
            _set(new, name, value)
        return new


_TOOL_CALL_FIELDS = tuple(f.name for f in fields(ToolCall))
_TOOL_CALL_FIELD_SET = frozenset(_TOOL_CALL_FIELDS)
_tool_call_values = operator.attrgetter(*_TOOL_CALL_FIELDS)
_set = object.__setattr__


@dataclass(frozen=True, slots=True)
class TraceInfo:
    """What the spans of one trace in one request say about its conversation and turn."""

    trace_id: str
    turn_key: str
    conversation_key: str
    key_rank: int
    service: str | None
    agents: frozenset[str]
    start_ns: int
    end_ns: int
    has_agent_root: bool
    attributes: dict[str, Any] = field(default_factory=dict)
    root_span_id: str | None = None  # the trace's root span, when this request carried it
    # the conversation's project (collector.projects): with conversation_key, what names it
    project: str = DEFAULT_PROJECT

    def __reduce__(self) -> tuple[type[TraceInfo], tuple[Any, ...]]:
        # Pickled by the hundred from the ingest processes: positional arguments pickle and
        # unpickle faster than a slots dataclass's field-by-field state (README, "Measured").
        return TraceInfo, _trace_info_values(self)


_trace_info_values = operator.attrgetter(*(f.name for f in fields(TraceInfo)))


@dataclass(frozen=True, slots=True)
class RejectedSpan:
    """A span that could not be accepted, and why."""

    trace_id: str
    span_id: str
    name: str
    reason: str


@dataclass(frozen=True, slots=True)
class Batch:
    """Everything one OTLP request contributes to the store."""

    calls: tuple[ToolCall, ...]
    traces: tuple[TraceInfo, ...]
    rejected: tuple[RejectedSpan, ...] = ()  # invalid spans: counted in partial_success
    unextracted: tuple[RejectedSpan, ...] = ()  # valid spans that look like tool calls but aren't
    span_count: int = 0
    lossy: tuple[tuple[str, int], ...] = ()  # (kind, values) converted lossily (docs/values.md)

    @property
    def empty(self) -> bool:
        """True when nothing in the request needs writing."""
        return not self.calls and not self.traces
