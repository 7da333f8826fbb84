"""Tool-call content that arrives as OTLP log records (GenAI events) instead of span events.

With content capture on, several instrumentations put a call's content only in log events
that name their span by trace and span id (Google ADK, whose `true` means events only; the
GenAI `gen_ai.client.inference.operation.details` event; the older per-message `gen_ai.choice`
and `gen_ai.tool.message`; semantic-conventions-genai, docs/gen-ai/gen-ai-events.md). A record
is read as the span event it stands for: its payload (attributes, and a kvlist body, where the
older events put it) becomes one `Event` of a view of its span, and the span-event readers
(`events`, `requests`) read it — one parser for both places.

Spans and records may arrive in either order, in different requests, so the join is the
store's, at read time, as for requests and executions:

- a model response (operation details of an LLM operation, or `gen_ai.choice`) gives the same
  request rows its LLM span would (`{llm span}#{j}`, `requests.request_rows`): whichever of
  span and record carries the content, the row is one;
- a tool's content (operation details of `execute_tool`, or with `tool_call_response` output;
  `gen_ai.tool.message`, the tool's answer as the model got it) gives an execution row
  `{span}@log-{digest}` whose parent is the span it names; `dedup.collapse` folds it into that
  span's own row (or into the row of the same call id), filling the arguments, result and call
  id the span left out;
- the record's trace gets a TraceInfo keyed by the trace (or by a conversation key the record
  carries), so that spans arriving later upgrade the turn's key as for any trace whose key
  arrives late.

`gen_ai.assistant.message` (the model's earlier calls repeated as chat history) is not read,
as input messages on spans are not: history would announce each call again in later steps.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord

from tooltrail.collector.extract.decoding import as_arguments, clean_id, decode, unwrap_result
from tooltrail.collector.extract.events import (
    CHOICE,
    DETAILS,
    TOOL_MESSAGE,
    event_arguments,
    event_call_id,
    event_result,
    message_parts,
)
from tooltrail.collector.extract.otlp import Event, SpanView, any_value, attributes
from tooltrail.collector.extract.requests import LLM_OPERATIONS, request_rows, requested_calls
from tooltrail.collector.extract.traces import conversation_source, key_size_problem
from tooltrail.collector.model import KEY_FROM_SPAN, KEY_FROM_TRACE, ToolCall, TraceInfo

EXECUTE_TOOL = "execute_tool"
CONVENTION = "genai.log"  # the convention of an execution row read from log records
INPUT, OUTPUT = "gen_ai.input.messages", "gen_ai.output.messages"
EVENTS = frozenset({DETAILS, CHOICE, TOOL_MESSAGE})  # the events that may carry call content


def event_name(record: LogRecord, attrs: dict[str, Any]) -> str:
    """The event a record is: OTLP's `event_name`, else its `event.name` attribute."""
    return record.event_name or str(attrs.get("event.name") or "")


def record_event(record: LogRecord) -> Event | None:
    """The GenAI event a log record carries (attributes over a kvlist body), else None."""
    if record.event_name and record.event_name not in EVENTS:
        return None  # most records: their attributes are not decoded
    attrs = attributes(record.attributes)
    if event_name(record, attrs) not in EVENTS:
        return None
    name = event_name(record, attrs)
    body = any_value(record.body) if record.HasField("body") else None
    payload = {**body, **attrs} if isinstance(body, dict) else attrs
    return Event(name, record.time_unix_nano or record.observed_time_unix_nano, payload)


def _view(trace_id: str, span_id: str, events: Sequence[Event], resource: dict[str, Any],
          scope: str, operation: str | None) -> SpanView:
    """The view of the span the events belong to, as far as the events tell."""
    start = min(e.time_ns for e in events)
    end = max(e.time_ns for e in events)
    attrs = {"gen_ai.operation.name": operation} if operation else {}
    return SpanView(trace_id, span_id, None, events[0].name, start, end, attrs, resource, scope,
                    False, "", tuple(events))


def is_tool_content(event: Event) -> bool:
    """Operation details about a tool's execution: so named, or, without an operation name,
    the tool's answer as output or a `tool`-role message asking for it (Strands' tool span)."""
    operation = event.attributes.get("gen_ai.operation.name")
    if event.name == TOOL_MESSAGE or operation == EXECUTE_TOOL:
        return True
    if event.name != DETAILS or operation is not None:
        return False
    view = _view("", "", [event], {}, "", None)
    if any(p.get("type") == "tool_call_response" for p in message_parts(view, OUTPUT)):
        return True
    messages, _ = decode(event.attributes.get(INPUT))
    return any(
        isinstance(m, dict) and m.get("role") == "tool" and isinstance(m.get("parts"), list)
        and any(isinstance(p, dict) and p.get("type") == "tool_call" for p in m["parts"])
        for m in (messages if isinstance(messages, list) else [])
    )


def model_operation(event: Event) -> str | None:
    """The LLM operation of a model-response event (None: the event is not one)."""
    operation = event.attributes.get("gen_ai.operation.name")
    if event.name == CHOICE:
        return str(operation) if operation in LLM_OPERATIONS else "chat"
    if event.name == DETAILS and (operation is None or operation in LLM_OPERATIONS):
        return str(operation or "chat")
    return None


