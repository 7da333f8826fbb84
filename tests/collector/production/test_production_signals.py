"""Production signals and drift on two versions of a real Pydantic AI agent, through a real
server: v1 replays the capture as recorded (tests/captures/pydantic_ai: the Pydantic AI
agent's own spans, its OpenTelemetry instrumentation), v2 is the same agent answering the
first turn of every conversation (weather and time) from memory: half of the turns that called
tools call none, and keep only their `invoke_agent` root span."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import yaml

from tests.server import running_server

CAPTURE = Path(__file__).parents[2] / "captures" / "pydantic_ai" / "spans.otlp.json"
SERVICE = "tooltrail-capture-pydantic-ai"
COPIES = 40  # conversations per version; three turns each


def _hex(seed: str, size: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:size]


def replay(version: str, copies: int, *, drop_half: bool,
           drop_executions: bool = False) -> dict[str, Any]:
    """`copies` conversations of the capture under `service.version` = `version`, with fresh
    ids; with `drop_half`, each conversation's first turn loses all but its root span; with
    `drop_executions`, its `execute_tool` spans only (the model's requests stay, never run)."""
    original = json.loads(CAPTURE.read_text())
    out = {"resourceSpans": []}
    for i in range(copies):
        data = copy.deepcopy(original)
        for resource_spans in data["resourceSpans"]:
            resource_spans["resource"]["attributes"].append(
                {"key": "service.version", "value": {"stringValue": version}})
            traces: list[str] = []
            for scope in resource_spans["scopeSpans"]:
                for span in scope["spans"]:
                    if span["traceId"] not in traces:
                        traces.append(span["traceId"])
            for scope in resource_spans["scopeSpans"]:
                kept = []
                for span in scope["spans"]:
                    turn = traces.index(span["traceId"])
                    if drop_half and turn == 0 and span.get("parentSpanId"):
                        continue
                    if drop_executions and turn == 0 and span["name"].startswith("execute_tool"):
                        continue
                    tag = f"{version}/{i}"
                    span["traceId"] = _hex(f"{tag}/{span['traceId']}", 32)
                    span["spanId"] = _hex(f"{tag}/{span['spanId']}", 16)
                    if span.get("parentSpanId"):
                        span["parentSpanId"] = _hex(f"{tag}/{span['parentSpanId']}", 16)
                    for attribute in span.get("attributes", []):
                        if attribute["key"] == "gen_ai.conversation.id":
                            attribute["value"] = {"stringValue": f"conv-{tag}"}
                    kept.append(span)
                scope["spans"] = kept
            out["resourceSpans"].append(resource_spans)
    return out


def by_version(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {g["version"]: g["figures"] for g in answer["versions"]}


def test_two_versions_show_their_rates_and_drift_is_flagged(database_url: str) -> None:
    # the capture's timestamps are older than a day: the gauges' window covers them
    env = {"TOOLTRAIL_SIGNALS_GAUGE_WINDOW_SECONDS": "1e10"}
    with running_server(database_url, env=env) as server, server.client() as client:
        for version, drop in (("1.3", False), ("1.3-canary", False), ("1.4", True)):
            response = client.post("/v1/traces", json=replay(version, COPIES, drop_half=drop))
            assert response.status_code == 200, response.text
        unrun = replay("1.5", COPIES, drop_half=False, drop_executions=True)
        assert client.post("/v1/traces", json=unrun).status_code == 200
        answer = server.wait_for(
            "/api/v1/signals",
            lambda a: sum(g["figures"]["turns"] for g in a["versions"]) == 4 * 3 * COPIES,
            params={"service": SERVICE},
        )
        figures = by_version(answer)
        v1, v2 = figures["1.3"], figures["1.4"]
        # v1: turn 3 of every conversation answers without tools; v2 turn 1 as well
        assert v1["turns"] == v2["turns"] == 3 * COPIES
        assert v1["zero_tool_turns"] == COPIES
        assert v2["zero_tool_turns"] == 2 * COPIES
        assert v2["tool_calls"] == {"convert_currency": COPIES, "get_weather": COPIES}
        assert abs(v1["zero_tool_rate"] - 1 / 3) < 1e-9
        assert abs(v2["zero_tool_rate"] - 2 / 3) < 1e-9
        # the capture: get_weather ×3, get_time, convert_currency (raises) per conversation
        assert v1["tool_calls"] == {"convert_currency": COPIES, "get_time": COPIES,
                                    "get_weather": 3 * COPIES}
        assert abs(v1["failed_rate"] - 1 / 5) < 1e-9
        assert v1["calls_per_turn_histogram"] == {"0": COPIES, "2": COPIES, "3": COPIES}
        # 1.5: turn 1's three calls were requested by the model and never executed
        v15 = figures["1.5"]
        assert v15["tool_calls"] == v1["tool_calls"]
        assert abs(v15["unexecuted_rate"] - 3 / 5) < 1e-9 and v1["unexecuted_rate"] == 0
        assert v15["pending_rate"] == 0
        assert answer["buckets"] and all(g["bucket_start"] for g in answer["buckets"])

        drift = client.get("/api/v1/signals/drift", params={
            "service": SERVICE, "baseline": "1.3", "candidate": "1.4"}).json()
        measures = {m["name"]: m for m in drift["measures"]}
        assert drift["flagged"]
        zero = measures["zero_tool_rate"]
        assert zero["flagged"] and zero["p_value"] < drift["alpha"]
        assert zero["interval"][0] < 1 / 3 < zero["interval"][1]
        assert abs(zero["estimate"] - 1 / 3) < 1e-9
        assert measures["tool_mix"]["flagged"], measures["tool_mix"]

        same = client.get("/api/v1/signals/drift", params={
            "service": SERVICE, "baseline": "1.3", "candidate": "1.3-canary"}).json()
        assert not same["flagged"]
        assert all(not m["flagged"] for m in same["measures"])

        few = client.get("/api/v1/signals/drift", params={
            "service": "nobody", "baseline": "1.3", "candidate": "1.4"}).json()
        assert not few["flagged"]
        assert {m["reason"] for m in few["measures"]} == {"too few turns on one side"}

        bad = client.get("/api/v1/signals/drift", params={"service": SERVICE})
        assert bad.status_code == 400
        metrics = client.get("/metrics").text
        v2_zero = f'tooltrail_signal_zero_tool_turn_ratio{{service="{SERVICE}",version="1.4"}}'
        assert float(metric_value(metrics, v2_zero)) == 2 / 3
        v1_failed = f'tooltrail_signal_failed_call_ratio{{service="{SERVICE}",version="1.3"}}'
        assert float(metric_value(metrics, v1_failed)) == 1 / 5
        check_rules(metrics)
        page = client.get("/ui/signals", params={"service": SERVICE})
        assert page.status_code == 200
        for version in ("1.3", "1.3-canary", "1.4"):
            assert f'<th scope="col" class="mono">{version}</th>' in page.text
        assert "66.7 %" in page.text and "33.3 %" in page.text
        schema = client.get("/openapi.json").json()
        assert "/api/v1/signals/drift" in schema["paths"]
        assert "zero_tool_rate" in schema["components"]["schemas"]["Figures"]["properties"]


RULES = Path(__file__).parents[3] / "deploy" / "prometheus" / "production-signals.rules.yml"


def metric_value(text: str, series: str) -> str:
    for line in text.splitlines():
        if line.startswith(series + " "):
            return line.split()[-1]
    raise AssertionError(f"{series} not on /metrics")


def check_rules(metrics: str) -> None:
    """The example alert rules parse as Prometheus rule groups and query only metrics that
    /metrics exports."""
    exported = {line.split()[2] for line in metrics.splitlines() if line.startswith("# TYPE ")}
    groups = yaml.safe_load(RULES.read_text())["groups"]
    alerts = [rule for group in groups for rule in group["rules"]]
    assert {r["alert"] for r in alerts} >= {"TooltrailAgentStoppedCallingTools",
                                            "TooltrailToolMixShift"}
    for rule in alerts:
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule
        names = set(re.findall(r"\btooltrail_[a-z_]+", rule["expr"]))
        assert names and names <= exported, (rule["alert"], names - exported)
