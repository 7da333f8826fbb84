"""The compare page in Chromium: two versions of one service (the `service.version` resource
attribute), drift figures above, the same scenarios side by side, verdict by verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.server import running_server
from tests.spans import ToolStep, agent_turn, to_request
from tests.ui.browser import artifacts, chromium

PB = {"content-type": "application/x-protobuf"}
HOSTILE = '"><img src=x onerror=alert(1)><script>window.__pwned = 1</script>'
REFUND = {"id": "refunds", "selector": {"service": "shop"},
          "calls": [{"name": "lookup"}, {"name": "refund"}]}


def version_spans(version: str, steps: dict[str, list[ToolStep]]) -> bytes:
    """Each scenario's turn answered with HOSTILE, except `quiet-*` ones: no content."""
    exporter = InMemorySpanExporter()
    tp = TracerProvider(resource=Resource.create({"service.name": "shop",
                                                  "service.version": version}))
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    for scenario, tools in steps.items():
        agent_turn(tp, f"{scenario}@{version}", tools,
                   answer=None if scenario.startswith("quiet") else HOSTILE)
    return to_request(exporter.get_finished_spans()).SerializeToString()


def test_compare_versions(module_database_url: str, tmp_path_factory: pytest.TempPathFactory
                          ) -> None:
    shots: Path = artifacts(tmp_path_factory)
    store = module_database_url.split(":", 1)[0].split("+")[0]
    good = [ToolStep("lookup", {"id": 1}, {}), ToolStep("refund", {"id": 1}, {})]
    with running_server(module_database_url) as server, server.client() as client:
        assert client.post("/api/v1/expectations", json=REFUND).status_code == 201
        for body in (version_spans("v1", {"refund-1": good, "refund-2": good, "old": good,
                                          "quiet-1": good}),
                     version_spans("v2", {"refund-1": good[:1],
                                          "refund-2": [ToolStep("lookup", {"id": HOSTILE}, {}),
                                                       good[1]], "quiet-1": good})):
            assert client.post("/v1/traces", content=body, headers=PB).status_code == 200
        server.wait_for("/api/v1/results", lambda d: len(d["data"]) == 7, timeout=60)
        server.wait_for("/api/v1/signals", lambda d: sum(
            g["figures"]["turns"] for g in d["versions"]) == 7, timeout=60)
        with chromium() as browser:
            page: Any = browser.new_page(viewport={"width": 1280, "height": 900})
            dialogs: list[str] = []
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(server.base_url + "/ui/compare?service=shop&baseline=v1&candidate=v2")
            drift = page.locator("table.drift").inner_text()
            assert "turns\t4\t3" in drift and "calls_per_turn" in drift
            rows = page.locator("table.compare tbody tr").all_inner_texts()
            assert len(rows) == 3, rows
            one = next(r for r in rows if "refund-1@v1" in r)
            assert "refunds ✓ → ✗" in one and "call 2: refund in only the baseline" in one
            two = next(r for r in rows if "refund-2@v1" in r)
            assert "refunds ✓ → ✓" in two and "call 1 (lookup): arguments differ" in two
            quiet = next(r for r in rows if "quiet-1@v1" in r)  # no content on either side
            assert "refunds ✓ → ✓" in quiet and "same calls" in quiet
            assert "Only in v1: 1 (old@v1)" in page.inner_text("main")
            page.screenshot(path=str(shots / f"compare-{store}.png"), full_page=True)
            page.get_by_role("link", name="refund-2@v2").click()
            assert HOSTILE in page.inner_text("main")  # argument and answer, as text
            assert page.locator(".msg.answer .text").inner_text() == HOSTILE
            assert page.locator("main script, main img").count() == 0
            assert page.evaluate("window.__pwned") is None and dialogs == []
            page.go_back()
            page.get_by_role("link", name="quiet-1@v2").click()
            assert "carry no message content" in page.inner_text(".turn")
            assert page.locator(".msg").count() == 0
            page.set_viewport_size({"width": 390, "height": 844})
            page.goto(server.base_url + "/ui/compare?service=shop&baseline=v1&candidate=v2")
            assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1
            answer = page.goto(server.base_url + "/ui/compare?service=shop")
            assert answer is not None and answer.status == 400
