"""What the store holds of one conversation, for `tooltrail extract --database-url`: its row,
its turn rows, and every tool_calls row (executions and model requests) as stored, before
reconciliation (`collector.conversation_view` shows them as the REST API does)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from tooltrail.collector.store import queries
from tooltrail.collector.store.db import make_engine


@dataclass(frozen=True, slots=True)
class StoredConversation:
    conversation: dict[str, Any]
    turns: list[dict[str, Any]]  # its turn rows in start order
    rows: list[Mapping[Any, Any]]  # its tool_calls rows in (start, span id) order


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
    turn_rows, call_rows = queries.conversation_rows(conn, conversation["id"])
    return StoredConversation(conversation, turn_rows, call_rows)
