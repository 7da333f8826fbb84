"""`./scripts/demo`: spans in, verdicts out, a regression caught.

Starts tooltrail on SQLite in a temporary folder on free ports, imports ArkSim's
scenarios.json unchanged (plus tooltrail.yaml), applies the suite, runs the customer-service
agent through the seven scenarios as v1 and as v2 exporting OTLP to it (one scenario records
its calls through the explicit capture API instead), reads the verdicts with
`tooltrail check --server … --html`, prints them, and checks every outcome the demo promises.
Then it leaves tooltrail running (Ctrl-C stops it); `--ci` stops at once and exits 0 only if
every promised outcome happened.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import store
import yaml
from agent import AGENT_NAME, run_conversation
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from versions import VERSIONS

from tooltrail.collector.bench.process import ServerProcess, serve
from tooltrail.collector.suites.suite import load_suite, suite_document

HERE = Path(__file__).resolve().parent
SERVICE = "customer-service"
EXPLICIT = "auth_product_search"  # recorded over REST (ArkSim's AgentResponse.tool_calls)
SHOWCASE = "auth_cancel_order-v2"  # the failing conversation the web view is opened on
# What v2 must fail (everything else passes for both versions), and what each reason names.
V2_FAILS = {
    "order_status_check": "get_order",
    "product_search_with_budget": "lookup_customer",
    "auth_cancel_order": "send_verification_code",
    "cancel-after-verification": "cancel_order",
    "order-status-grounded": "get_order",
    "browsing-stays-anonymous": "lookup_customer",
}


def say(text: str = "") -> None:
    print(text, flush=True)


def tooltrail(*args: str) -> subprocess.CompletedProcess[str]:
    """A tooltrail command, shown as a person would type it."""
    shown = " ".join(a if " " not in a else repr(a) for a in args)
    say(f"$ tooltrail {shown}")
    return subprocess.run([sys.executable, "-m", "tooltrail", *args], capture_output=True,
                          text=True, check=False, timeout=300)


def required(done: subprocess.CompletedProcess[str], *codes: int) -> str:
    if done.returncode not in (codes or (0,)):
        raise SystemExit(f"demo: the command failed ({done.returncode}):\n{done.stderr}")
    return done.stdout


def summary(applied: str) -> str:
    """`apply`'s lines counted by verb: "created 10 (version 1)"."""
    verbs: dict[str, int] = {}
    for line in applied.splitlines():
        verb, _, rest = line.partition(" ")
        key = f"{verb} {{}} ({rest.split('(', 1)[-1]}"
        verbs[key] = verbs.get(key, 0) + 1
    return "; ".join(k.format(n) for k, n in verbs.items())


def build_suite(work: Path) -> Path:
    """ArkSim's suite imported unchanged, with tooltrail.yaml's expectations beside it."""
    arksim = work / "arksim.yaml"
    required(tooltrail("import", "arksim", str(HERE / "scenarios.json"), "-o", str(arksim)))
    documents = [suite_document(load_suite(p)) for p in (arksim, HERE / "tooltrail.yaml")]
    suite = work / "suite.yaml"
    suite.write_text(yaml.safe_dump({
        "name": SERVICE,
        "description": "scenarios.json (imported by tooltrail import arksim) + tooltrail.yaml",
        "expectations": [e for d in documents for e in d["expectations"]],
    }, sort_keys=False), encoding="utf-8")
    return suite


def capture_explicitly(client: httpx.Client, key: str, records: list[Any]) -> None:
    """Each turn's calls POSTed as ArkSim's AgentResponse.tool_calls, acknowledged after commit."""
    for index, record in enumerate(records):
        answer = client.post(
            f"/api/v1/conversations/{urllib.parse.quote(key, safe='')}/turns/{index}/calls",
            json={"agent": AGENT_NAME, "service": SERVICE, "calls": record.calls})
        answer.raise_for_status()


