"""The captures' coverage table in tests/captures/README.md is the one their ground truth gives
(`capture_coverage`), and every capture is counted in it or named as another release."""

from __future__ import annotations

import re

from tests.collector.extract import capture_coverage as coverage

README = coverage.CAPTURES / "README.md"


def test_readme_table_is_the_computed_one() -> None:
    found = re.search(r"<!-- coverage -->\n(.*?)\n<!-- /coverage -->", README.read_text(), re.S)
    assert found is not None, "README lacks the coverage table between its markers"
    assert found.group(1) == coverage.table(), (
        "regenerate: python -m tests.collector.extract.capture_coverage")


def test_every_capture_is_counted() -> None:
    listed = [n for _, names in coverage.FRAMEWORKS for n in names] + list(coverage.OTHERS)
    folders = sorted(p.parent.name for p in coverage.CAPTURES.glob("*/spans.otlp.pb"))
    assert sorted(listed) == folders


def test_an_approval_is_seen_only_as_the_trace_shows_it() -> None:
    """OpenAI Agents under OpenInference: the resumed runs export nothing, so of the user's
    three answers only the unanswered request is there; under the OTel GenAI instrumentation
    the approved execution is a conversation of its own, so it is no round trip either."""
    assert coverage.capture("openai_agents_approval").answers == {"unanswered"}
    assert coverage.capture("openai_agents_otel_approval").answers == {"unanswered"}
    assert coverage.capture("agent_framework_approval").answers == {
        "approved", "refused", "unanswered"}
