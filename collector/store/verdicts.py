"""Which stored results count: the one predicate every read of verdicts goes through.

`results.current` says a row is the newest scoring of its (conversation, expectation); it is
set when the worker stores results. Whether that verdict still counts also depends on the
expectation: only results of its active version do. A deactivated expectation (DELETE) has
no active version, and a replaced one (PUT) has a newer one, so their earlier results stop
counting at once, in any transaction that reads, with no rewrite of the results table and no
race with a worker that scored the old version concurrently. History (`?all=true`) reads
every row and reports this predicate as `current`.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Select, and_, func, select, tuple_

from tooltrail.collector.store.tables import expectations, results


def active_versions() -> Select[Any]:
    """(slug, version) of the active version of every active expectation: its newest."""
    e = expectations.c
    return select(e.slug, func.max(e.version).label("version")).where(e.active).group_by(e.slug)


def counts() -> ColumnElement[bool]:
    """A result counts: the newest for its trajectory, of its expectation's active version."""
    r = results.c
    return and_(
        r.current, tuple_(r.expectation, r.expectation_version).in_(active_versions())
    )


def result_columns() -> list[ColumnElement[Any]]:
    """The columns of `results` with `current` replaced by `counts()`, for reads that show it."""
    return [
        counts().label("current") if column.name == "current" else column
        for column in results.c
    ]
