"""Each call once, with its step: one pure function over the stored rows of one turn.

Extraction stores what each span says: executions (tool spans) and requests (the model's
`tool_call` parts, `executed=False`, span id `{llm span}#{j}`). Request and execution may arrive
in different OTLP requests, so they are paired here, at read time, by the worker
(`scoring.trajectory`) and the REST view (`queries.conversation_turns`) alike:

1. nested duplicates collapse (a tool span under a tool span of the same name: MCP client and
   server spans, Agent Framework's `execute_tool X` > `tools/call X`; when the chain between
   them was not stored, a span that carries nothing but its name inside the time range of a
   same-name call is taken as nested in it); the same call id is one
   call; two instrumentations of one call (same name and arguments, overlapping, not siblings)
   are one call. The outer span is kept and missing fields are filled from the inner one;
2. requests are deduplicated (same call id; an LLM span nested in another repeating its calls);
3. each execution is paired with a request by call id, else by name + canonical arguments +
   order, else by name when the execution's arguments tell nothing or were collapsed
   (OpenInference-LangChain's `"Paris"` for `{"city": "Paris"}`). The execution wins for result,
   error and timing; the request supplies a missing call id and uncaptured arguments;
4. steps: the requests of one LLM span are one step; an unpaired execution joins an overlapping
   sibling's step, or overlapping unpaired siblings form one; steps are numbered in time order;
5. a request never executed stays, `executed=False`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from collector.extract.values import canonical, unknown_arguments
from collector.model import ToolCall

MAX_DEPTH = 64
LAST = 1 << 30  # order of an execution that no request announced, within its step

ParentOf = Callable[[str], str | None]


def overlaps(a: ToolCall, b: ToolCall) -> bool:
    """True when the two time ranges intersect."""
    return a.start_ns < b.end_ns and b.start_ns < a.end_ns


def merge(primary: ToolCall, other: ToolCall) -> ToolCall:
    """`primary` with the fields it lacks taken from `other` (a duplicate of the same call)."""
    arguments, raw = primary.arguments, primary.arguments_raw
    if unknown_arguments(arguments) and not unknown_arguments(other.arguments):
        arguments, raw = other.arguments, other.arguments_raw
    error = primary.error or other.error
    return dataclasses.replace(
        primary,
        call_id=primary.call_id or other.call_id,
        arguments=arguments,
        arguments_raw=raw,
        result=primary.result if primary.result is not None else other.result,
        error=error,
        status="error" if error else primary.status,
    )


@dataclass(slots=True)
class Collapsed:
    """Executions once each, and which span was folded into which."""

    calls: list[ToolCall]
    merged_into: dict[str, str] = field(default_factory=dict)


def collapse(calls: Iterable[ToolCall], parent_of: ParentOf | None = None) -> Collapsed:
    """Fold duplicate executions of one turn into one (rule 1 above).

    `parent_of(span_id)` walks ancestry; by default only through the calls themselves.
    """
    ordered = sorted(calls, key=lambda c: (c.start_ns, -c.end_ns, c.span_id))
    own_parent = {c.span_id: c.parent_span_id for c in ordered}
    walk: ParentOf = parent_of or own_parent.get
    kept: dict[str, ToolCall] = {}
    alias: dict[str, str] = {}
    by_id: dict[str, str] = {}
    for call in ordered:
        target = (
            _nested_in(call, walk, kept, alias)
            or _same_call(call, kept, by_id)
            or _contained_in(call, kept)
        )
        if target is None:
            kept[call.span_id] = call
            if call.call_id:
                by_id.setdefault(call.call_id, call.span_id)
            continue
        alias[call.span_id] = target
        kept[target] = merge(kept[target], call)
        if kept[target].call_id:
            by_id.setdefault(kept[target].call_id or "", target)
    return Collapsed(list(kept.values()), alias)


def _nested_in(
    call: ToolCall, walk: ParentOf, kept: dict[str, ToolCall], alias: dict[str, str]
) -> str | None:
    span: str | None = call.parent_span_id
    for _ in range(MAX_DEPTH):
        if span is None:
            return None
        primary = alias.get(span, span)
        found = kept.get(primary)
        if found is not None and found.name == call.name and _ids_agree(found, call):
            return primary
        span = walk(span)
    return None


def _same_call(call: ToolCall, kept: dict[str, ToolCall], by_id: dict[str, str]) -> str | None:
    if call.call_id and call.call_id in by_id:
        return by_id[call.call_id]
    if unknown_arguments(call.arguments):
        return None
    key = canonical(call.arguments)
    for other in kept.values():
        if (
            other.name == call.name
            and other.parent_span_id != call.parent_span_id
            and _ids_agree(other, call)
            and overlaps(other, call)
            and not unknown_arguments(other.arguments)
            and canonical(other.arguments) == key
        ):
            return other.span_id
    return None


def _contained_in(call: ToolCall, kept: dict[str, ToolCall]) -> str | None:
    """A span that says nothing but its name (an MCP transport span whose ancestors arrived in
    another request), inside the time range of a same-name call: the tightest such call."""
    if call.call_id or call.result is not None or not unknown_arguments(call.arguments):
        return None
    inside = [
        other for other in kept.values()
        if other.name == call.name and other.parent_span_id != call.parent_span_id
        and other.start_ns <= call.start_ns and call.end_ns <= other.end_ns
    ]
    return max(inside, key=lambda o: (o.start_ns, -o.end_ns)).span_id if inside else None


def _ids_agree(a: ToolCall, b: ToolCall) -> bool:
    return a.call_id is None or b.call_id is None or a.call_id == b.call_id


@dataclass(slots=True)
class _Group:
    """The requests of one LLM span (one model response), or inferred parallel executions."""

    start: int
    requests: list[ToolCall] = field(default_factory=list)
    step: int = 0


def request_index(call: ToolCall) -> tuple[str, int]:
    """(LLM span id, position) of a request row's `{span}#{j}` id."""
    span, _, j = call.span_id.rpartition("#")
    return (span, int(j)) if j.isdigit() else (call.span_id, 0)


