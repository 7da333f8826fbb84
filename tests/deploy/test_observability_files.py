"""deploy/grafana/tooltrail.json and deploy/prometheus/tooltrail.rules.yml read only metrics
tooltrail exports: every metric name in their PromQL is one a real server's /metrics has. The
rules file has the shape of Prometheus rule groups, and `promtool check rules` accepts it where
promtool is installed (Debian: the `prometheus` package)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.server import running_server

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "tooltrail.json"
RULES = ROOT / "deploy" / "prometheus" / "tooltrail.rules.yml"
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"),
            "gauge": ("",), "info": ("_info",), "summary": ("_sum", "_count", "")}
# PromQL words that are not metric names (https://prometheus.io/docs/prometheus/latest/querying/)
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool",
            "and", "or", "unless", "le", "inf", "nan"}


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """Every series name a running server exports (a worker exports a subset of the same)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('obs') / 'tooltrail.db'}"
    with running_server(url) as server:
        text = httpx.get(f"{server.base_url}/metrics").text
    names = set()
    for family in text_string_to_metric_families(text):
        names.update(family.name + s for s in SUFFIXES.get(family.type, ("",)))
        names.update(sample.name for sample in family.samples)
    return names


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: identifiers that are not functions,
    keywords, label names (in `{…}`, `by (…)`, `without (…)`), durations or Grafana variables."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # strings
    expr = re.sub(r"\{[^}]*\}", "", expr)  # label matchers
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges
    expr = re.sub(r"\boffset\s+\w+", "", expr)
    expr = re.sub(r"\$\w+", "", expr)
    names = set()
    for match in re.finditer(r"(?<![\w.])([a-zA-Z_:][\w:]*)\s*(\()?", expr):
        name, call = match.groups()
        if call is None and name.lower() not in KEYWORDS:
            names.add(name)
    return names


def dashboard_queries(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("expr", "definition") and isinstance(value, str):
                yield value
            else:
                yield from dashboard_queries(value)
    elif isinstance(node, list):
        for item in node:
            yield from dashboard_queries(item)


def test_metric_names_of_an_expression() -> None:
    assert metric_names('histogram_quantile(0.95, sum by (le) (rate(a_bucket{x="y"}[5m])))') == {
        "a_bucket"}
    assert metric_names("max by (e) (b) < 0.8 * max by (e) (b offset 1d)") == {"b"}
    assert metric_names("sum(rate(c_total[1m])) / on (x) d > 0 and e") == {"c_total", "d", "e"}


def test_dashboard_reads_only_exported_metrics(exported: set[str]) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["panels"] and dashboard["title"] == "tooltrail"
    queries = list(dashboard_queries(dashboard))
    assert len(queries) >= len(dashboard["panels"])
    read = set()
    for query in queries:
        if query.startswith("label_values("):  # label_values(METRIC, LABEL)
            query = query.removeprefix("label_values(").split(",")[0]
        names = metric_names(query)
        assert names, query
        read |= names
    assert read - exported == set()
    for panel in dashboard["panels"]:
        assert panel["targets"] and all(t["expr"] for t in panel["targets"]), panel["title"]


def test_rules_are_prometheus_rule_groups_on_exported_metrics(exported: set[str]) -> None:
    document = yaml.safe_load(RULES.read_text())
    assert set(document) == {"groups"}
    alerts = {}
    for group in document["groups"]:
        assert set(group) <= {"name", "interval", "rules"} and group["name"]
        for rule in group["rules"]:
            assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule
            assert re.fullmatch(r"\d+[smhd]", rule["for"])
            alerts[rule["alert"]] = metric_names(rule["expr"])
    wanted = {"TooltrailIngestQueueSaturated": "tooltrail_writer_queue_capacity_bytes",
              "TooltrailRefusingSpans": "tooltrail_receiver_refused_spans_total",
              "TooltrailScoringBacklog": "tooltrail_scoring_backlog_conversations",
              "TooltrailPassRateDrop": "tooltrail_expectation_pass_ratio",
              "TooltrailSqliteWalGrowing": "tooltrail_sqlite_wal_bytes",
              "TooltrailSlowAcknowledgements": "tooltrail_writer_wait_seconds_bucket"}
    for alert, metric in wanted.items():
        assert metric in alerts[alert]
    for alert, names in alerts.items():
        assert names and names <= exported, (alert, names - exported)


def test_promtool_checks_the_rules() -> None:
    promtool = os.environ.get("PROMTOOL") or shutil.which("promtool")
    if promtool is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is missing (.ci/run unpacks Debian's prometheus package)")
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus)")
    done = subprocess.run([promtool, "check", "rules", str(RULES)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 8 rules found" in done.stdout
