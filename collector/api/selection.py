"""What an expectation selects, said in the answer to its create and replace (issue 11
item 21: an expectation without a selector applies to every conversation, and says so), and
listed by `GET /api/v1/conversations?selected_by=` (what `tooltrail check --server` reads)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from tooltrail.collector import scorer
from tooltrail.collector.api.schemas import Selection
from tooltrail.collector.projects import DEFAULT_PROJECT
from tooltrail.collector.store import leases, queries
from tooltrail.matcher import Expectation

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


@dataclass(frozen=True, slots=True)
class Picked:
    """An expectation's selector as `queries.list_conversations` filters: SQL narrows (the
    key glob's literal prefix, the service, an agent), then `picks` decides on each row as
    the worker does (`scorer.applies`)."""

    key_prefix: str | None
    service: str | None
    agent: str | None
    picks: Callable[[dict[str, Any]], bool] | None  # None: the selector picks every one


def picked_by(exp: Expectation) -> Picked:
    """What `list_conversations` needs to list exactly the conversations `exp` selects."""
    selector = exp.selector
    if selector.every:
        return Picked(None, None, None, None)
    glob = selector.conversation
    prefix = re.split(r"[*?\[]", glob, maxsplit=1)[0] if glob is not None else None

    def picks(row: dict[str, Any]) -> bool:
        return scorer.applies(exp, leases.ConversationFacts(
            row["id"], row["key"], row["service"], tuple(row["agents"] or ()),
            row["attributes"] or {}, row["change_seq"], row["last_seen"], row["project"]))

    return Picked(prefix or None, selector.service, selector.agent, picks)
