"""Suites against a real server (SQLite and PostgreSQL): YAML expectation bodies, scoring state
and the results long-poll, `apply` (idempotent, --prune), `check --server`, `golden --server`."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from tests.collector.suites.checkutil import run, run_json, verdicts
from tests.server import Server, running_server
from tests.spans import ToolStep, agent_turn, provider

SETTLE = "1.5"  # long enough that a check started at once finds the scoring pending
SUITE = """
name: refunds
expectations:
  - id: srv-lookup-first
    selector: {conversation: "srv-*"}
    calls: [{name: lookup_order, arguments: {order_id: 42}}, {name: issue_refund}]
  - id: srv-no-delete
    selector: {conversation: "srv-*"}
    forbid: [delete_*]
"""


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url, "--settle-seconds", SETTLE) as s:
        yield s


def send(server: Server, conversation: str, tools: list[ToolStep]) -> None:
    tp = provider(OTLPSpanExporter(endpoint=f"{server.base_url}/v1/traces"))
    agent_turn(tp, conversation, tools)
    tp.shutdown()


def test_yaml_expectation_bodies(server: Server) -> None:
    body = "id: yaml-one\nselector: {conversation: 'nothing-*'}\ncalls:\n  - name: a\n"
    with server.client() as client:
        created = client.post("/api/v1/expectations", content=body,
                              headers={"content-type": "application/yaml"})
        assert created.status_code == 201
        assert {k: created.json()[k] for k in ("id", "version")} == {"id": "yaml-one", "version": 1}
        changed = client.put("/api/v1/expectations/yaml-one", content=body.replace("a\n", "b\n"),
                             headers={"content-type": "application/yaml; charset=utf-8"})
        assert changed.status_code == 200 and changed.json()["version"] == 2
        stored = client.get("/api/v1/expectations/yaml-one").json()["expectation"]
        assert stored["calls"] == [{"name": "b"}]
        valid = client.post("/api/v1/expectations:validate", content="match: within\n",
                            headers={"content-type": "text/yaml"})
        assert valid.status_code == 200 and valid.json()["expectation"]["match"] == "subset"
        bad = client.post("/api/v1/expectations:validate", content="calls: [{name: a,",
                          headers={"content-type": "application/yaml"})
        assert bad.status_code == 422 and "not valid YAML" in bad.json()["error"]["message"]
        wrong = client.post("/api/v1/expectations:validate",
                            content="id: x\nmatch: sometimes\n",
                            headers={"content-type": "application/yaml"})
        assert wrong.status_code == 400 and wrong.json()["error"]["details"]["path"] == "match"
        other = client.post("/api/v1/expectations:validate", content="x",
                            headers={"content-type": "text/plain"})
        assert other.status_code == 415
        assert client.delete("/api/v1/expectations/yaml-one").status_code == 204
        spec = client.get("/openapi.json").json()
        content = spec["paths"]["/api/v1/expectations"]["post"]["requestBody"]["content"]
        assert set(content) == {"application/json", "application/yaml"}
        params = spec["paths"]["/api/v1/conversations/{key}/results"]["get"]["parameters"]
        assert any(p["name"] == "wait" for p in params)


def test_scoring_state_and_long_poll(server: Server) -> None:
    with server.client() as client:
        assert client.post("/api/v1/expectations", json={
            "id": "poll-lookup", "selector": {"conversation": "poll-*"},
            "calls": [{"name": "lookup_order"}]}).status_code == 201
    send(server, "poll-1", [ToolStep("lookup_order", {"order_id": 1})])
    with server.client() as client:
        now = client.get("/api/v1/conversations/poll-1/results").json()
        assert now["scoring"] == "pending" and now["data"] == []
        started = time.monotonic()
        waited = client.get("/api/v1/conversations/poll-1/results", params={"wait": 20},
                            timeout=30).json()
        assert waited["scoring"] == "scored"
        assert time.monotonic() - started < 15
        assert [(r["expectation"], r["passed"]) for r in waited["data"]] == [
            ("poll-lookup", True)]
        started = time.monotonic()
        missing = client.get("/api/v1/conversations/poll-none/results", params={"wait": 20})
        assert missing.status_code == 404 and time.monotonic() - started < 10
        assert client.get("/api/v1/conversations/poll-1/results",
                          params={"wait": 21}).status_code == 422


def test_apply_then_check_at_once(server: Server, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    code, _, err = run(capsys, "check", str(suite), "--server", server.base_url)
    assert code == 2 and "'srv-lookup-first' is missing on" in err and "tooltrail apply" in err
    code, out, _ = run(capsys, "apply", str(suite), "--server", server.base_url)
    assert code == 0
    assert out.splitlines() == ["created srv-lookup-first (version 1)",
                                "created srv-no-delete (version 1)"]
    code, out, _ = run(capsys, "apply", str(suite), "--server", server.base_url)
    assert out.splitlines() == ["unchanged srv-lookup-first (version 1)",
                                "unchanged srv-no-delete (version 1)"]
    send(server, "srv-good", [ToolStep("lookup_order", {"order_id": 42}),
                              ToolStep("issue_refund", {"amount": 5})])
    send(server, "srv-lazy", [])
    code, doc = run_json(capsys, "check", str(suite), "--server", server.base_url,
                         "--wait", "30")
    assert code == 1
    found = verdicts(doc)
    assert {k: v for k, v in found.items() if k[1] in ("srv-good", "srv-lazy")} == {
        ("srv-lookup-first", "srv-good"): "pass", ("srv-lookup-first", "srv-lazy"): "fail",
        ("srv-no-delete", "srv-good"): "pass", ("srv-no-delete", "srv-lazy"): "pass"}
    assert doc["conversations"]["srv-good"]["turns"][0]["tool_calls"][0]["name"] == (
        "lookup_order")
    # a new version makes every conversation it selects pending again: check waits for it
    suite.write_text(SUITE.replace("order_id: 42", "order_id: 43"))
    code, out, _ = run(capsys, "apply", str(suite), "--server", server.base_url)
    assert out.splitlines()[0] == "updated srv-lookup-first (version 2)"
    code, doc = run_json(capsys, "check", str(suite), "--server", server.base_url,
                         "--wait", "30")
    lookups = {c["conversation"]: c for c in doc["checks"]
               if c["expectation"] == "srv-lookup-first"}
    assert lookups["srv-good"]["status"] == "fail"
    assert lookups["srv-good"]["result"]["expectation_version"] == 2
    # --prune deactivates what the suite no longer has, and only this suite's
    with server.client() as client:
        assert client.post("/api/v1/expectations", json={
            "id": "srv-not-the-suites", "selector": {"conversation": "other-*"},
            "calls": [{"name": "lookup_order"}]}).status_code == 201
    suite.write_text(yaml.safe_dump({"name": "refunds", "expectations": [
        yaml.safe_load(SUITE)["expectations"][1]]}))
    code, out, _ = run(capsys, "apply", str(suite), "--server", server.base_url, "--prune")
    assert code == 0
    assert out.splitlines() == ["unchanged srv-no-delete (version 1)",
                                "deactivated srv-lookup-first"]
    with server.client() as client:
        listed = client.get("/api/v1/expectations").json()["data"]
    assert "srv-lookup-first" not in {e["id"] for e in listed}
    assert "srv-not-the-suites" in {e["id"] for e in listed}  # not the suite's: kept


def test_check_server_never_reports_pending_as_a_verdict(
        server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: tiny\nexpectations:\n  - id: tiny-one\n"
                     "    selector: {conversation: 'tiny-*'}\n    calls: [{name: x}]\n")
    assert run(capsys, "apply", str(suite), "--server", server.base_url)[0] == 0
    send(server, "tiny-1", [ToolStep("x", {})])
    code, doc = run_json(capsys, "check", str(suite), "--server", server.base_url,
                         "--wait", "0")
    pending = [c for c in doc["checks"] if c["conversation"] == "tiny-1"]
    assert code == 2 and pending and all(c["status"] == "error" for c in pending)
    code, doc = run_json(capsys, "check", str(suite), "--server", server.base_url,
                         "--wait", "30")
    assert code == 0 and verdicts(doc)[("tiny-one", "tiny-1")] == "pass"


def test_golden_from_server_and_from_a_file(server: Server, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    send(server, "gold-1", [ToolStep("lookup_order", {"order_id": 7, "request_id": "r-91"}),
                            ToolStep("issue_refund", {"amount": 5})])
    server.wait_for("/api/v1/conversations/gold-1", lambda b: b["call_count"] == 2)
    out = tmp_path / "golden.yaml"
    code, _, err = run(capsys, "golden", "--server", server.base_url, "--conversation",
                       "gold-1", "--ignore-arg", "request_*", "-o", str(out))
    assert code == 0, err
    body = yaml.safe_load(out.read_text())
    assert body["match"] == "strict" and body["arguments"] == "exact"
    assert body["calls"][0] == {"name": "lookup_order", "arguments": {
        "order_id": 7, "request_id": {"$any": True}}}
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({"name": "gold", "expectations": [body]}))
    assert run(capsys, "apply", str(suite), "--server", server.base_url)[0] == 0
    code, doc = run_json(capsys, "check", str(suite), "--server", server.base_url,
                         "--wait", "30")
    assert code == 0 and verdicts(doc) == {(body["id"], "gold-1"): "pass"}
    code, _, err = run(capsys, "golden", "--server", server.base_url, "--conversation", "nope")
    assert code == 2 and "no conversation 'nope'" in err
    assert json.loads(json.dumps(body))  # plain data: YAML-safe and JSON-safe


def test_client_commands_take_the_api_key_from_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """TOOLTRAIL_API_KEY stands in for --api-key (a key given as a flag shows in `ps`)."""
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    with running_server(f"sqlite:///{tmp_path / 'keys.db'}",
                        env={"TOOLTRAIL_API_KEYS": "admin:env-admin"}) as keyed:
        monkeypatch.delenv("TOOLTRAIL_API_KEY", raising=False)
        code, _, err = run(capsys, "apply", str(suite), "--server", keyed.base_url)
        assert code == 2 and "401" in err, err
        monkeypatch.setenv("TOOLTRAIL_API_KEY", "env-admin")
        code, out, err = run(capsys, "apply", str(suite), "--server", keyed.base_url)
        assert code == 0, err
        assert out.splitlines()[0] == "created srv-lookup-first (version 1)"
        code, _, err = run(capsys, "check", str(suite), "--server", keyed.base_url,
                           "--wait", "5")
        assert code in (0, 1) and "401" not in err, err  # read with the same key
        monkeypatch.setenv("TOOLTRAIL_API_KEY", "wrong")  # a flag beats the environment
        code, out, _ = run(capsys, "apply", str(suite), "--server", keyed.base_url,
                           "--api-key", "env-admin")
        assert code == 0 and "unchanged srv-lookup-first" in out


def test_selected_by_lists_what_the_selector_picks(server: Server) -> None:
    """`GET /api/v1/conversations?selected_by=`: SQL narrows by the key glob's prefix (in
    SQLite, whatever the ASCII case), the selector decides; pages stay full and in order."""
    with server.client() as client:
        for ident, selector in (("sel-lower", {"conversation": "pick-?"}),
                                ("sel-upper", {"conversation": "PICK-*"}),
                                ("sel-agent", {"agent": "support", "conversation": "*-2"})):
            assert client.post("/api/v1/expectations", json={
                "id": ident, "selector": selector, "forbid": ["x"]}).status_code == 201
    for key in ("pick-1", "pick-2", "pick-10", "other-2", "PICK-3"):
        send(server, key, [ToolStep("lookup_order", {})])
    server.wait_for("/api/v1/conversations/PICK-3", lambda b: b["call_count"] == 1)

    def listed(ident: str, limit: int) -> list[str]:
        keys, cursor = [], None
        with server.client() as client:
            while True:
                page = client.get("/api/v1/conversations", params={
                    "selected_by": ident, "limit": limit, **({"cursor": cursor} if cursor
                                                             else {})}).json()
                assert len(page["data"]) == limit or not page["next_cursor"]
                keys += [c["key"] for c in page["data"]]
                cursor = page["next_cursor"]
                if not cursor:
                    return keys

    assert listed("sel-lower", 1) == ["pick-2", "pick-1"]  # newest first; not pick-10
    assert listed("sel-upper", 1) == ["PICK-3"]
    agent = listed("sel-agent", 1)
    assert "pick-2" in agent and "other-2" in agent and "pick-1" not in agent
    with server.client() as client:
        bad = client.get("/api/v1/conversations", params={"selected_by": "nope"})
        assert bad.status_code == 400
        assert bad.json()["error"]["message"] == (
            "selected_by: no active expectation 'nope' in project 'default'")
        for ident in ("sel-lower", "sel-upper", "sel-agent"):
            assert client.delete(f"/api/v1/expectations/{ident}").status_code == 204


GATE_SUITE = """
name: gate
expectations:
  - id: gate-lookup
    selector: {conversation: "gate-sel-*"}
    calls: [{name: lookup_order}]
  - id: gate-late
    selector: {conversation: "gate-late-*"}
    calls: [{name: lookup_order}]