def run_version(version: str, work: Path, server: ServerProcess) -> Path:
    """The agent through every scenario on a freshly seeded shop; returns the shop's file."""
    shop = store.seed(work / f"shop-{version}.db")
    provider = TracerProvider(resource=Resource.create(
        {"service.name": SERVICE, "service.version": version}))
    provider.add_span_processor(BatchSpanProcessor(
        OTLPSpanExporter(endpoint=server.grpc_endpoint, insecure=True)))
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        for scenario, turns in VERSIONS[version].items():
            key = f"{scenario}-{version}"
            if scenario == EXPLICIT:
                capture_explicitly(client, key, run_conversation(turns, key, shop, None))
            else:
                run_conversation(turns, key, shop, provider)
    provider.shutdown()  # flushes: every span is acknowledged, so stored, once this returns
    return shop


def verdicts(report: dict[str, Any]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(expectation, version) → its checks (several for per-turn expectations)."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for check in report["checks"]:
        version = (check["conversation"] or "").rsplit("-", 1)[-1]
        out.setdefault((check["expectation"], version), []).append(check)
    return out


def cell(checks: list[dict[str, Any]]) -> str:
    failed = [c for c in checks if c["status"] != "pass"]
    if not checks:
        return "-"
    if not failed:
        return "pass"
    result = failed[0]["result"]
    return "FAIL" + (f" R {result['recall']:.2f}" if result else "")


def why(checks: list[dict[str, Any]]) -> str:
    for c in checks:
        if c["status"] != "pass":
            return (f"{c['scope']}: " if c["scope"] != "conversation" else "") + str(c["reason"])
    return ""


def table(report: dict[str, Any], arksim_ids: list[str]) -> Iterator[str]:
    found = verdicts(report)
    ids = [e["id"] for e in report["expectations"]]
    width = max(len(i) for i in ids) + 2
    yield f"{'scenario':<{width}}{'v1':<13}{'v2':<13}why v2 failed"
    for title, group in (("ArkSim scenarios.json, imported unchanged", arksim_ids),
                         ("tooltrail-only (tooltrail.yaml)",
                          [i for i in ids if i not in arksim_ids])):
        yield f"-- {title}"
        for ident in group:
            v1, v2 = found.get((ident, "v1"), []), found.get((ident, "v2"), [])
            yield f"{ident:<{width}}{cell(v1):<13}{cell(v2):<13}{why(v2) or why(v1)}".rstrip()


def promised(report: dict[str, Any], server: ServerProcess, shops: dict[str, Path],
             reapplied: str, html: Path) -> list[tuple[str, bool]]:
    """Every outcome the demo promises, each with whether it happened."""
    found = verdicts(report)
    ids = [e["id"] for e in report["expectations"]]
    v1_ok = all(found.get((i, "v1")) and cell(found[(i, "v1")]) == "pass" for i in ids)
    v2_failed = {i for i in ids if found.get((i, "v2")) and cell(found[(i, "v2")]) != "pass"}
    v2_checked = all(found.get((i, "v2")) for i in ids)
    reasons = all(name in why(found.get((i, "v2"), [])) for i, name in V2_FAILS.items())
    strict = [c["result"] for c in found.get(("auth_cancel_order", "v2"), []) if c["result"]]
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        sources = {}
        for key in report["conversations"]:
            body = client.get(f"/api/v1/conversations/{urllib.parse.quote(key, safe='')}")
            sources[key] = {c["source"] for t in body.json()["turns"] for c in t["tool_calls"]}
        page = client.get(f"/ui/conversations/{urllib.parse.quote(SHOWCASE, safe='')}")
    text = html.read_text(encoding="utf-8") if html.is_file() else ""
    return [
        ("v1 passes every expectation (14 conversations)", v1_ok and len(sources) == 14),
        ("v2 fails exactly: " + ", ".join(V2_FAILS), v2_checked and v2_failed == set(V2_FAILS)),
        ("each v2 failure names the call at fault", reasons),
        ("partial credit: v2's strict auth_cancel_order scores recall 0.5",
         [r["recall"] for r in strict] == [0.5]),
        ("the tool refused v2's unverified cancellation: ORD-1002 cancelled by v1 only",
         (store.order_status(shops["v1"], "ORD-1002"), store.order_status(shops["v2"],
                                                                          "ORD-1002"))
         == ("cancelled", "processing")),
        (f"{EXPLICIT} arrived over the explicit capture API, the rest over OTLP",
         all(s == ({"explicit"} if k.startswith(EXPLICIT) else {"otel"})
             for k, s in sources.items())),
        ("the suite did not change between the runs (apply again: all unchanged)",
         bool(reapplied) and all(line.startswith("unchanged") for line in
                                 reapplied.splitlines())),
        ("check exits 1: the regression would stop CI", report["exit_code"] == 1),
        ("the HTML report has the failing conversation's diff",
         SHOWCASE in text and "cancel-after-verification" in text),
        ("the web view shows the failing conversation",
         page.status_code == 200 and "cancel-after-verification" in page.text),
    ]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="scripts/demo", description=__doc__.split("\n\n")[0])
    p.add_argument("--ci", action="store_true",
                   help="run straight through, stop tooltrail, exit 0 only if every promised "
                        "outcome happened")
    p.add_argument("--out", type=Path, help="the working folder (default: a new temporary one)")
    p.add_argument("--database-url", help="tooltrail's database (default: SQLite in the folder)")
    args = p.parse_args(argv)
    work = args.out or Path(tempfile.mkdtemp(prefix="tooltrail-demo-"))
    work.mkdir(parents=True, exist_ok=True)
    if not args.database_url:  # a run starts from an empty store, as in a fresh clone
        for old in work.glob("tooltrail.db*"):
            old.unlink()
    database = args.database_url or f"sqlite:///{work / 'tooltrail.db'}"
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stops tooltrail on the way out
    started = time.monotonic()
    say(f"demo: working in {work}")
    with serve(database, "--settle-seconds", "0.5", "--worker-poll-seconds", "0.1") as server:
        say(f"demo: tooltrail listening: {server.base_url} (REST, OTLP/HTTP), "
            f"{server.grpc_endpoint} (OTLP/gRPC)")
        suite = build_suite(work)
        say(summary(required(tooltrail("apply", str(suite), "--server", server.base_url))))
        shops = {}
        for version in VERSIONS:
            say(f"demo: agent {version}: 7 scenarios (Pydantic AI, scripted model) → OTLP/gRPC; "
                f"{EXPLICIT} over the explicit capture API")
            shops[version] = run_version(version, work, server)
        reapplied = required(tooltrail("apply", str(suite), "--server", server.base_url))
        say(summary(reapplied))
        html = work / "report.html"
        done = tooltrail("check", str(suite), "--server", server.base_url, "--format", "json",
                         "--html", str(html))
        report = json.loads(required(done, 0, 1))
        arksim = [e["id"] for e in suite_document(load_suite(work / "arksim.yaml"))[
            "expectations"]]
        say()
        for line in table(report, arksim):
            say(line)
        say(f"(first verdict {time.monotonic() - started:.1f} s after the start; "
            "R: recall, the share of expected calls made)")
        say()
        say(f"{SHOWCASE}: every difference (the HTML report and the web view align them)")
        for check in report["checks"]:
            if check["conversation"] == SHOWCASE and check["result"]:
                for difference in check["result"]["differences"]:
                    say(f"  {check['expectation']}: {difference['message']}")
        say()
        outcomes = promised(report, server, shops, reapplied, html)
        for text, ok in outcomes:
            say(f"{'ok  ' if ok else 'MISSED'} {text}")
        passed = all(ok for _, ok in outcomes)
        say()
        say(f"HTML report: {html}")
        if not passed:
            say("demo: some promised outcomes did not happen (see MISSED above)")
        if args.ci:  # the server stops as this returns: a URL to it would lead nowhere
            say("web view: not kept with --ci (./scripts/demo keeps tooltrail running)")
            return 0 if passed else 1
        say(f"web view of the failing v2 conversation: "
            f"{server.base_url}/ui/conversations/{SHOWCASE}")
        say(f"tooltrail keeps running at {server.base_url}/ui/ — Ctrl-C stops it")
        try:
            while server.process.poll() is None:
                time.sleep(0.5)
        except KeyboardInterrupt:
            say("\ndemo: stopping tooltrail")
        return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