def _request_groups(requests: Iterable[ToolCall]) -> list[_Group]:
    groups: dict[str, _Group] = {}
    for r in sorted(requests, key=lambda r: (r.start_ns, request_index(r))):
        span, _ = request_index(r)
        groups.setdefault(span, _Group(r.start_ns)).requests.append(r)
    kept: list[_Group] = []
    seen_ids: set[str] = set()
    for group in groups.values():
        group.requests = [r for r in group.requests if not (r.call_id and r.call_id in seen_ids)]
        seen_ids.update(r.call_id for r in group.requests if r.call_id)
        signature = sorted(f"{r.name}:{canonical(r.arguments)}" for r in group.requests)
        if group.requests and not any(
            overlaps(g.requests[0], group.requests[0])
            and set(signature) <= {f"{r.name}:{canonical(r.arguments)}" for r in g.requests}
            for g in kept
        ):
            kept.append(group)
    return kept


def _collapsed_value(execution: Any, requested: Any) -> bool:
    """OpenInference-LangChain collapses `{"city": "Paris"}` to `"Paris"`."""
    if isinstance(execution, dict) or not isinstance(requested, dict) or len(requested) != 1:
        return False
    (value,) = requested.values()
    return bool(canonical(value) == canonical(execution) or str(value) == str(execution))


def _matches(rule: int, e: ToolCall, r: ToolCall) -> bool:
    """Pairing rule 0: same call id; 1: same canonical arguments; 2: arguments tell nothing."""
    if r.name != e.name or r.start_ns > e.end_ns:
        return False
    if rule == 0:
        return e.call_id is not None and r.call_id == e.call_id
    if e.call_id is not None and r.call_id is not None:
        return False
    if rule == 1:
        return not unknown_arguments(e.arguments) and canonical(e.arguments) == canonical(
            r.arguments
        )
    return unknown_arguments(e.arguments) or _collapsed_value(e.arguments, r.arguments)


def _pair(executions: list[ToolCall], requests: list[ToolCall]) -> dict[str, ToolCall]:
    """Execution span id → its request (requests in step order, executions in start order)."""
    paired: dict[str, ToolCall] = {}
    free = list(requests)
    for rule in (0, 1, 2):
        for e in executions:
            if e.span_id in paired:
                continue
            found = next((r for r in free if _matches(rule, e, r)), None)
            if found is not None:
                paired[e.span_id] = found
                free.remove(found)
    return paired


def reconcile(calls: Sequence[ToolCall], notes: dict[str, str] | None = None) -> list[ToolCall]:
    """One turn's stored rows → each call once, with `step`, in (step, request order, start).

    `notes`, when given, receives span id → what became of that row (for `tooltrail extract`).
    """
    folded = collapse(c for c in calls if c.executed)
    executions = sorted(folded.calls, key=lambda c: (c.start_ns, c.span_id))
    groups = _request_groups(c for c in calls if not c.executed)
    group_of = {r.span_id: g for g in groups for r in g.requests}
    paired = _pair(executions, [r for g in groups for r in g.requests])
    assigned = {e: group_of[r.span_id] for e, r in paired.items()}
    _infer_groups(executions, assigned)
    answered = {r.span_id for r in paired.values()}
    unanswered = [r for g in groups for r in g.requests if r.span_id not in answered]
    live = {id(g): g for g in (*assigned.values(), *(group_of[r.span_id] for r in unanswered))}
    for step, group in enumerate(sorted(live.values(), key=lambda g: g.start)):
        group.step = step
    out: list[tuple[tuple[int, int, int, str], ToolCall]] = []
    for e in executions:
        step = assigned[e.span_id].step
        request = paired.get(e.span_id)
        if request is None:
            out.append(((step, LAST, e.start_ns, e.span_id), dataclasses.replace(e, step=step)))
        else:
            key = (step, request_index(request)[1], e.start_ns, e.span_id)
            out.append((key, _from_request(e, request, step)))
    for r in unanswered:
        step = group_of[r.span_id].step
        key = (step, request_index(r)[1], r.start_ns, r.span_id)
        out.append((key, dataclasses.replace(r, step=step, executed=False)))
    if notes is not None:
        _explain(notes, calls, folded, paired, assigned, unanswered, group_of)
    return [call for _, call in sorted(out, key=lambda item: item[0])]


