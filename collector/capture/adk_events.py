"""Google ADK session events (and kagent's rows of them) → the Batch OTLP extraction produces.

Input: JSON Lines (one event a line), a JSON array of events, kagent rows (the event JSON,
object or string, under `data`, the session under `session_id`), or an ADK `Session` object
(`{"id", "events": [...]}`). ADK writes its fields in snake_case (`model_dump`) or camelCase
(`by_alias=True`); both are read.

The rules real sessions taught (seed 004):

- the part type decides, never `content.role`: a `function_call` part is the agent's call, a
  `function_response` part is its result, whatever role the event says (the human-in-the-loop
  confirmation round trip flows through the user side); only plain text consults `author`;
- runtime plumbing (`adk_*` tools such as `adk_request_confirmation`, see
  `collector.extract.is_plumbing`) is dropped unless `ExtractOptions.keep_plumbing`;
- result envelopes are unwrapped (`collector.extract.decoding.unwrap_result`: MCP
  `{content, isError}` — `isError: true` fails the call — and the builtin `{"result": …}`);
  ADK's own `{"error": …}` answer (a tool refused, rejected or unconfirmed) fails the call;
- `invocation_id` is the turn; a call belongs to the turn of its `function_call`, its result
  may come in a later invocation (a long-running tool answered by the user) and the last
  result of a call id wins (a confirmed tool answers first "requires confirmation", then its
  result); events with no content contribute nothing; partial (streamed) events are skipped,
  since the final event repeats them.

Pure: no I/O, no database.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tooltrail.collector.capture import body as body_json
from tooltrail.collector.errors import InvalidPayload
from tooltrail.collector.extract import ExtractOptions, is_plumbing
from tooltrail.collector.extract.decoding import as_arguments, clean_id, unwrap_result
from tooltrail.collector.extract.traces import derived_key
from tooltrail.collector.model import KEY_FROM_ROOT, Batch, ToolCall, TraceInfo

SOURCE = "adk_events"  # ToolCall.source and .convention of every call read here
TURN_PREFIX = "adk:"
TEXT_PREVIEW = 40
TICK_NS = 1_000  # spacing given to events without a timestamp, and a call's least duration


class BadEvents(InvalidPayload, ValueError):
    """The input is not ADK events; the message names the line or item at fault."""


@dataclass(frozen=True, slots=True)
class Record:
    """One event as read, with the session id its row (or session object) named, if any."""

    event: dict[str, Any]
    session_id: str | None = None


@dataclass(slots=True)
class EventNote:
    """What one event contributed (`contributed`), or why it contributed nothing (`why_not`)."""

    index: int
    author: str
    role: str
    invocation_id: str
    contributed: list[str] = field(default_factory=list)
    why_not: str = ""


@dataclass(frozen=True, slots=True)
class AdkReading:
    """The Batch, one note per event, and the seed's accounting (messages, tools)."""

    batch: Batch
    events: tuple[EventNote, ...]
    messages: int
    tools: tuple[str, ...]

    @property
    def contributed(self) -> int:
        """Events that contributed a message part."""
        return sum(1 for e in self.events if e.contributed)

    def closing_line(self) -> str:
        """`14 events, 8 contributed → 8 messages, tools: ask_user, search_users`."""
        tools = ", ".join(self.tools) or "(none)"
        return (f"{len(self.events)} events, {self.contributed} contributed → "
                f"{self.messages} messages, tools: {tools}")


def _get(obj: dict[str, Any], snake: str, camel: str) -> Any:
    value = obj.get(snake)
    return obj.get(camel) if value is None else value


