"""Summary figures of one expectation's current results, aggregated in SQL: counts and the
summed pair counts that micro precision/recall/F1 are made of (`collector.summaries` divides
them, with the matcher's definition)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Float, Integer, and_, case, cast, func, select
from sqlalchemy.sql.elements import ColumnElement

from tooltrail.collector.store.tables import RESULT_KEY, conversations, result_tools, results
from tooltrail.collector.store.verdicts import counts

BUCKETS = {"1h": 3600, "1d": 86400}


def _figures(count: int, passed: int, pa: Any, ta: Any, pw: Any, tw: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "count": count,
        "passed": passed,
        "failed": count - passed,
        "pass_rate": passed / count if count else None,
        "paired_actual": int(pa or 0),
        "total_actual": int(ta or 0),
        "paired_expected_weight": float(pw or 0),
        "total_expected_weight": float(tw or 0),
    }
    return out


def _bucket(conn: Connection, seconds: int) -> ColumnElement[Any]:
    start = conversations.c.start_ns / 1_000_000_000
    if conn.dialect.name == "postgresql":
        return cast(func.floor(start / seconds), Integer) * seconds
    return cast(cast(start, Float) / seconds, Integer) * seconds  # SQLite CAST truncates


def expectation_summary(
    conn: Connection,
    slug: str,
    *,
    since_ns: int | None,
    until_ns: int | None,
    bucket: str | None,
    version: int | None = None,
    top_reasons: int = 10,
) -> dict[str, Any]:
    """Counts, pass rate, micro P/R/F1, per tool, common failure reasons, and per bucket."""
    r = results.c
    where = [r.expectation == slug, counts()]
    if version is not None:  # only the active version has results that count
        where.append(r.expectation_version == version)
    if since_ns is not None:
        where.append(conversations.c.end_ns >= since_ns)
    if until_ns is not None:
        where.append(conversations.c.start_ns <= until_ns)
    joined = results.join(conversations, conversations.c.id == r.conversation_id)
    sums = (
        func.count(),
        func.sum(case((r.passed, 1), else_=0)),
        func.sum(r.paired_actual),
        func.sum(r.total_actual),
        func.sum(r.paired_expected_weight),
        func.sum(r.total_expected_weight),
    )
    total = conn.execute(select(*sums).select_from(joined).where(*where)).one()
    out = _figures(int(total[0]), int(total[1] or 0), *total[2:])
    t = result_tools.c
    tools = conn.execute(
        select(
            t.tool,
            func.sum(t.paired_actual),
            func.sum(t.total_actual),
            func.sum(t.paired_expected_weight),
            func.sum(t.total_expected_weight),
        )
        .select_from(
            joined.join(
                result_tools,
                and_(*(t[name] == r[name] for name in RESULT_KEY)),
            )
        )
        .where(*where)
        .group_by(t.tool)
        .order_by(t.tool)
    )
    out["tools"] = {
        tool: {
            "paired_actual": int(pa or 0),
            "total_actual": int(ta or 0),
            "paired_expected_weight": float(pw or 0),
            "total_expected_weight": float(tw or 0),
        }
        for tool, pa, ta, pw, tw in tools
    }
    failing = [*where, ~r.passed]
    out["failure_reasons"] = [
        {"reason": reason, "count": n}
        for reason, n in conn.execute(
            select(r.reason, func.count().label("n"))
            .select_from(joined)
            .where(*failing)
            .group_by(r.reason)
            .order_by(func.count().desc(), r.reason)
            .limit(top_reasons)
        )
    ]
    out["failure_kinds"] = {
        kind or "none": n
        for kind, n in conn.execute(
            select(r.failure_kind, func.count())
            .select_from(joined)
            .where(*failing)
            .group_by(r.failure_kind)
        )
    }
    if bucket is not None:
        b = _bucket(conn, BUCKETS[bucket]).label("bucket")
        out["buckets"] = [
            {"start": int(start), **_figures(int(n), int(p or 0), pa, ta, pw, tw)}
            for start, n, p, pa, ta, pw, tw in conn.execute(
                select(b, *sums).select_from(joined).where(*where).group_by(b).order_by(b)
            )
        ]
    return out


def pass_ratios(conn: Connection) -> list[tuple[str, int, int]]:
    """(expectation, results that count, passed) for every active expectation, for /metrics."""
    r = results.c
    rows = conn.execute(
        select(r.expectation, func.count(), func.sum(case((r.passed, 1), else_=0)))
        .where(counts())
        .group_by(r.expectation)
        .order_by(r.expectation)
    )
    return [(slug, int(n), int(p or 0)) for slug, n, p in rows]
