"""What the store holds of one conversation, for `tooltrail extract --database-url`: its row,
its turns as the REST API reads them, and every tool_calls row (executions and model requests)
as stored, before reconciliation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Row, select

from collector.store import queries
from collector.store.db import make_engine
from collector.store.tables import tool_calls


@dataclass(frozen=True, slots=True)
class StoredConversation:
    conversation: dict[str, Any]
    turns: list[dict[str, Any]]  # queries.conversation_turns: reconciled, merged
    rows: list[Row[Any]]  # its tool_calls rows in (start, span id) order


def stored_conversation(url: str, key: str) -> StoredConversation:
    """The conversation `key` of the store at `url`; raises LookupError when there is none."""
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return read_conversation(conn, key)
    finally:
        engine.dispose()


def read_conversation(conn: Connection, key: str) -> StoredConversation:
    conversation = queries.get_conversation(conn, key)
    if conversation is None:
        raise LookupError(f"no conversation {key!r} in the store")
    turns = queries.conversation_turns(conn, conversation["id"])
    rows = conn.execute(
        select(tool_calls).where(tool_calls.c.conversation_id == conversation["id"])
        .order_by(tool_calls.c.start_ns, tool_calls.c.span_id)
    ).all()
    return StoredConversation(conversation, turns, list(rows))
