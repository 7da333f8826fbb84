"""The conversation page names each call's provenance (how it reached tooltrail)."""

from __future__ import annotations

from pathlib import Path

from tests.server import running_server
from tests.spans import ToolStep, agent_turn, capture, to_request


def test_each_call_says_how_it_was_captured(tmp_path: Path) -> None:
    with running_server(f"sqlite:///{tmp_path / 'ui.db'}") as server, server.client() as client:
        tp, spans = capture()
        agent_turn(tp, "prov-1", [ToolStep("lookup_order", {"order_id": 7}, {"ok": True})])
        body = to_request(spans.get_finished_spans()).SerializeToString()
        sent = client.post("/v1/traces", content=body,
                           headers={"content-type": "application/x-protobuf"})
        assert sent.status_code == 200
        explicit = client.post("/api/v1/conversations/prov-1/turns/0/calls", json={
            "calls": [{"name": "issue_refund", "arguments": {"amount": 5}}]})
        assert explicit.status_code == 200, explicit.text
        page = client.get("/ui/conversations/prov-1")
    assert page.status_code == 200
    html = page.text
    assert "lookup_order" in html and "issue_refund" in html
    assert "via otel" in html and "via explicit" in html