@dataclass(slots=True)
class LogTrace:
    """What the records of one trace in one request say about its turn."""

    trace_id: str
    start_ns: int
    end_ns: int
    service: str | None
    key: str | None = None
    relevant: bool = False

    def add(self, time_ns: int, key: str | None) -> None:
        self.start_ns, self.end_ns = min(self.start_ns, time_ns), max(self.end_ns, time_ns)
        self.key = self.key or key

    def info(self) -> TraceInfo:
        return TraceInfo(
            trace_id=self.trace_id, turn_key=self.trace_id,
            conversation_key=self.key or self.trace_id,
            key_rank=KEY_FROM_SPAN if self.key else KEY_FROM_TRACE, service=self.service,
            agents=frozenset(), start_ns=self.start_ns, end_ns=self.end_ns,
            has_agent_root=False,
        )


@dataclass(slots=True)
class LogCalls:
    """The rows the GenAI events of one request give, gathered record by record."""

    conversation_keys: Sequence[str]
    keep: Callable[[str], bool]  # whether a call of that name is kept (plumbing filter)
    requests: dict[tuple[str, str], ToolCall] = field(default_factory=dict)
    # (trace, span, the call id of a `gen_ai.tool.message`) → its events, serialised records
    tools: dict[tuple[str, str, str], list[tuple[Event, bytes]]] = field(default_factory=dict)
    scopes: dict[tuple[str, str, str], tuple[dict[str, Any], str]] = field(default_factory=dict)
    traces: dict[str, LogTrace] = field(default_factory=dict)

    def add(self, record: LogRecord, resource: dict[str, Any], scope: str) -> str | None:
        """Read one record whose ids and times the caller checked; returns why it is refused
        (a conversation key too long to store), else None."""
        if not record.trace_id or not record.span_id:
            return None  # an event outside any span names no call
        event = record_event(record)
        if event is None:
            return None
        trace_id, span_id = record.trace_id.hex(), record.span_id.hex()
        found = conversation_source(
            SpanView(trace_id, span_id, span_id, "", 0, 0, event.attributes, resource, scope,
                     False, "", ()), self.conversation_keys)
        if found is not None:
            problem = key_size_problem(found[0], f"conversation key ({found[1]})")
            if problem is not None:
                return problem
        trace = self.traces.get(trace_id)
        if trace is None:
            service = resource.get("service.name")
            trace = self.traces[trace_id] = LogTrace(
                trace_id, event.time_ns, event.time_ns,
                str(service) if service is not None else None)
        trace.add(event.time_ns, found[0] if found else None)
        if is_tool_content(event):
            # one chat call's input holds one tool message per answered call
            sub = str(event.attributes.get("id") or "") if event.name == TOOL_MESSAGE else ""
            key = (trace_id, span_id, sub)
            self.tools.setdefault(key, []).append(
                (event, record.SerializeToString(deterministic=True)))
            self.scopes.setdefault(key, (resource, scope))
            trace.relevant = True
            return None
        operation = model_operation(event)
        if operation is None:
            return None
        view = _view(trace_id, span_id, [event], resource, scope, operation)
        source, calls = requested_calls(view)
        kept = [c for c in calls if self.keep(c.name)]
        for row in request_rows(view, f"{source}.log", kept) if kept else ():
            self.requests.setdefault((row.trace_id, row.span_id), row)
            trace.relevant = True
        return None

    def rows(self) -> tuple[list[ToolCall], list[TraceInfo]]:
        """(execution and request rows, the TraceInfo of each trace they belong to)."""
        calls = list(self.requests.values())
        for key, found in self.tools.items():
            call = self._execution(key, found)
            if call is not None and (not call.name or self.keep(call.name)):
                calls.append(call)
        infos = [t.info() for t in self.traces.values() if t.relevant]
        return calls, infos

    def _execution(self, key: tuple[str, str, str],
                   found: list[tuple[Event, bytes]]) -> ToolCall | None:
        trace_id, span_id, _ = key
        events = sorted((e for e, _ in found), key=lambda e: e.time_ns)
        resource, scope = self.scopes[key]
        view = _view(trace_id, span_id, events, resource, scope, EXECUTE_TOOL)
        result_value: Any = None
        arguments: Any = None
        if any(e.name == TOOL_MESSAGE for e in events):
            # the tool's answer, as the chat input carries it (`content`, `id`)
            message = next(e for e in events if e.name == TOOL_MESSAGE)
            result_value = message.attributes.get("content")
            call_id = clean_id(message.attributes.get("id"))
        else:
            arguments = event_arguments(view)
            result_value = event_result(view)
            call_id = clean_id(event_call_id(view))
        if arguments is None and result_value is None:
            return None
        name = next((str(p["name"]) for p in message_parts(view, INPUT)
                     if p.get("type") == "tool_call" and p.get("name")), "")
        name = name or str(next((e.attributes["gen_ai.tool.name"] for e in events
                                 if e.attributes.get("gen_ai.tool.name")), ""))
        args, raw = as_arguments(arguments)
        result, is_error = unwrap_result(result_value) if result_value is not None else (
            None, False)
        digest = hashlib.sha256(b"".join(sorted(r for _, r in found))).hexdigest()[:16]
        return ToolCall(
            trace_id=trace_id, span_id=f"{span_id}@log-{digest}", parent_span_id=span_id,
            name=name, call_id=call_id, arguments=args, arguments_raw=raw, result=result,
            error="error" if is_error else None, status="error" if is_error else "ok",
            start_ns=view.start_ns, end_ns=view.end_ns, convention=CONVENTION,
            attributes={"log.event.name": sorted({e.name for e in events})},
        )
