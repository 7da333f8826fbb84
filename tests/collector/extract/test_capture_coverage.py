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


def test_every_answer_is_seen_where_the_trace_shows_it_only_in_messages() -> None:
    """Approvals whose answer reaches no tool span: AI SDK 7 `LegacyOpenTelemetry` (the approved
    execution's result only in the next model input) and OpenAI Agents resumed inside the
    asking run's `trace()` (the refusal only in the next model input) show all three answers."""
    for name in ("vercel_ai_7_legacy", "openai_agents_approval", "openai_agents_otel_approval",
                 "openai_agents_traceloop_approval"):
        assert coverage.capture(name).answers == {"approved", "refused", "unanswered"}, name
