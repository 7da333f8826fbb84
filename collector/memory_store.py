"""An in-memory store for `tooltrail check`: what the writer would store, read through the
interface scoring reads (`collector.scorer.ScoringReads`), with no database.

`add` keeps one prepared batch as `collector.store.persist.write_prepared` stores a group
commit of that one batch: a turn is new, or folded into its stored turn (a later view that
knows a surer conversation key moves the turn and its calls there; one that knows less never
does); a span stored once by (trace id, span id), the first kept; a new conversation takes the
attributes and service of its last trace in the batch, later ones add only attributes it does
not have (the first seen), and a service only if it has none (its `service.name`); a
conversation a re-keyed turn left with no turn is dropped. (The writer groups whatever
batches are waiting into one commit, so where two traces of one new conversation disagree on
an attribute its value depends on that grouping there; here it is always a batch.) Reads
give what the store's reads give: the facts selectors see (`leases.facts_upto`), each turn's
calls as `leases.trajectory_rows` decodes them (the prepared rows' JSON read back), and a
conversation's row and rows as `queries.get_conversation` / `queries.conversation_rows`
return them, so `check` scores and shows what a server stores
(`tests/collector/test_memory_store.py`).

A turn keeps the call rows each batch added as one compressed pickle (`_pack`): `check` holds
every conversation of its inputs at once, and packed rows take a fraction of the memory of
the row tuples (their ids and attribute keys repeat); they are unpacked only when scored or
shown, a chunk of conversations at a time.
"""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from tooltrail.collector.model import POSITION_PREFIX, ToolCall
from tooltrail.collector.store.jsonio import loads
from tooltrail.collector.store.leases import RESULT_PRESENT, ConversationFacts, TurnOrder
from tooltrail.collector.store.persist import CALL_COLUMNS, ShownCounts, merge_traces
from tooltrail.collector.store.rows import CALL_FIELDS, PreparedBatch

__all__ = ["MemoryStore"]

_ARGUMENTS, _RESULT, _ATTRIBUTES = (CALL_FIELDS.index(n) for n in
                                    ("arguments", "result", "attributes"))
_JSON = (_ARGUMENTS, _RESULT, _ATTRIBUTES)
_STATUS, _EXECUTED, _START, _SPAN = (CALL_FIELDS.index(n) for n in
                                     ("status", "executed", "start_ns", "span_id"))


@dataclass(slots=True)
class _Turn:
    id: int
    conversation_id: int
    turn_key: str
    trace_id: str
    start_ns: int
    end_ns: int
    key_rank: int
    has_agent_root: bool
    agents: set[str]
    root_span_id: str | None
    packed: list[bytes] = field(default_factory=list)  # per batch: `_pack`ed (id, row)s
    span_ids: set[str] = field(default_factory=set)  # the calls' span ids, each stored once

    @property
    def calls(self) -> Iterator[tuple[int, tuple[Any, ...]]]:
        """(id, row) of each call, in the order they were added."""
        for blob in self.packed:
            yield from _unpack(blob)


@dataclass(slots=True)
class _Conversation:
    id: int
    project: str
    key: str
    service: str | None
    first_seen: float
    last_seen: float
    attributes: dict[str, Any] = field(default_factory=dict)
    change_seq: int = 1
    turns: dict[int, _Turn] = field(default_factory=dict)