def looks_like_events(body: bytes | str) -> bool:
    """True when `body` reads as ADK events (for inputs whose format is not named)."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    head = text.lstrip()[:1]
    if head not in ("{", "["):
        return False
    try:
        records = parse_events(text)
    except BadEvents:
        return False
    return bool(records) and all(_is_event(r.event) for r in records)


def _is_event(obj: dict[str, Any]) -> bool:
    return ("author" in obj or "content" in obj) and (
        "invocation_id" in obj or "invocationId" in obj)


def parse_events(body: bytes | str) -> list[Record]:
    """The events of a body, in order; raises BadEvents naming the line or item at fault."""
    try:
        text = body.decode("utf-8") if isinstance(body, bytes) else body
    except UnicodeDecodeError as exc:
        raise BadEvents(f"ADK events must be UTF-8 JSON: {exc}") from exc
    stripped = text.strip()
    if not stripped:
        return []
    items: list[tuple[str, Any]]
    whole: Any = None
    if stripped[0] in "[{":
        try:
            whole = body_json.loads(stripped)
        except ValueError:
            whole = None
    if isinstance(whole, list):
        items = [(f"item {i}", v) for i, v in enumerate(whole)]
    elif isinstance(whole, dict) and isinstance(whole.get("events"), list) and "id" in whole:
        session = str(whole["id"])  # an ADK Session object
        return [Record(_event_of(e, f"events[{i}]"), session)
                for i, e in enumerate(whole["events"])]
    elif isinstance(whole, dict):
        items = [("line 1", whole)]
    else:
        items = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                items.append((f"line {n}", body_json.loads(line)))
            except ValueError as exc:
                raise BadEvents(f"line {n}: not JSON: {exc}") from exc
    return [_record(value, where) for where, value in items]


def _record(value: Any, where: str) -> Record:
    if not isinstance(value, dict):
        raise BadEvents(f"{where}: an ADK event or kagent row must be a JSON object")
    if "data" in value and not _is_event(value):  # a kagent row: the event under `data`
        session = _get(value, "session_id", "sessionId")
        return Record(_event_of(value["data"], f"{where} data"),
                      None if session is None else str(session))
    session = _get(value, "session_id", "sessionId")
    return Record(value, None if session is None else str(session))


def _event_of(data: Any, where: str) -> dict[str, Any]:
    if isinstance(data, str | bytes):
        try:
            data = body_json.loads(data)
        except ValueError as exc:
            raise BadEvents(f"{where}: not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise BadEvents(f"{where}: an ADK event must be a JSON object")
    return data


@dataclass(slots=True)
class _Call:
    """A function_call part, and the last function_response that answered it."""

    turn: str
    conversation: str
    span_id: str
    event_id: str
    name: str
    call_id: str | None
    args: Any
    author: str
    start_ns: int
    response: Any = None
    answered: bool = False
    end_ns: int = 0


@dataclass(slots=True)
class _Turn:
    conversation: str
    start_ns: int
    end_ns: int
    agents: set[str] = field(default_factory=set)


def read_events(
    body: bytes | str | Sequence[Record],
    *,
    conversation: str | None = None,
    fallback: str | None = None,
    options: ExtractOptions | None = None,
) -> AdkReading:
    """ADK events → Batch (+ per-event notes). `conversation` overrides the session ids; else an
    event's own (its kagent row's `session_id`, its Session's `id`), else `fallback`; an event
    that contributes with none of them raises BadEvents."""
    options = options or ExtractOptions()
    records = parse_events(body) if isinstance(body, bytes | str) else list(body)
    reader = _Reader(options, conversation, fallback)
    for index, record in enumerate(records):
        reader.add(index, record)
    return reader.finish()


def extract_events(
    body: bytes | str, *, conversation: str | None = None, fallback: str | None = None,
    options: ExtractOptions | None = None,
) -> Batch:
    """`read_events(...).batch`."""
    return read_events(body, conversation=conversation, fallback=fallback, options=options).batch


def _timestamp_ns(event: dict[str, Any]) -> int | None:
    value = event.get("timestamp")
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return None
    return int(value * 1e9) if value < 1e11 else int(value)  # seconds (ADK) or nanoseconds


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= TEXT_PREVIEW else flat[:TEXT_PREVIEW] + " …"


class _Reader:
    """One pass over the events in order: notes, calls, turns, message accounting."""

    def __init__(
        self, options: ExtractOptions, conversation: str | None, fallback: str | None
    ) -> None:
        self.options = options
        self.conversation = conversation
        self.fallback = fallback
        self.notes: list[EventNote] = []
        self.calls: list[_Call] = []
        self.by_id: dict[tuple[str, str], _Call] = {}
        self.turns: dict[str, _Turn] = {}
        self.last_ns = 0
        self.messages = 0
        self.assistant_open = False

    def _flush(self) -> None:
        if self.assistant_open:
            self.messages += 1
            self.assistant_open = False

    def add(self, index: int, record: Record) -> None:
        event = record.event
        author = str(event.get("author") or "")
        content = event.get("content")
        role = str(content.get("role") or "") if isinstance(content, dict) else ""
        invocation = str(_get(event, "invocation_id", "invocationId") or "")
        note = EventNote(index, author, role, invocation)
        self.notes.append(note)
        ts = _timestamp_ns(event)
        now = ts if ts is not None else self.last_ns + TICK_NS
        self.last_ns = max(self.last_ns, now)
        parts = content.get("parts") if isinstance(content, dict) else None
        if not isinstance(parts, list) or not parts:
            note.why_not = "no content"
            return
        if event.get("partial") is True:
            note.why_not = "partial (streamed chunk; the final event repeats it)"
            return
        conversation = self.conversation or record.session_id or self.fallback
        if not conversation:
            raise BadEvents(f"event {index}: no session id; give the conversation key")
        turn_key = derived_key(
            f"{TURN_PREFIX}{self.options.project}:{conversation}:{invocation or '-'}")
        event_id = str(event.get("id") or f"event-{index}")
        filtered: list[str] = []
        j = 0
        for part in parts:
            if not isinstance(part, dict):
                continue
            call = _get(part, "function_call", "functionCall")
            response = _get(part, "function_response", "functionResponse")
            text = part.get("text")
            if isinstance(response, dict):  # a tool result, whatever the role says
                name = str(response.get("name") or "")
                if self._plumbing(name):
                    filtered.append(name)
                    continue
                self._flush()
                self.messages += 1
                self._answer(response, name, conversation, turn_key, event_id, author, now)
                note.contributed.append(f"result {name}")
            elif isinstance(call, dict):  # the agent's call, whatever the role says
                name = str(call.get("name") or "")
                span_id = f"{event_id}#{j}"
                j += 1
                if self._plumbing(name):
                    filtered.append(name)
                    continue
                self.assistant_open = True
                self._call(call, name, conversation, turn_key, span_id, event_id, author, now)
                note.contributed.append(f"call {name}")
            elif isinstance(text, str) and text.strip() and part.get("thought") is not True:
                if author == "user":  # only plain text consults the author
                    self._flush()
                    self.messages += 1
                else:
                    self.assistant_open = True
                note.contributed.append(f'text "{_preview(text)}"')
        if note.contributed:
            self._touch(turn_key, conversation, now, author)
        elif filtered:
            note.why_not = "filtered: " + ", ".join(dict.fromkeys(filtered))
        else:
            note.why_not = "no text, call or result"

    def _plumbing(self, name: str) -> bool:
        return not self.options.keep_plumbing and is_plumbing(name)

    def _touch(self, turn_key: str, conversation: str, now: int, author: str) -> None:
        turn = self.turns.get(turn_key)
        if turn is None:
            turn = self.turns[turn_key] = _Turn(conversation, now, now)
        turn.start_ns = min(turn.start_ns, now)
        turn.end_ns = max(turn.end_ns, now)
        if author and author != "user":
            turn.agents.add(author)

    def _call(self, call: dict[str, Any], name: str, conversation: str, turn_key: str,
              span_id: str, event_id: str, author: str, now: int) -> None:
        entry = _Call(turn_key, conversation, span_id, event_id, name, clean_id(call.get("id")),
                      call.get("args"), author, now)
        self.calls.append(entry)
        if entry.call_id:
            self.by_id[(conversation, entry.call_id)] = entry

    def _answer(self, response: dict[str, Any], name: str, conversation: str, turn_key: str,
                event_id: str, author: str, now: int) -> None:
        call_id = clean_id(response.get("id"))
        target = self.by_id.get((conversation, call_id)) if call_id else None
        if target is None and call_id is None:  # no id: the oldest unanswered call of the name
            target = next((c for c in self.calls if c.conversation == conversation
                           and c.name == name and not c.answered), None)
        if target is None:  # a result whose call is not in the input: the tool still ran
            target = _Call(turn_key, conversation, f"{event_id}#r{len(self.calls)}", event_id,
                           name, call_id, None, author, now)
            self.calls.append(target)
            if call_id:
                self.by_id[(conversation, call_id)] = target
        target.response = response.get("response")
        target.answered = True
        target.end_ns = now

    def finish(self) -> AdkReading:
        self._flush()
        calls = tuple(_tool_call(c) for c in self.calls)
        infos = tuple(
            TraceInfo(trace_id=key, turn_key=key, conversation_key=t.conversation,
                      key_rank=KEY_FROM_ROOT, service=None, agents=frozenset(t.agents),
                      start_ns=t.start_ns, end_ns=t.end_ns, has_agent_root=True,
                      project=self.options.project)
            for key, t in self.turns.items()
        )
        tools = tuple(sorted({c.name for c in calls}))
        batch = Batch(calls, infos, span_count=len(self.notes))
        return AdkReading(batch, tuple(self.notes), self.messages, tools)


def _tool_call(c: _Call) -> ToolCall:
    arguments, raw = as_arguments(c.args)
    result: Any = None
    error: str | None = None
    if c.answered:
        result, is_error = unwrap_result(c.response)
        if not is_error and isinstance(result, dict) and set(result) == {"error"}:
            is_error = True  # ADK's own answer for a refused or unconfirmed tool
            result = result["error"]
        if is_error:
            error = result if isinstance(result, str) else json.dumps(result, default=str)
            error = error or "tool error"
    return ToolCall(
        trace_id=c.turn, span_id=c.span_id, parent_span_id=c.event_id, name=c.name,
        call_id=c.call_id, arguments=arguments, arguments_raw=raw, result=result, error=error,
        status="error" if error else "ok", start_ns=c.start_ns,
        end_ns=max(c.end_ns, c.start_ns + TICK_NS), convention=SOURCE,
        attributes={"adk.author": c.author} if c.author else {},
        executed=c.answered, source=SOURCE,
    )


def summary_lines(reading: AdkReading) -> list[str]:
    """The per-event table of seed 004, then its closing line."""
    return table(notes_as_rows(reading.events), reading.closing_line())


def table(rows: Sequence[dict[str, Any]], closing: str) -> list[str]:
    """Rows of `notes_as_rows` as the seed's table: index, author, role, contributed, why not."""
    lines = [f"{'#':>3}  {'AUTHOR':20}  {'ROLE':6}  {'CONTRIBUTED':40}  WHY NOT"]
    for n in rows:
        said = "; ".join(n["contributed"])
        lines.append(f"{n['index']:>3}  {n['author'][:20]:20}  {n['role'][:6]:6}  "
                     f"{said[:80]:40}  {n['why_not']}".rstrip())
    lines.append(closing)
    return lines


def notes_as_rows(notes: Iterable[EventNote]) -> list[dict[str, Any]]:
    """The notes as JSON-ready rows (`tooltrail extract --json`)."""
    return [{"index": n.index, "author": n.author, "role": n.role,
             "invocation_id": n.invocation_id, "contributed": n.contributed,
             "why_not": n.why_not} for n in notes]


__all__ = ["SOURCE", "AdkReading", "BadEvents", "EventNote", "Record", "extract_events",
           "looks_like_events", "notes_as_rows", "parse_events", "read_events", "summary_lines",
           "table"]
