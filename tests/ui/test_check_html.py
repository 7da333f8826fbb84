"""`tooltrail check --html`: the report of a real suite run, opened offline in Chromium."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.collector.suites.checkutil import CAPTURES, run
from tests.ui.browser import chromium

SUITE = """
name: weather-nightly
defaults: {match: in_order, arguments: partial}
expectations:
  - id: paris-then-time
    calls: [{name: get_weather, arguments: {city: Paris}}, {name: get_time}]
  - id: london-time
    calls: [{name: get_time, arguments: {city: London}}, {name: book_flight}]
  - id: refunds
    selector: {conversation: "refund-*"}
    calls: [{name: issue_refund}]
"""


def test_check_html_report_shows_every_outcome_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    capture = CAPTURES / "pydantic_ai" / "spans.otlp.pb"
    key = json.loads((CAPTURES / "pydantic_ai" / "expected.json").read_text())["conversation_id"]
    report = tmp_path / "report.html"
    code, out, _ = run(capsys, "check", str(suite), str(capture), "--html", str(report))
    assert code == 1, out  # london-time fails; refunds matched no conversation
    with chromium() as browser:
        context = browser.new_context(offline=True)  # type: ignore[attr-defined]
        requests: list[str] = []
        context.on("request", lambda r: requests.append(r.url))
        page = context.new_page()
        page.goto(report.as_uri())
        assert requests == [report.as_uri()]
        assert page.title() == "tooltrail check: weather-nightly"
        body = page.inner_text("main")
        assert "3 verdicts" in body and "1 passed" in body and "2 failed" in body
        assert "no conversation matched" in body
        verdicts = page.locator("section.verdict")
        assert verdicts.count() == 2  # refunds has no conversation to draw
        failing = page.locator("section.verdict", has_text="london-time")
        statuses = failing.locator("table.diff tbody tr").evaluate_all(
            "rows => rows.map(r => r.dataset.status)")
        assert "argument" in statuses and "missing" in statuses
        assert key in body
        context.close()
