"""What an expectation selects, said in the answer to its create and replace (issue 11
item 21: an expectation without a selector applies to every conversation, and says so)."""

from __future__ import annotations

from sqlalchemy import Connection

from collector import scorer
from collector.api.schemas import Selection
from collector.projects import DEFAULT_PROJECT
from collector.store import leases, queries
from matcher import Expectation

# Up to this many stored conversations, a selector's matches are counted in the request; a
# selector's globs and attribute values are matched in Python (`scorer.applies`, as the
# worker does), so above it counting would read every conversation on every create.
COUNT_LIMIT = 2_000


def selection(
    conn: Connection, exp: Expectation, project: str = DEFAULT_PROJECT, limit: int = COUNT_LIMIT
) -> Selection:
    """The expectation's selector, in words, and how many stored conversations of `project`
    it picks."""
    selector = exp.selector
    if selector.every:
        stored: int | None = queries.count_conversations(conn, project)
    else:
        facts = leases.facts_upto(conn, limit, project)
        stored = None if facts is None else sum(scorer.applies(exp, f) for f in facts)
    return Selection(
        every=selector.every,
        selector=selector.to_dict(),
        description=selector.describe(),
        stored=stored,
    )
