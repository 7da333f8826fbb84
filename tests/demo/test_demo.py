"""`./scripts/demo --ci` end to end, as a new user runs it (issue 17): the real script, the real
`tooltrail serve`, the Pydantic AI agent exporting OTLP/gRPC, ArkSim's scenarios.json imported
(examples/customer-service; the format of ArkSim's own customer-service example, seed 003).
Every outcome the demo promises is asserted here from what it printed and wrote, and the
scoring runs once more with tooltrail on PostgreSQL. The script sets up the virtualenv running
the tests (VENV), as scripts/serve would: pip runs only when that virtualenv has no stamp of
this pyproject.toml for the `demo` extra."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import fresh_database

ROOT = Path(__file__).resolve().parents[2]
ARKSIM = ["order_status_check", "product_search_with_budget", "nonexistent_order_lookup",
          "auth_cancel_order", "auth_check_order", "auth_product_search", "auth_account_lookup"]
TOOLTRAIL_ONLY = ["cancel-after-verification", "order-status-grounded",
                  "browsing-stays-anonymous"]
V2_FAILS = {  # expectation → a piece of v2's reason
    "order_status_check": "Expected `get_order`; it was never called.",
    "product_search_with_budget": "Call 1 `lookup_customer` was not expected.",
    "auth_cancel_order": "Expected `send_verification_code`; it was never called.",
    "cancel-after-verification": "Call 2 `cancel_order` failed",
    "order-status-grounded": "In turn 3, expected `get_order`; it was never called.",
    "browsing-stays-anonymous": "`lookup_customer` is forbidden but was called (call 1).",
}
ROW = re.compile(r"^(\S+)\s+(pass|FAIL R \d\.\d\d)\s+(pass|FAIL R \d\.\d\d)\s*(.*)$")


def run_demo(command: list[str], out: Path) -> tuple[str, dict[str, tuple[str, str, str]]]:
    done = subprocess.run([*command, "--ci", "--out", str(out)], capture_output=True,
                          text=True, timeout=600, check=False, cwd=ROOT,
                          env={**os.environ, "VENV": sys.prefix})
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {m[1]: (m[2], m[3], m[4]) for m in map(ROW.match, done.stdout.splitlines()) if m}
    return done.stdout, rows


def assert_promises(stdout: str, rows: dict[str, tuple[str, str, str]], out: Path) -> None:
    assert list(rows) == ARKSIM + TOOLTRAIL_ONLY, stdout
    for ident, (v1, v2, reason) in rows.items():
        assert v1 == "pass", (ident, stdout)
        if ident in V2_FAILS:
            assert v2.startswith("FAIL") and V2_FAILS[ident] in reason, (ident, stdout)
        else:
            assert v2 == "pass", (ident, stdout)
    assert rows["auth_cancel_order"][1] == "FAIL R 0.50"  # partial credit: 2 of 4 calls
    outcomes = [line for line in stdout.splitlines() if line.startswith(("ok ", "MISSED"))]
    assert len(outcomes) == 10 and all(line.startswith("ok ") for line in outcomes), stdout
    assert "unchanged 10 (version 1)" in stdout  # the suite did not change between the runs
    html = out / "report.html"
    assert f"HTML report: {html}" in stdout
    report = html.read_text(encoding="utf-8")
    assert "auth_cancel_order-v2" in report and "identity not verified" in report
    # --ci leaves nothing running, so it points to no page of the stopped server
    assert "/ui/" not in stdout and "web view: not kept with --ci" in stdout, stdout
    url = re.search(r"tooltrail listening: http://127\.0\.0\.1:(\d+)", stdout)
    assert url, stdout
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", int(url[1])), 1):
        pass
    suite = (out / "arksim.yaml").read_text(encoding="utf-8")
    assert all(f"id: {ident}" in suite for ident in ARKSIM)  # imported by tooltrail import


def test_scripts_demo_ci_on_sqlite(tmp_path: Path) -> None:
    stdout, rows = run_demo([str(ROOT / "scripts" / "demo")], tmp_path)
    assert_promises(stdout, rows, tmp_path)
    assert (tmp_path / "tooltrail.db").is_file()  # SQLite in the demo's folder


@pytest.fixture
def postgres(tmp_path: Path) -> Iterator[str]:
    yield from fresh_database("postgres", tmp_path)


@pytest.mark.postgres
def test_demo_scoring_on_postgresql(postgres: str, tmp_path: Path) -> None:
    demo = ROOT / "examples" / "customer-service" / "demo.py"
    stdout, rows = run_demo([sys.executable, str(demo), "--database-url", postgres], tmp_path)
    assert_promises(stdout, rows, tmp_path)
    assert not (tmp_path / "tooltrail.db").exists()


def test_the_scenarios_are_arksims_format() -> None:
    """scenarios.json keeps ArkSim's shape: seven scenarios, one tool_calls assertion each, in
    the match modes of seed 003's table."""
    data = json.loads((ROOT / "examples" / "customer-service" / "scenarios.json").read_text())
    modes = {s["scenario_id"]: [a["match_mode"] for a in s["assertions"]]
             for s in data["scenarios"]}
    assert data["schema_version"] == "v1"
    assert modes == {"order_status_check": ["contains"], "product_search_with_budget": ["within"],
                     "nonexistent_order_lookup": ["contains"], "auth_cancel_order": ["strict"],
                     "auth_check_order": ["unordered"], "auth_product_search": ["contains"],
                     "auth_account_lookup": ["within"]}
