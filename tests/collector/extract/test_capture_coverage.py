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
    """AI SDK 7 under `LegacyOpenTelemetry` exports no span for the approved execution, so of
    the user's three answers the refusal and the unanswered request are there; OpenAI Agents
    resumed inside the asking run's `trace()` shows all three under each instrumentation."""
    assert coverage.capture("vercel_ai_7_legacy").answers == {"refused", "unanswered"}
    for name in ("openai_agents_approval", "openai_agents_otel_approval"):
        assert coverage.capture(name).answers == {"approved", "refused", "unanswered"}