def _explain(
    notes: dict[str, str], calls: Sequence[ToolCall], folded: Collapsed,
    paired: dict[str, ToolCall], assigned: dict[str, _Group], unanswered: list[ToolCall],
    group_of: dict[str, _Group],
) -> None:
    for call in calls:
        notes[call.span_id] = "duplicate request (same call id or repeated by a nested LLM span)"
    for inner, outer in folded.merged_into.items():
        notes[inner] = f"duplicate of span {outer}: folded into it"
    for span, group in assigned.items():
        request = paired.get(span)
        if request is None:
            notes[span] = f"step {group.step} (from overlapping sibling tool spans)"
        else:
            notes[span] = f"step {group.step}, answers request {request.span_id}"
            notes[request.span_id] = f"answered by span {span}"
    for r in unanswered:
        notes[r.span_id] = f"step {group_of[r.span_id].step}: requested, never executed"


def _from_request(execution: ToolCall, request: ToolCall, step: int) -> ToolCall:
    arguments, raw = execution.arguments, execution.arguments_raw
    if not unknown_arguments(request.arguments) and (
        unknown_arguments(arguments) or _collapsed_value(arguments, request.arguments)
    ):
        arguments, raw = request.arguments, request.arguments_raw
    return dataclasses.replace(
        execution, call_id=execution.call_id or request.call_id, arguments=arguments,
        arguments_raw=raw, step=step, executed=True,
    )


def _infer_groups(executions: list[ToolCall], assigned: dict[str, _Group]) -> None:
    """Give every unpaired execution a group: an overlapping sibling's, or a new shared one."""
    for e in executions:
        if e.span_id in assigned:
            continue
        sibling = next(
            (assigned[o.span_id] for o in executions
             if o.span_id in assigned and o.span_id != e.span_id
             and o.parent_span_id == e.parent_span_id and overlaps(o, e)),
            None,
        )
        assigned[e.span_id] = sibling or _Group(e.start_ns)


def reconcile_rows(rows: Iterable[Mapping[Any, Any]]) -> dict[Any, list[dict[str, Any]]]:
    """Stored `tool_calls` rows (any order, any turns) → turn id → reconciled rows in order.

    Each output row is the stored row of the kept span with the reconciled fields overlaid
    (`call_id`, `arguments`, `arguments_raw`, `result`, `error`, `status`, `step`, `executed`).
    """
    by_turn: dict[Any, list[ToolCall]] = {}
    stored: dict[tuple[str, str], Mapping[Any, Any]] = {}
    for row in rows:
        call = call_from_row(row)
        stored[(call.trace_id, call.span_id)] = row
        by_turn.setdefault(row["turn_id"], []).append(call)
    out: dict[Any, list[dict[str, Any]]] = {}
    for turn, calls in by_turn.items():
        out[turn] = [
            {**stored[(c.trace_id, c.span_id)], **overlay(c)} for c in reconcile(calls)
        ]
    return out


def call_from_row(row: Mapping[Any, Any]) -> ToolCall:
    """A stored row as a ToolCall (columns not selected take their defaults)."""
    return ToolCall(
        trace_id=row["trace_id"], span_id=row["span_id"],
        parent_span_id=row.get("parent_span_id"), name=row["name"], call_id=row.get("call_id"),
        arguments=row.get("arguments"), arguments_raw=row.get("arguments_raw"),
        result=row.get("result"), error=row.get("error"), status=row.get("status") or "ok",
        start_ns=row.get("start_ns") or 0, end_ns=row.get("end_ns") or 0,
        convention=row.get("convention") or "", step=row.get("step"),
        executed=bool(row.get("executed", True)),
    )


def overlay(call: ToolCall) -> dict[str, Any]:
    """The fields reconciliation may change."""
    return {
        "call_id": call.call_id, "arguments": call.arguments,
        "arguments_raw": call.arguments_raw, "result": call.result, "error": call.error,
        "status": call.status, "step": call.step, "executed": call.executed,
    }
