"""Scoring, composed: stored calls → reconciled trajectories → matcher results → result rows.

The one composition of extraction's reconciliation (`collector.extract.reconcile`), capture's
merge of explicit calls (`collector.capture.merge`) and the matcher. The worker
(`collector/worker.py`) and `tooltrail check` (`collector/suites/run.py`) both score through
it, the worker over the store's rows (`collector/store/leases.py`, which only reads and
writes rows), `check` over the same rows kept in memory (`ScoringReads`,
`collector/memory_store.py`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import Connection

from tooltrail.collector.capture.merge import CALL_ACCESS, logical_turns, merge_calls
from tooltrail.collector.extract.decoding import ArgumentsUnread
from tooltrail.collector.extract.reconcile import Placed, place, settle
from tooltrail.collector.model import ToolCall
from tooltrail.collector.store import leases
from tooltrail.collector.store.leases import ConversationFacts, TurnOrder, scope_key
from tooltrail.matcher import Call, Expectation, Result, Trajectory, parse_expectation, score

# A call the model requested that never ran (approval denied, turn limit) is scored as called,
# but failed: `error: false` specs and `require_no_errors` catch it.
NOT_EXECUTED = "requested by the model but never executed"


@dataclass(frozen=True, slots=True)
class ActiveExpectation:
    """The newest active version of one expectation, parsed."""

    slug: str
    version: int
    expectation: Expectation
    project: str  # it scores only this project's conversations


@dataclass(frozen=True, slots=True)
class Scored:
    """The results of one expectation on one conversation, ready to store."""

    conversation: ConversationFacts
    expectation: ActiveExpectation
    results: tuple[Result, ...]


def active_expectations(conn: Connection) -> list[ActiveExpectation]:
    """The active version of every active expectation, parsed."""
    return [ActiveExpectation(slug, version, parse_expectation(body), project)
            for slug, version, body, project in leases.active_bodies(conn)]


def applies(exp: Expectation, conv: ConversationFacts) -> bool:
    """Whether an expectation's selector picks this conversation."""
    return exp.selector.matches(
        conversation=conv.key,
        service=conv.service,
        agents=conv.agents,
        attributes=conv.attributes,
    )


class ScoringReads(Protocol):
    """Where scoring reads conversations from other than a store connection: the rows
    `leases.trajectory_rows` gives (`collector.memory_store.MemoryStore`, `tooltrail check`'s
    store)."""

    def trajectory_rows(self, ids: Sequence[int], *, results: bool = True
                        ) -> tuple[TurnOrder, dict[int, list[ToolCall]]]: ...


def trajectories(source: Connection | ScoringReads, ids: Sequence[int], *,
                 results: bool = True) -> dict[int, Trajectory]:
    """The stored conversations `ids` (of a store connection, or of `source`) as the matcher
    sees them (`build_trajectories`). Without `results`, each call's result is only whether
    it has one (`leases.trajectory_rows`): the same calls, turns and errors, for readers that
    count."""
    if isinstance(source, Connection):
        order, calls = leases.trajectory_rows(source, ids, results=results)
    else:
        order, calls = source.trajectory_rows(ids, results=results)
    return build_trajectories(order, calls)


def trajectory(conn: Connection, conversation_id: int) -> Trajectory:
    """One stored conversation's trajectory."""
    return trajectories(conn, [conversation_id])[conversation_id]


def build_trajectories(order: TurnOrder,
                       calls: Mapping[int, list[ToolCall]]) -> dict[int, Trajectory]:
    """Each conversation's calls grouped by turn (`order`: its turns in start order), each turn
    reconciled (`collector.extract.reconcile`: each call once, with its step) and in
    (step, start) order; explicit calls join their turn at their position."""
    return {cid: Trajectory(turns=[_merged(stored, explicit)
                                   for stored, explicit in placed_turns(tids, calls)])
            for cid, tids in order.items()}


Outcome = tuple[str, Any]  # a scored call's (name, error): all that production signals count


def outcomes(order: TurnOrder, calls: Mapping[int, list[ToolCall]]
             ) -> tuple[dict[int, list[list[Outcome]]], list[int]]:
    """What `build_trajectories` gives, as each call's (name, error) per logical turn, without
    copying the calls of turns that merge no explicit calls; and the conversations whose
    reconciliation asked for arguments read as `UNREAD` (`leases.trajectory_calls(arguments=
    False)`), left out: read them with their arguments and ask again."""
    out: dict[int, list[list[Outcome]]] = {}
    unread: list[int] = []
    for cid, tids in order.items():
        try:
            out[cid] = [
                [(p.call.name, scored_error(p.call)) for p in stored] if not explicit
                else [(c.name, c.error) for c in _merged(stored, explicit)]
                for stored, explicit in placed_turns(tids, calls)
            ]
        except ArgumentsUnread:
            unread.append(cid)
    return out, unread


