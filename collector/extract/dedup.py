"""Executions of one call seen more than once become one (docs/conventions.md, "Each call once").

- nested: a tool span under a tool span of the same name (MCP client and server spans,
  Agent Framework's `execute_tool X` > `tools/call X`), an MCP `tools/call` span directly
  under another convention's tool span whatever its name, or a nameless row whose parent is the
  call (tool content read from log events, `logs`) — by ancestry, or, when the chain between
  them was not stored, a span that carries nothing but its name inside the time range of a
  same-name call;
- the same call id is one call;
- two instrumentations of one call: same name and canonical arguments, overlapping in time,
  not siblings (two siblings are two parallel calls);
- a call that waited for the user and is answered later in the same trace (`_answers_waiting`):
  the OpenAI Agents SDK resumed inside the asking run's `trace()` runs the approved call as a
  second tool span, or answers a refusal in the model's input, neither with the tool span's
  (absent) call id: same name and canonical arguments, after the waiting row ended.

The outer (earlier) span is kept; fields it lacks are filled from the duplicate; but a row that
knows more of the call's fate wins (`_outcome`: executed over refused over waiting).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tooltrail.collector.extract.approvals import PENDING, REJECTED, unexecuted
from tooltrail.collector.extract.decoding import canonical, unknown_arguments
from tooltrail.collector.model import ToolCall

MAX_DEPTH = 64

ParentOf = Callable[[str], str | None]


def overlaps(a: ToolCall, b: ToolCall) -> bool:
    """True when the two time ranges intersect."""
    return a.start_ns < b.end_ns and b.start_ns < a.end_ns


def ids_agree(a: ToolCall, b: ToolCall) -> bool:
    """False only when both calls carry an id and the ids differ."""
    return a.call_id is None or b.call_id is None or a.call_id == b.call_id


def merge(primary: ToolCall, other: ToolCall) -> ToolCall:
    """`primary` with the fields it lacks taken from `other` (a duplicate of the same call)."""
    arguments, raw = primary.arguments, primary.arguments_raw
    if unknown_arguments(arguments) and not unknown_arguments(other.arguments):
        arguments, raw = other.arguments, other.arguments_raw
    # a duplicate that did not run (pending, refused) lends no error to an execution
    error = primary.error or (None if unexecuted(other) and not unexecuted(primary)
                              else other.error)
    return dataclasses.replace(
        primary,
        name=primary.name or other.name,
        call_id=primary.call_id or other.call_id,
        arguments=arguments,
        arguments_raw=raw,
        result=primary.result if primary.result is not None else other.result,
        error=error,
        # a refusal's error says it was refused: it stays `rejected`
        status="error" if error and not unexecuted(primary) else primary.status,
    )


@dataclass(slots=True)
class Collapsed:
    """Executions once each, and which span was folded into which."""

    calls: list[ToolCall]
    merged_into: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class _Kept:
    """The calls kept so far, indexed the ways duplicates are looked up."""

    calls: dict[str, ToolCall] = field(default_factory=dict)
    alias: dict[str, str] = field(default_factory=dict)
    by_id: dict[str, str] = field(default_factory=dict)
    by_name: dict[str, list[str]] = field(default_factory=dict)
    canon: dict[str, str | None] = field(default_factory=dict)

    waiting: list[str] = field(default_factory=list)  # pending rows, in start order

    def add(self, call: ToolCall) -> None:
        self.calls[call.span_id] = call
        if call.status == PENDING:
            self.waiting.append(call.span_id)
        self.by_name.setdefault(call.name, []).append(call.span_id)
        if call.call_id:
            self.by_id.setdefault(call.call_id, call.span_id)

    def fold(self, call: ToolCall, target: str) -> None:
        kept = self.calls[target]
        if _outcome(call) > _outcome(kept):  # the duplicate is the call: the kept row folds in
            self._rekey(target, call.span_id)
            call, kept, target = kept, call, call.span_id
        self.alias[call.span_id] = target
        merged = self.calls[target] = merge(kept, call)
        self.canon.pop(target, None)
        if merged.call_id:
            self.by_id.setdefault(merged.call_id, target)

    def _rekey(self, old: str, new: str) -> None:
        """The kept call `old` is known as `new` from now on, in its place (rare: an answer
        folding a waiting row, `_outcome`)."""
        self.calls = {new if k == old else k: v for k, v in self.calls.items()}
        self.alias = {k: new if v == old else v for k, v in self.alias.items()}
        self.by_id = {k: new if v == old else v for k, v in self.by_id.items()}
        for names in self.by_name.values():
            names[:] = [new if s == old else s for s in names]
        self.canon.pop(old, None)

    def named(self, name: str) -> list[ToolCall]:
        return [self.calls[s] for s in self.by_name.get(name, ())]

    def canonical_arguments(self, span_id: str) -> str | None:
        """Computed when first needed: most calls never meet a same-name candidate."""
        if span_id not in self.canon:
            self.canon[span_id] = _canon(self.calls[span_id])
        return self.canon[span_id]


def _outcome(call: ToolCall) -> int:
    """What a row knows of the call's fate: it waits (0) < it was refused (1) < it ran (2).
    The row that knows most is the call: a call that waited and was answered in the same trace
    (Mastra resumes inside the asking run) is the answer; a refusal read from a run's messages
    (`approvals`) is no refusal where a tool span ran the call."""
    return 0 if call.status == PENDING else 1 if call.status == REJECTED else 2


def _canon(call: ToolCall) -> str | None:
    return None if unknown_arguments(call.arguments) else canonical(call.arguments)


def collapse(calls: Iterable[ToolCall], parent_of: ParentOf | None = None) -> Collapsed:
    """Fold duplicate executions of one turn into one.

    `parent_of(span_id)` walks ancestry; by default only through the calls themselves.
    """
    ordered = sorted(calls, key=lambda c: (c.start_ns, -c.end_ns, c.span_id))
    return Collapsed(ordered) if _apart(ordered) else walk_duplicates(ordered, parent_of)


def walk_duplicates(ordered: list[ToolCall], parent_of: ParentOf | None = None) -> Collapsed:
    """`collapse` of calls already in its order, each call looked up against those kept."""
    own_parent = {c.span_id: c.parent_span_id for c in ordered}
    walk: ParentOf = parent_of or own_parent.get
    kept = _Kept()
    for call in ordered:
        target = (
            _nested_in(call, walk, kept)
            or _same_call(call, kept)
            or _contained_in(call, kept)
            or _answers_waiting(call, kept)
        )
        if target is None:
            kept.add(call)
        else:
            kept.fold(call, target)
    return Collapsed(list(kept.calls.values()), kept.alias)


def _apart(calls: list[ToolCall]) -> bool:
    """Every call has a call id and a span of its own: none folds (each way of folding needs
    the two ids to agree, or the folded one to have none), so the walk can be skipped."""
    ids = {c.call_id for c in calls}
    return (len(ids) == len(calls) and all(ids)
            and len({c.span_id for c in calls}) == len(calls))


def _nested_in(call: ToolCall, walk: ParentOf, kept: _Kept) -> str | None:
    span: str | None = call.parent_span_id
    for depth in range(MAX_DEPTH):
        if span is None:
            return None
        primary = kept.alias.get(span, span)
        found = kept.calls.get(primary)
        # a nameless row under a call is that call's content (a log event naming its span)
        if found is not None and ids_agree(found, call) and (
                found.name == call.name or (depth == 0 and _mcp_under_tool(call, found))
                or (not call.name and span == call.parent_span_id)):
            return primary
        span = walk(span)
    return None


def _mcp_under_tool(call: ToolCall, parent: ToolCall) -> bool:
    """An MCP `tools/call` span right under another instrumentation's tool span is that
    execution (semantic-conventions-genai mcp.md: MCP client spans are compatible with GenAI
    `execute_tool` spans), even when the framework renamed the tool for its model
    (`weather_get_forecast` > `tools/call get_forecast`). Only the direct child: a tool span
    deeper down may be a sub-agent's own call."""
    return call.convention == "mcp" and parent.convention != "mcp"