"""


def test_check_server_reads_and_waits_for_the_selected_only(
        server: Server, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 28 items 2 and 3: only the conversations the suite selects are read, and only
    they hold the gate; one still pending is reported by key, for its expectations only."""
    suite = tmp_path / "suite.yaml"
    suite.write_text(GATE_SUITE)
    assert run(capsys, "apply", str(suite), "--server", server.base_url)[0] == 0
    send(server, "gate-sel-1", [ToolStep("lookup_order", {"order_id": 1})])
    code, doc = run_json(capsys, "check", str(suite), "--server", server.base_url,
                         "--wait", "30")
    assert code == 1 and list(doc["conversations"]) == ["gate-sel-1"]
    assert doc["unselected"] == [] and verdicts(doc) == {
        ("gate-lookup", "gate-sel-1"): "pass", ("gate-late", None): "fail"}
    send(server, "gate-other-1", [ToolStep("lookup_order", {})])  # settling, not selected
    send(server, "gate-late-1", [ToolStep("lookup_order", {})])  # settling, selected
    code, out, _ = run(capsys, "check", str(suite), "--server", server.base_url,
                       "--wait", "0")
    assert code == 2, out
    lines = [line.split() for line in out.splitlines()]
    errors = [(row[1], row[2]) for row in lines if row and row[0] == "ERROR"]
    assert errors == [("gate-late", "gate-late-1")]
    assert "scoring still pending after 0 s (last span received " in out
    assert "gate-other-1" not in out and "not selected" not in out
    assert any(row[:3] == ["PASS", "gate-lookup", "gate-sel-1"] for row in lines)
    suite.write_text(GATE_SUITE.split("  - id: gate-late")[0])  # gate-late-1: unselected
    assert run(capsys, "apply", str(suite), "--server", server.base_url, "--prune")[0] == 0
    send(server, "gate-other-2", [ToolStep("lookup_order", {})])
    code, out, _ = run(capsys, "check", str(suite), "--server", server.base_url,
                       "--wait", "0")
    assert code == 0, out