def placed_turns(tids: list[tuple[int, str]], calls: Mapping[int, list[ToolCall]]
                 ) -> list[tuple[list[Placed], list[Placed]]]:
    """One conversation's logical turns (`tids`: its turns in start order) as (its stored
    turn's, its explicit turn's) reconciled calls, settled across the turns (a call executed
    in a later turn waited in an earlier one)."""
    present = [tid for tid, _ in tids if tid in calls]
    placed = dict(zip(present, settle([place(calls[tid]) for tid in present]), strict=True))
    return [(placed.get(stored, []) if stored is not None else [],
             placed.get(explicit, []) if explicit is not None else [])
            for stored, explicit in logical_turns(tids)]


def _merged(stored: list[Placed], explicit: list[Placed]) -> list[Call]:
    """One logical turn as the matcher sees it: explicit calls merged at their position."""
    return merge_calls([_scored_call(p) for p in stored], [_scored_call(p) for p in explicit],
                       CALL_ACCESS)


def _scored_call(placed: Placed) -> Call:
    """A reconciled call as the matcher sees it."""
    c = placed.call
    call_id, arguments, raw = placed.merged()
    return Call(
        name=c.name,
        arguments=arguments if arguments is not None else (raw or {}),
        result=c.result,
        error=scored_error(c),
        call_id=call_id,
        step=placed.step,
    )


def scored_error(call: ToolCall) -> str | None:
    """A reconciled call's error as scored: a request never executed failed."""
    return call.error if call.executed else (call.error or NOT_EXECUTED)


def score_pairs(
    pairs: Iterable[tuple[ConversationFacts, ActiveExpectation]],
    paths: Mapping[int, Trajectory],
    failed: Callable[[ConversationFacts, ActiveExpectation], None],
) -> list[Scored]:
    """Score each (conversation, expectation) pair on the conversation's trajectory. A pair
    the matcher raises on is handed to `failed` (inside the `except`, so it can log the
    traceback) and left out: one bad trajectory must not stall the rest."""
    out = []
    for f, e in pairs:
        try:
            results = tuple(score(e.expectation, paths[f.id]))
        except Exception:  # loop boundary: the caller counts and logs it
            failed(f, e)
            continue
        out.append(Scored(f, e, results))
    return out


def result_row(s: Scored, result: Result, now: float) -> dict[str, Any]:
    """One result as the `results` table stores it (and REST reads it back)."""
    detail = result.to_dict()
    c = result.counts
    return {
        "conversation_id": s.conversation.id,
        "expectation": s.expectation.slug,
        "expectation_version": s.expectation.version,
        "change_seq": s.conversation.change_seq,
        "scope": scope_key(detail["scope"]),
        "current": True,
        "passed": result.passed,
        "score": result.score,
        "precision": result.precision,
        "recall": result.recall,
        "f1": result.f1,
        "paired_actual": c.paired_actual,
        "total_actual": c.total_actual,
        "paired_expected_weight": c.paired_expected_weight,
        "total_expected_weight": c.total_expected_weight,
        "reason": result.reason,
        "failure_kind": None if result.passed or not result.differences
        else result.differences[0].kind,
        "detail": detail,
        "scored_at": now,
    }


def store(conn: Connection, scored: Sequence[Scored],
          current: Mapping[leases.CurrentKey, Sequence[int]], now: float | None = None) -> int:
    """Store `scored` (`leases.store_results`: the `current` results they replace stop
    counting); returns the number of result rows written."""
    now = time.time() if now is None else now
    rows: list[dict[str, Any]] = []
    tool_rows: list[dict[str, Any]] = []
    for s in scored:
        for result in s.results:
            row = result_row(s, result, now)
            rows.append(row)
            key = {k: row[k] for k in ("conversation_id", "expectation", "expectation_version",
                                       "change_seq", "scope")}
            tool_rows.extend(
                {**key, "tool": name, "paired_actual": pa, "total_actual": ta,
                 "paired_expected_weight": pw, "total_expected_weight": tw}
                for name, pa, ta, pw, tw in result.counts.tools
            )
    again = {(s.conversation.id, s.expectation.slug) for s in scored}
    return leases.store_results(conn, again, rows, tool_rows, current)