def _same_call(call: ToolCall, kept: _Kept) -> str | None:
    if call.call_id and call.call_id in kept.by_id:
        return kept.by_id[call.call_id]
    candidates = [
        other for other in kept.named(call.name)
        if other.parent_span_id != call.parent_span_id and ids_agree(other, call)
        and overlaps(other, call)
    ]
    key = _canon(call) if candidates else None
    if key is None:
        return None
    return next(
        (o.span_id for o in candidates if kept.canonical_arguments(o.span_id) == key), None
    )


def _contained_in(call: ToolCall, kept: _Kept) -> str | None:
    """A span that says nothing but its name (an MCP transport span whose ancestors arrived in
    another request), inside the time range of a same-name call: the tightest such call."""
    if call.call_id or call.result is not None or not unknown_arguments(call.arguments):
        return None
    inside = [
        other for other in kept.named(call.name)
        if other.parent_span_id != call.parent_span_id
        and other.start_ns <= call.start_ns and call.end_ns <= other.end_ns
    ]
    return max(inside, key=lambda o: (o.start_ns, -o.end_ns)).span_id if inside else None


def _answers_waiting(call: ToolCall, kept: _Kept) -> str | None:
    """The pending row `call` answers (runs or refuses): one that ended before `call` started,
    whose id agrees, of the same name and canonical arguments — or, when `call` names no tool
    or no arguments (a refusal read from a model's input that could not name its call), the
    only such waiting row."""
    if call.status == PENDING or not kept.waiting:
        return None
    waiting = [
        w for s in kept.waiting
        if (w := kept.calls.get(s)) is not None and w.status == PENDING
        and w.end_ns <= call.start_ns and ids_agree(w, call)
        and (not call.name or w.name == call.name)
    ]
    key = _canon(call) if call.name else None
    if key is None:
        return waiting[0].span_id if len(waiting) == 1 else None
    return next((w.span_id for w in waiting if kept.canonical_arguments(w.span_id) == key), None)