class MemoryStore:
    """Conversations, turns and calls as the writer stores them, in memory."""

    def __init__(self) -> None:
        self._conversations: dict[tuple[str, str], _Conversation] = {}
        self._by_id: dict[int, _Conversation] = {}
        self._turns: dict[str, _Turn] = {}
        self._next = 0  # one sequence for every id: ids only order and name rows

    def _id(self) -> int:
        self._next += 1
        return self._next

    def add(self, batch: PreparedBatch, now: float) -> None:
        """Keep one batch as one group commit of the writer keeps it."""
        infos = merge_traces([batch])
        if not infos:
            return
        existing = {k for k in infos if k in self._turns}
        first = {(i.project, i.conversation_key): i for k, i in infos.items()
                 if k not in existing or i.key_rank > self._turns[k].key_rank}
        for pk in sorted(first):
            if pk not in self._conversations:
                info = first[pk]
                conv = _Conversation(self._id(), info.project, info.conversation_key,
                                     info.service, now, now, dict(info.attributes))
                self._conversations[pk] = conv
                self._by_id[conv.id] = conv
        touched: set[int] = set()
        orphans: set[int] = set()
        for key, info in sorted(infos.items()):
            if key in existing:
                continue
            conv = self._conversations[(info.project, info.conversation_key)]
            turn = _Turn(self._id(), conv.id, key, info.trace_id, info.start_ns, info.end_ns,
                         info.key_rank, info.has_agent_root, set(info.agents), info.root_span_id)
            self._turns[key] = turn
            conv.turns[turn.id] = turn
            touched.add(conv.id)
        for key in existing:
            info, turn = infos[key], self._turns[key]
            if info.key_rank > turn.key_rank:
                target = self._conversations[(info.project, info.conversation_key)]
                if target.id != turn.conversation_id:
                    orphans.add(turn.conversation_id)
                    del self._by_id[turn.conversation_id].turns[turn.id]
                    target.turns[turn.id] = turn
                    turn.conversation_id = target.id
                turn.key_rank = info.key_rank
            turn.start_ns = min(turn.start_ns, info.start_ns)
            turn.end_ns = max(turn.end_ns, info.end_ns)
            turn.has_agent_root = turn.has_agent_root or info.has_agent_root
            turn.agents |= info.agents
            turn.root_span_id = turn.root_span_id or info.root_span_id
            touched.add(turn.conversation_id)
        seen: dict[int, dict[str, Any]] = {}
        for key, info in infos.items():
            cid = self._turns[key].conversation_id
            seen[cid] = {**info.attributes, **seen.get(cid, {})}
            if info.service:
                seen[cid].setdefault("service.name", info.service)
        added: dict[str, list[tuple[int, tuple[Any, ...]]]] = {}
        for row in batch.calls:
            turn = self._turns[row[0]]  # a call row's trace id is its turn's key
            if row[1] not in turn.span_ids:
                turn.span_ids.add(row[1])
                added.setdefault(row[0], []).append((self._id(), row))
        for key, calls in added.items():
            self._turns[key].packed.append(_pack(calls))
        for cid in touched | set(seen):
            conv = self._by_id[cid]
            conv.attributes = {**seen.get(cid, {}), **conv.attributes}
            conv.service = conv.service or conv.attributes.get("service.name")
            conv.last_seen = now
            conv.change_seq += 1
        for cid in orphans:
            conv = self._by_id[cid]
            if not conv.turns:
                del self._by_id[cid], self._conversations[(conv.project, conv.key)]

    # -- what scoring reads (collector.scorer.ScoringReads)

    def facts(self) -> list[ConversationFacts]:
        """Every conversation's selector facts, in id order."""
        return [ConversationFacts(c.id, c.key, c.service, tuple(_agents(c)), c.attributes,
                                  c.change_seq, c.last_seen, c.project)
                for c in self._by_id.values()]

    def trajectory_rows(self, ids: Sequence[int], *, results: bool = True
                        ) -> tuple[TurnOrder, dict[int, list[ToolCall]]]:
        """`leases.trajectory_rows`: each conversation's turns in start order, each turn's
        calls as stored (without `results`, a result is only whether there is one)."""
        order: TurnOrder = {}
        calls: dict[int, list[ToolCall]] = {}
        for cid in ids:
            turns = _in_order(self._by_id[cid])
            order[cid] = [(t.id, t.turn_key) for t in turns]
            for t in turns:
                if t.packed:
                    calls[t.id] = [_tool_call(row, results) for _, row in t.calls]
        return order, calls

    # -- what showing a conversation reads (queries.get_conversation, conversation_rows)

    def conversation_id(self, key: str, project: str) -> int | None:
        conv = self._conversations.get((project, key))
        return None if conv is None else conv.id

    def conversation_row(self, cid: int, shown: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """The conversations row, its counts as the writer keeps them (`shown`: its turns as
        `conversation_view.shown_turns` gives them, which count those that mix explicit and
        traced turns, as `persist.recount_merged` does)."""
        conv = self._by_id[cid]
        turns = list(conv.turns.values())
        explicit = [t.turn_key.startswith(POSITION_PREFIX) for t in turns]
        if any(explicit) and not all(explicit):
            executed = [c for t in shown for c in t["tool_calls"] if c["executed"]]
            counts = ShownCounts(len(shown), len(executed),
                                 sum(c["status"] == "error" for c in executed))
        else:
            rows = [row for t in turns for _, row in t.calls if row[_EXECUTED]]
            counts = ShownCounts(len(turns), len(rows),
                                 sum(row[_STATUS] == "error" for row in rows))
        return {"id": conv.id, "project": conv.project, "key": conv.key,
                "service": conv.service, "agents": _agents(conv),
                "attributes": conv.attributes, "first_seen": conv.first_seen,
                "last_seen": conv.last_seen,
                "start_ns": min((t.start_ns for t in turns), default=0),
                "end_ns": max((t.end_ns for t in turns), default=0),
                "turn_count": counts.turns, "call_count": counts.calls,
                "error_count": counts.errors, "change_seq": conv.change_seq,
                "scored_seq": 0}

    def conversation_rows(self, cid: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """`queries.conversation_rows`: turn rows in start order, call rows (decoded) in (start,
        span id) order."""
        turns = _in_order(self._by_id[cid])
        turn_rows = [{"id": t.id, "conversation_id": cid, "turn_key": t.turn_key,
                      "trace_id": t.trace_id, "start_ns": t.start_ns, "end_ns": t.end_ns,
                      "key_rank": t.key_rank, "has_agent_root": t.has_agent_root,
                      "agents": sorted(t.agents), "root_span_id": t.root_span_id}
                     for t in turns]
        calls = sorted(((t, call_id, row) for t in turns for call_id, row in t.calls),
                       key=lambda c: (c[2][_START], c[2][_SPAN]))
        call_rows = [{"id": call_id, **dict(zip(CALL_COLUMNS, (cid, t.id, *_decoded(row)),
                                                strict=True))}
                     for t, call_id, row in calls]
        return turn_rows, call_rows


def _pack(calls: list[tuple[int, tuple[Any, ...]]]) -> bytes:
    return zlib.compress(pickle.dumps(calls, pickle.HIGHEST_PROTOCOL), 1)


def _unpack(blob: bytes) -> list[tuple[int, tuple[Any, ...]]]:
    calls: list[tuple[int, tuple[Any, ...]]] = pickle.loads(zlib.decompress(blob))
    return calls  # only bytes this process packed are ever unpacked


def _agents(conv: _Conversation) -> list[str]:
    return sorted(set().union(*(t.agents for t in conv.turns.values())))


def _in_order(conv: _Conversation) -> list[_Turn]:
    return sorted(conv.turns.values(), key=lambda t: (t.start_ns, t.id))


def _decoded(row: tuple[Any, ...]) -> list[Any]:
    out = list(row)
    for i in _JSON:
        if out[i] is not None:
            out[i] = loads(out[i])
    return out


def _tool_call(row: tuple[Any, ...], results: bool) -> ToolCall:
    """A stored row as `leases.trajectory_calls` builds its call."""
    (trace_id, span_id, parent, call_id, name, arguments, raw, result, error, status, start,
     end, step, convention, executed, _attributes, _source) = row
    value = loads(result) if result is not None else None
    return ToolCall(trace_id, span_id, parent, name, call_id,
                    loads(arguments) if arguments is not None else None, raw,
                    value if results else (RESULT_PRESENT if value is not None else None), error,
                    status or "ok", start or 0, end or 0, convention or "", {}, step,
                    bool(executed))
