"""`render_report`: verdicts as one self-contained HTML file (CSS inline, no request made),
rendered by the same verdict partial as the conversation page."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from collector.ui.templating import render, stylesheet
from collector.ui.views import verdict


def render_report(
    title: str, items: Iterable[Mapping[str, Any]],
    other: Iterable[Mapping[str, Any]] = (),
) -> str:
    """One HTML document: a summary table, then each verdict with its aligned diff.

    Each item has `expectation` (the definition, a dict), `conversation` (as GET
    /api/v1/conversations/{key} returns it) and `result` (as the results routes return it).
    `other` lists outcomes with no verdict to draw (`expectation`, `conversation` or None,
    `status`, `reason`: an expectation that matched no conversation, scoring still pending);
    they join the summary and count as failed unless their status is `skipped`.
    """
    other = list(other)
    verdicts = [
        verdict(item["expectation"], item["conversation"], item["result"]) for item in items
    ]
    passed = sum(1 for v in verdicts if v.result.get("passed"))
    skipped = sum(1 for o in other if o["status"] == "skipped")
    return render(
        "report.html",
        title=title,
        css=stylesheet(),
        verdicts=verdicts,
        other=other,
        total=len(verdicts) + len(other),
        passed=passed,
        skipped=skipped,
    )
