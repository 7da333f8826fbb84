"""`render_report`: verdicts as one self-contained HTML file (CSS inline, no request made),
rendered by the same verdict partial as the conversation page."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from tooltrail.collector.ui.templating import environment, stylesheet
from tooltrail.collector.ui.views import verdict


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
    items, other = list(items), list(other)
    passed = sum(1 for item in items if item["result"].get("passed"))
    return "".join(stream_report(title, lambda: items, other, total=len(items) + len(other),
                                 passed=passed))


class _Walk:
    """`make` applied to each of `items()`, afresh each time the template walks them."""

    def __init__(self, items: Callable[[], Iterable[Mapping[str, Any]]],
                 make: Callable[[Mapping[str, Any]], Any]) -> None:
        self.items, self.make = items, make

    def __iter__(self) -> Iterator[Any]:
        return map(self.make, self.items())


def stream_report(
    title: str, items: Callable[[], Iterable[Mapping[str, Any]]],
    other: Sequence[Mapping[str, Any]], *, total: int, passed: int,
) -> Iterator[str]:
    """`render_report`'s document in pieces, as the template makes them; `items()` gives the
    items afresh for each of the template's two walks (the summary, from the results alone;
    then the verdicts), so they need not all be held: memory stays bounded by one verdict."""
    skipped = sum(1 for o in other if o["status"] == "skipped")
    return environment().get_template("report.html").generate(
        title=title,
        css=stylesheet(),
        summary=_Walk(items, lambda i: {"result": i["result"]}),
        verdicts=_Walk(items, lambda i: verdict(i["expectation"], i["conversation"],
                                                i["result"])),
        other=other,
        total=total,
        passed=passed,
        skipped=skipped,
    )
