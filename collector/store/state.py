"""Whether a conversation's scoring is current: `scored`, or `pending` while the worker still
owes it a pass (it changed since it was scored: new spans, still settling) or a rescoring job
(a new expectation version) has a chunk covering it not yet done."""

from __future__ import annotations

from typing import Any, Literal

from sqlalchemy import Connection, and_, select

from tooltrail.collector.store.tables import job_chunks

ScoringState = Literal["pending", "scored"]


def scoring_state(conn: Connection, conversation: dict[str, Any]) -> ScoringState:
    """The state of one conversation row (`queries.get_conversation`)."""
    if conversation["scored_seq"] < conversation["change_seq"]:
        return "pending"
    c = job_chunks.c
    owed = conn.execute(
        select(c.id).where(and_(c.status == "queued", c.first_id <= conversation["id"],
                                c.last_id >= conversation["id"])).limit(1)
    ).first()
    return "pending" if owed is not None else "scored"
