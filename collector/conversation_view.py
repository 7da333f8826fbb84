"""A stored conversation as it is shown: the store's rows composed with what they mean.

The store reads and writes rows only (`collector/store/`); what the rows of one conversation
mean is composed here, above it: each turn's calls reconciled (`collector.extract.reconcile`:
each call once, with its step; a request never executed has `executed=False`) and explicit
calls merged into the traced turn at their position (`collector.capture.merge`). The REST and
web views, `tooltrail extract --database-url` and the writer's counts of conversations that
mix explicit and traced turns (`counts`, which the composition root hands the writer) all read
a conversation through it, so the counts REST lists equal the turns it shows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection

from tooltrail.collector.capture.merge import merged_rows
from tooltrail.collector.extract.reconcile import reconcile_rows
from tooltrail.collector.store import queries
from tooltrail.collector.store.persist import ShownCounts


def shown_turns(turn_rows: Sequence[dict[str, Any]],
                call_rows: Iterable[Mapping[Any, Any]]) -> list[dict[str, Any]]:
    """Turn rows (in start order) each with its `tool_calls`, reconciled and merged, in
    (step, start) order."""
    return merged_rows(turn_rows, reconcile_rows(call_rows))


def conversation_turns(conn: Connection, conversation_id: int) -> list[dict[str, Any]]:
    """One stored conversation's turns as shown (`shown_turns`)."""
    return shown_turns(*queries.conversation_rows(conn, conversation_id))


def conversations_turns(conn: Connection, ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
    """Several stored conversations' turns as shown, by id (`shown_turns`)."""
    return {cid: shown_turns(*rows) for cid, rows in queries.conversations_rows(conn, ids).items()}


def counts(conn: Connection, ids: Sequence[int]) -> dict[int, ShownCounts]:
    """(turns, executed calls, failed calls) of each conversation as shown: each merged turn
    once, each executed call once (`persist.Recount`, for the writer)."""
    out = {}
    for cid in ids:
        shown = conversation_turns(conn, cid)
        calls = [c for turn in shown for c in turn["tool_calls"] if c["executed"]]
        out[cid] = ShownCounts(len(shown), len(calls), sum(c["status"] == "error" for c in calls))
    return out
