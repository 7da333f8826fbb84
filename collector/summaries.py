"""An expectation's summary figures: the store's sums (`store.aggregates`) with micro
precision/recall/F1 computed from them by the matcher's one definition (`micro_prf`)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from tooltrail.collector.store import aggregates
from tooltrail.matcher.summary import micro_prf

BUCKETS = aggregates.BUCKETS


def _prf(figures: dict[str, Any]) -> None:
    sums = (figures["paired_actual"], figures["total_actual"], figures["paired_expected_weight"],
            figures["total_expected_weight"])
    figures.update(micro_prf(*(float(v) for v in sums)))


def expectation_summary(conn: Connection, slug: str, **filters: Any) -> dict[str, Any]:
    """`store.aggregates.expectation_summary` (same filters) with precision, recall and F1 for
    the whole, each time bucket and each tool; None where no result was counted."""
    out = aggregates.expectation_summary(conn, slug, **filters)
    for figures in (out, *(out.get("buckets") or [])):
        if figures["count"]:
            _prf(figures)
        else:
            figures.update(precision=None, recall=None, f1=None)
    for figures in out["tools"].values():
        _prf(figures)
    return out
