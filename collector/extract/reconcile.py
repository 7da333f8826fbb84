"""Each call once, with its step: one pure function over the stored rows of one turn.

Extraction stores what each span says: executions (tool spans) and requests (the model's
`tool_call` parts, `executed=False`, span id `{llm span}#{j}`). Request and execution may arrive
in different OTLP requests, so they are paired here, at read time, by the worker
(`scoring.trajectory`) and the REST view (`queries.conversation_turns`) alike:

1. duplicate executions collapse (`dedup`: nested MCP / framework spans, same call id, two
   instrumentations of one call);
2. requests are deduplicated (same call id; an LLM span nested in another repeating its calls);
3. each execution is paired with a request by call id, else by name + canonical arguments +
   order — also when both carry ids that pair with nothing on the other side, as when the
   model's ids and the executions' come from different id spaces (Google ADK 2.x default
   schema: `get_weather_0` on the LLM span, `adk-<uuid>` on the tool span) —, the arguments
   being the execution's own or an object nested in them (a framework's envelope around the
   requested arguments: LlamaIndex's `{"kwargs": {...}}`, smolagents' `{"args": [],
   "sanitize_inputs_outputs": true, "kwargs": {...}}`, `envelope_of`), else by name
   when either side's arguments tell nothing (content capture off, keys
   dropped by an attribute limit) or the execution's were collapsed (OpenInference-LangChain's
   `"Paris"` for `{"city": "Paris"}`). The execution wins for result,
   error and timing; the request supplies a missing call id, uncaptured arguments, and its
   own arguments where the execution's wrap them;
4. steps: the requests of one LLM span are one step; an unpaired execution joins an overlapping
   sibling's step, or overlapping unpaired siblings form one; steps are numbered in time order;
5. a request never executed stays, `executed=False`, only when no execution can be its;
6. a call waiting for the user's approval (`pending`) or refused (`rejected`) answers its
   request but was not executed (`approvals`); across the turns of a conversation, `settle`
   marks pending a call that a later turn executes under the same call id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tooltrail.collector.extract.approvals import PENDING, unexecuted
from tooltrail.collector.extract.decoding import canonical, unknown_arguments
from tooltrail.collector.extract.dedup import Collapsed, collapse, overlaps
from tooltrail.collector.model import ToolCall

REQUESTED = "requested"  # status of a request row (`requests.request_rows`)
LAST = 1 << 30  # order of an execution that no request announced, within its step


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
    """Requests grouped by LLM span, in time order, without duplicates (same call id; an LLM
    span nested in another that repeats its calls, like ADK's `call_llm` > `generate_content`)."""
    groups: dict[str, _Group] = {}
    for r in sorted(requests, key=lambda r: (r.start_ns, request_index(r))):
        groups.setdefault(request_index(r)[0], _Group(r.start_ns)).requests.append(r)
    kept: list[_Group] = []
    signatures: dict[int, set[str]] = {}  # computed only for groups that overlap another

    def signature(group: _Group) -> set[str]:
        if id(group) not in signatures:
            signatures[id(group)] = {f"{r.name}:{canonical(r.arguments)}" for r in group.requests}
        return signatures[id(group)]

    seen_ids: set[str] = set()
    for group in groups.values():
        group.requests = [r for r in group.requests if not (r.call_id and r.call_id in seen_ids)]
        seen_ids.update(r.call_id for r in group.requests if r.call_id)
        if not group.requests:
            continue
        first = group.requests[0]
        if not any(overlaps(g.requests[0], first) and signature(group) <= signature(g)
                   for g in kept):
            kept.append(group)
    return kept


def _collapsed_value(execution: Any, requested: Any) -> bool:
    """OpenInference-LangChain collapses `{"city": "Paris"}` to `"Paris"`."""
    if isinstance(execution, dict) or not isinstance(requested, dict) or len(requested) != 1:
        return False
    (value,) = requested.values()
    return bool(canonical(value) == canonical(execution) or str(value) == str(execution))


MAX_ENVELOPE_DEPTH = 4  # levels of nesting searched for the requested arguments
MAX_ENVELOPE_OBJECTS = 64  # objects looked at in one execution's arguments


def _nested_objects(value: Any) -> list[Any]:
    """The JSON objects nested in `value` (not `value` itself), outermost first, through
    objects and lists, at most MAX_ENVELOPE_DEPTH levels down and MAX_ENVELOPE_OBJECTS of them."""
    found: list[Any] = []
    level = [value]
    for _ in range(MAX_ENVELOPE_DEPTH):
        deeper: list[Any] = []
        for holder in level:
            for child in holder.values() if isinstance(holder, dict) else holder:
                if isinstance(child, dict):
                    found.append(child)
                    deeper.append(child)
                elif isinstance(child, list):
                    deeper.append(child)
                if len(found) >= MAX_ENVELOPE_OBJECTS:
                    return found
        if not deeper:
            break
        level = deeper
    return found


def envelope_of(execution: Any, requested: Any) -> bool:
    """True when the execution's arguments are a framework's envelope around the requested
    ones: an object holding them as an object nested at any key (LlamaIndex's OpenInference
    `{"kwargs": {...}}`, smolagents' `{"args": [], "sanitize_inputs_outputs": true,
    "kwargs": {...}}`). Requested `{}` (a tool without parameters, or arguments not captured)
    is wrapped only by an envelope holding nothing but it and scalars (`{"kwargs": {}}`), so
    that a call whose arguments hold more is never emptied."""
    if not isinstance(execution, dict) or not isinstance(requested, dict):
        return False
    if not requested:
        values = execution.values()
        return {} in values and all(v in ({}, []) or not isinstance(v, dict | list)
                                    for v in values)
    key = canonical(requested)
    return any(o == requested and canonical(o) == key for o in _nested_objects(execution))


def _pair(executions: list[ToolCall], requests: list[ToolCall]) -> dict[str, ToolCall]:
    """Execution span id → its request: by call id, else by name + canonical arguments (the
    execution's own, else an object nested in them, outermost first: `envelope_of`), else
    by name when the execution's arguments tell nothing; requests in step order, executions in
    start order, a request never after its execution ended."""
    by_id: dict[str, list[ToolCall]] = {}
    by_key: dict[tuple[str, str], list[ToolCall]] | None = None  # once an id leaves one unpaired
    by_name: dict[str, list[ToolCall]] = {}
    for r in requests:
        if r.call_id:
            by_id.setdefault(r.call_id, []).append(r)
        by_name.setdefault(r.name, []).append(r)
    paired: dict[str, ToolCall] = {}
    taken: set[str] = set()
    executed_ids = {e.call_id for e in executions if e.call_id}

    def unbound(e: ToolCall, r: ToolCall) -> bool:
        """The two ids cannot veto a pairing: one is missing, or they come from different id
        spaces (ADK 2.x: the model span says `get_order_0`, the tool span `adk-<uuid>`) — the
        execution's id names no request of the turn and the request's no execution."""
        return (
            e.call_id is None or r.call_id is None
            or (e.call_id not in by_id and r.call_id not in executed_ids)
        )

    def take(e: ToolCall, candidates: list[ToolCall], loose: bool) -> None:
        for r in candidates:
            # an execution without a name (a Strands interrupt names only the call id)
            # pairs by id alone and takes the request's name
            if r.span_id in taken or (e.name and r.name != e.name) or r.start_ns > e.end_ns:
                continue
            if loose and not (
                unbound(e, r)
                and (unknown_arguments(e.arguments) or unknown_arguments(r.arguments)
                     or _collapsed_value(e.arguments, r.arguments))
            ):
                continue
            if not loose and e.call_id != r.call_id and not unbound(e, r):
                continue
            paired[e.span_id] = r
            taken.add(r.span_id)
            return

    for e in executions:
        if e.call_id:
            take(e, by_id.get(e.call_id, []), loose=False)
    for e in executions:
        if e.span_id not in paired and not unknown_arguments(e.arguments):
            if by_key is None:
                by_key = {}
                for r in requests:
                    by_key.setdefault((r.name, canonical(r.arguments)), []).append(r)
            take(e, by_key.get((e.name, canonical(e.arguments)), []), loose=False)
            if e.span_id in paired or not isinstance(e.arguments, dict | list):
                continue
            for inner in _nested_objects(e.arguments):
                if inner:  # `{}` tells nothing: the by-name pass below
                    take(e, by_key.get((e.name, canonical(inner)), []), loose=False)
                    if e.span_id in paired:
                        break
    for e in executions:
        if e.span_id not in paired:
            take(e, by_name.get(e.name, []), loose=True)
    return paired


@dataclass(frozen=True, slots=True)
class Placed:
    """A call reconciliation kept, and where it goes, before any copy is made: `call` is the
    execution (or a request never executed), `request` the request it answers."""

    call: ToolCall
    step: int
    request: ToolCall | None = None

    @property
    def call_id(self) -> str | None:
        """`merged()`'s call id, without deciding the arguments."""
        r = self.request
        return self.call.call_id if r is None else self.call.call_id or r.call_id

    def merged(self) -> tuple[str | None, Any, str | None]:
        """(call_id, arguments, arguments_raw): the execution's, with the request supplying a
        missing call id and arguments the execution did not capture, collapsed, or wrapped in
        a framework's envelope (`envelope_of`)."""
        e, r = self.call, self.request
        if r is None:
            return e.call_id, e.arguments, e.arguments_raw
        arguments, raw = e.arguments, e.arguments_raw
        if unknown_arguments(r.arguments):
            if r.arguments == {} and not unknown_arguments(arguments) and envelope_of(
                    arguments, r.arguments):
                arguments, raw = r.arguments, r.arguments_raw
        elif (unknown_arguments(arguments) or _collapsed_value(arguments, r.arguments)
              or (arguments != r.arguments and envelope_of(arguments, r.arguments))):
            arguments, raw = r.arguments, r.arguments_raw
        return e.call_id or r.call_id, arguments, raw

    def resolved(self) -> ToolCall:
        """The call as one ToolCall with its step."""
        if self.request is None:
            return self.call.evolve(step=self.step)
        call_id, arguments, raw = self.merged()
        return self.call.evolve(
            call_id=call_id, arguments=arguments, arguments_raw=raw, step=self.step
        )


def reconcile(calls: Sequence[ToolCall], notes: dict[str, str] | None = None) -> list[ToolCall]:
    """One turn's stored rows → each call once, with `step`, in (step, request order, start).

    `notes`, when given, receives span id → what became of that row (for `tooltrail extract`).
    """
    return [p.resolved() for p in place(calls, notes)]


def place(calls: Sequence[ToolCall], notes: dict[str, str] | None = None) -> list[Placed]:
    """What `reconcile` returns, before the calls are copied: for readers that need only some
    fields (the scoring worker) and should not pay for a copy of every call."""
    folded = collapse(c for c in calls if c.executed)
    executions = sorted(folded.calls, key=lambda c: (c.start_ns, c.span_id))
    groups = _request_groups(c for c in calls if not c.executed)
    group_of = {r.span_id: g for g in groups for r in g.requests}
    paired = _pair(executions, [r for g in groups for r in g.requests]) if groups else {}
    # a nameless execution no request named says nothing about a call
    executions = [e for e in executions if e.name or e.span_id in paired]
    assigned = {e: group_of[r.span_id] for e, r in paired.items()}
    _infer_groups(executions, assigned)
    answered = {r.span_id for r in paired.values()}
    unanswered = [r for g in groups for r in g.requests if r.span_id not in answered]
    live = {id(g): g for g in (*assigned.values(), *(group_of[r.span_id] for r in unanswered))}
    for step, group in enumerate(sorted(live.values(), key=lambda g: g.start)):
        group.step = step
    out: list[tuple[tuple[int, int, int, str], Placed]] = []
    for e in executions:
        step = assigned[e.span_id].step
        request = paired.get(e.span_id)
        order = LAST if request is None else request_index(request)[1]
        call = e.evolve(executed=False) if unexecuted(e) else e
        if not call.name and request is not None:
            call = call.evolve(name=request.name)
        out.append(((step, order, e.start_ns, e.span_id), Placed(call, step, request)))
    for r in unanswered:
        step = group_of[r.span_id].step
        key = (step, request_index(r)[1], r.start_ns, r.span_id)
        out.append((key, Placed(r, step)))
    if notes is not None:
        _explain(notes, calls, folded, paired, assigned, unanswered, group_of)
    return [placed for _, placed in sorted(out, key=lambda item: item[0])]


def settle(turns: Sequence[list[Placed]]) -> list[list[Placed]]:
    """A conversation's placed turns, in turn order, with each execution that a later turn
    executes again under the same name and call id, and that has neither result nor error
    itself, marked pending (not executed), and so each request that no execution of its turn
    answered and a later turn executes (a run stopped before the tool, showing no tool span):
    it was the call waiting for the user's approval
    (OpenAI Agents `needs_approval`, LangGraph interrupts, ADK tool confirmation, AI SDK 7
    `toolApproval`). An
    execution no request of its own turn announced takes the arguments its call id had in an
    earlier turn when its own are missing or collapsed (LangChain's approved call runs in the
    resumed run, its `"alice"` for the model's `{"login": "alice"}`)."""
    asked: dict[tuple[str, str], ToolCall] = {}
    informed: list[list[Placed]] = []
    for placed in turns:
        mine = []
        for p in placed:
            call_id = p.call_id
            earlier = asked.get((p.call.name, call_id)) if call_id else None
            mine.append(Placed(p.call, p.step, earlier)
                        if p.request is None and earlier is not None else p)
        for p in mine:
            if call_id := p.call_id:
                asked.setdefault((p.call.name, call_id), p.request or p.call)
        informed.append(mine)
    later: set[tuple[str, str]] = set()
    out: list[list[Placed]] = []
    for placed in reversed(informed):
        kept = []
        for p in placed:
            c, call_id = p.call, p.call_id
            waited = c.result is None and c.error is None and (
                c.executed or c.status == REQUESTED)  # or a request no execution answered
            if waited and call_id and (c.name, call_id) in later:
                p = Placed(c.evolve(status=PENDING, executed=False), p.step, p.request)
            kept.append(p)
        later.update((p.call.name, cid) for p in placed  # executed, or refused by the user
                     if (p.call.executed or unexecuted(p.call)) and (cid := p.call_id))
        out.append(kept)
    return out[::-1]


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
    for call in folded.calls:
        request = paired.get(call.span_id)
        if request is not None and Placed(call, 0, request).merged()[1] is not call.arguments \
                and envelope_of(call.arguments, request.arguments):
            notes[call.span_id] += " (its input wraps the requested arguments: they are kept)"
        if unexecuted(call):
            notes[call.span_id] += f" ({call.status}: waiting for or refused by the user)"


def _infer_groups(executions: list[ToolCall], assigned: dict[str, _Group]) -> None:
    """Give every unpaired execution a group: an overlapping sibling's, or a new shared one."""
    siblings: dict[str | None, list[ToolCall]] = {}
    for e in executions:
        siblings.setdefault(e.parent_span_id, []).append(e)
    for e in executions:
        if e.span_id in assigned:
            continue
        start, end = e.start_ns, e.end_ns  # `overlaps(o, e)` inline and first: a turn of many
        # sequential calls compares every pair, and most overlap nothing
        group = next(
            (assigned[o.span_id] for o in siblings[e.parent_span_id]
             if o.start_ns < end and start < o.end_ns and o.span_id in assigned
             and o.span_id != e.span_id),
            None,
        )
        assigned[e.span_id] = group or _Group(e.start_ns)


def reconcile_rows(rows: Iterable[Mapping[Any, Any]]) -> dict[Any, list[dict[str, Any]]]:
    """Stored `tool_calls` rows (any order, any turns) → turn id → reconciled rows in order.

    Each output row is the stored row of the kept span with the reconciled fields overlaid
    (`name`, `call_id`, `arguments`, `arguments_raw`, `result`, `error`, `status`, `step`,
    `executed`).
    """
    by_turn: dict[Any, list[ToolCall]] = {}
    stored: dict[tuple[str, str], Mapping[Any, Any]] = {}
    for row in rows:
        call = call_from_row(row)
        stored[(call.trace_id, call.span_id)] = row
        by_turn.setdefault(row["turn_id"], []).append(call)
    # turns in time order (of their first call), for `settle` across turns
    order = sorted(by_turn, key=lambda t: min(c.start_ns for c in by_turn[t]))
    placed = settle([place(by_turn[turn]) for turn in order])
    return {
        turn: [{**stored[(p.call.trace_id, p.call.span_id)], **overlay(p.resolved())} for p in ps]
        for turn, ps in zip(order, placed, strict=True)
    }


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
    """The fields reconciliation may change (`name` only for an execution that named none)."""
    return {
        "name": call.name, "call_id": call.call_id, "arguments": call.arguments,
        "arguments_raw": call.arguments_raw, "result": call.result, "error": call.error,
        "status": call.status, "step": call.step, "executed": call.executed,
    }
