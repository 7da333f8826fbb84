"""What an expectation selects, said in the answer to its create and replace (issue 11
item 21: an expectation without a selector applies to every conversation, and says so)."""

from __future__ import annotations

from sqlalchemy import Connection

from collector.api.schemas import Selection
from collector.store import queries
from matcher import Expectation


def selection(conn: Connection, exp: Expectation) -> Selection:
    """The expectation's selector, in words, and how many stored conversations it picks when
    that is one cheap count (every conversation); a selector's globs and attribute values are
    matched in Python, so counting them would read every stored conversation."""
    selector = exp.selector
    return Selection(
        every=selector.every,
        selector=selector.to_dict(),
        description=selector.describe(),
        stored=queries.count_conversations(conn) if selector.every else None,
    )
