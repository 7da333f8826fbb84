"""Explicit calls of a turn merged with the traced calls of the same turn, at read time.

An explicit capture names its turn by position (`index`, zero-based, ArkSim's `turn_id`), and
the OTel spans of that turn may arrive before it or after it. So explicit calls are stored in
a turn of their own, keyed by position (`position_key`), and every reader (the REST view, the
scoring worker) pairs positions with stored turns when it reads: the stored turns that are not
positional, in start order, hold positions 0, 1, …; the explicit turn of position i joins the
i-th of them, or stands alone (after them, in position order) while that turn has not arrived.
Arrival order therefore never matters, and the writer stores explicit calls like any others.

Merging one turn (ArkSim's deduplication): an explicit call replaces the traced call with the
same call id; then one with the same signature (name, canonical arguments); an explicit call
that matches nothing is kept, after the traced calls; so is every traced call left unmatched.
The explicit call wins (its fields; the traced call's step, and its call id when the explicit
one has none).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from tooltrail.collector.extract.decoding import canonical
from tooltrail.collector.extract.traces import derived_key
from tooltrail.collector.model import POSITION_PREFIX
from tooltrail.collector.projects import DEFAULT_PROJECT
from tooltrail.matcher import Call

T = TypeVar("T")
K = TypeVar("K")


def position_key(conversation: str, index: int, project: str = DEFAULT_PROJECT) -> str:
    """The turn key of the explicit calls of turn `index` of `conversation` in `project`
    (unique across projects, which turn keys must be; short enough to index, as the writer
    keys turns; the position stays readable in its prefix)."""
    return derived_key(f"{POSITION_PREFIX}{index}:{project}:{conversation}")


def position_of(turn_key: str) -> int | None:
    """The position a turn key names, or None for a turn that is not positional."""
    if not turn_key.startswith(POSITION_PREFIX):
        return None
    head, sep, _ = turn_key[len(POSITION_PREFIX):].partition(":")
    return int(head) if sep and head.isdigit() else None


def logical_turns(turns: Sequence[tuple[K, str]]) -> list[tuple[K | None, K | None]]:
    """(stored turn, explicit turn) per position, for `turns` = (id, turn key) in start order."""
    ordered = [tid for tid, key in turns if position_of(key) is None]
    explicit: dict[int, K] = {}
    for tid, key in turns:
        position = position_of(key)
        if position is not None:
            explicit.setdefault(position, tid)
    positions = sorted(set(range(len(ordered))) | set(explicit))
    return [(ordered[p] if p < len(ordered) else None, explicit.get(p)) for p in positions]


@dataclass(frozen=True, slots=True)
class Access(Generic[T]):
    """How to read and rebuild one kind of call (a REST row, a scored matcher Call)."""

    call_id: Callable[[T], str | None]
    name: Callable[[T], str]
    arguments: Callable[[T], Any]
    step: Callable[[T], int | None]
    rebuild: Callable[[T, int | None, str | None], T]  # (call, step, call id) → copy


def merge_calls(traced: Sequence[T], explicit: Sequence[T], access: Access[T]) -> list[T]:
    """One turn's calls: `traced` (reconciled, in order) merged with its `explicit` calls."""
    if not explicit:
        return list(traced)
    out = list(traced)
    replaced: set[int] = set()
    by_id: dict[str, int] = {}
    for i, call in enumerate(out):
        call_id = access.call_id(call)
        if call_id:
            by_id.setdefault(call_id, i)
    rest: list[T] = []
    for e in explicit:
        hit = by_id.get(access.call_id(e) or "")
        if hit is None or hit in replaced:
            rest.append(e)
            continue
        out[hit] = access.rebuild(e, access.step(out[hit]), access.call_id(e))
        replaced.add(hit)
    by_signature: dict[tuple[str, str], list[int]] = {}
    for i, call in enumerate(out):
        if i not in replaced:
            by_signature.setdefault(_signature(call, access), []).append(i)
    unmatched: list[T] = []
    for e in rest:
        candidates = by_signature.get(_signature(e, access))
        if not candidates:
            unmatched.append(e)
            continue
        i = candidates.pop(0)
        out[i] = access.rebuild(e, access.step(out[i]),
                                access.call_id(e) or access.call_id(out[i]))
        replaced.add(i)
    steps = [s for s in map(access.step, traced) if s is not None]
    base = max(steps) + 1 if steps else 0
    for e in unmatched:
        step = access.step(e)
        out.append(access.rebuild(e, None if step is None else base + step, access.call_id(e)))
    return out


def _signature(call: T, access: Access[T]) -> tuple[str, str]:
    arguments = access.arguments(call)
    return access.name(call), canonical({} if arguments is None else arguments)


ROW_ACCESS: Access[dict[str, Any]] = Access(
    call_id=lambda r: r.get("call_id"),
    name=lambda r: str(r["name"]),
    arguments=lambda r: r.get("arguments"),
    step=lambda r: r.get("step"),
    rebuild=lambda r, step, call_id: {**r, "step": step, "call_id": call_id},
)

CALL_ACCESS: Access[Call] = Access(
    call_id=lambda c: c.call_id,
    name=lambda c: c.name,
    arguments=lambda c: c.arguments,
    step=lambda c: c.step,
    rebuild=lambda c, step, call_id: dataclasses.replace(c, step=step, call_id=call_id),
)


def merged_rows(
    turn_rows: Sequence[dict[str, Any]], calls: dict[Any, list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    """REST turns (rows in start order, `calls` = turn id → reconciled call rows) with each
    explicit turn joined to the turn at its position; each turn row gets `tool_calls`."""
    by_id = {row["id"]: row for row in turn_rows}
    out = []
    for stored, explicit in logical_turns([(row["id"], row["turn_key"]) for row in turn_rows]):
        row = dict(by_id[stored if stored is not None else explicit])
        if stored is not None and explicit is not None:  # the agents both sides name
            row["agents"] = sorted({*(row["agents"] or ()), *(by_id[explicit]["agents"] or ())})
        row["tool_calls"] = merge_calls(
            calls.get(stored, []) if stored is not None else [],
            calls.get(explicit, []) if explicit is not None else [], ROW_ACCESS)
        out.append(row)
    return out
