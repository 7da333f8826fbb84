"""`tooltrail check` offline: suites, inputs, verdicts, exit codes and every output format."""

from __future__ import annotations

import gzip
import io
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.collector.suites.checkutil import (
    CAPTURES,
    otlp_json_line,
    run,
    run_json,
    session_requests,
    verdicts,
    write_jsonl,
)
from tests.spans import ToolStep
from tooltrail.collector.suites.report import REPORT_SCHEMA
from tooltrail.collector.suites.suite import SuiteError, parse_suite_text

SUITE = """
name: captures
defaults: {match: in_order, arguments: partial}
expectations:
  - id: weather-paris-first
    calls: [{name: get_weather, arguments: {city: Paris}}, {name: get_time}]
  - id: berlin-weather
    calls: [{name: get_weather, arguments: {city: Berlin}}]
    match: superset
  - id: no-errors
    require_no_errors: true
  - id: refunds
    selector: {conversation: "refund-*"}
    calls: [{name: issue_refund}]
  - id: refunds-optional
    optional: true
    selector: {conversation: "refund-*"}
"""


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE)
    return path


def test_suite_errors_name_the_file_and_the_field(tmp_path: Path) -> None:
    with pytest.raises(SuiteError) as err:
        parse_suite_text("name: s\nexpectations:\n  - id: a\n    calls: [{name: x, "
                         "arguments: {amount: {$aprox: 1}}}]\n", "s.yaml")
    assert str(err.value).startswith(
        "s.yaml: expectations[0].calls[0].arguments.amount: unknown operator $aprox")
    assert err.value.path == "expectations[0].calls[0].arguments.amount"
    with pytest.raises(SuiteError, match=r"^s.yaml: defaults.scope: unknown default"):
        parse_suite_text("name: s\ndefaults: {scope: turn}\nexpectations: []\n", "s.yaml")
    with pytest.raises(SuiteError, match=r"^s.yaml: expectations\[1\].id: duplicate id 'a'"):
        parse_suite_text("name: s\nexpectations: [{id: a}, {id: a}]\n", "s.yaml")
    with pytest.raises(SuiteError, match=r"^s.yaml: expectations\[0\].id: required"):
        parse_suite_text("name: s\nexpectations: [{calls: []}]\n", "s.yaml")
    with pytest.raises(SuiteError, match=r"expectations\[0\].optional: must be true or false"):
        parse_suite_text("name: s\nexpectations: [{id: a, optional: maybe}]\n", "s.yaml")


def test_defaults_apply_unless_the_expectation_says_otherwise() -> None:
    suite = parse_suite_text(SUITE, "s.yaml")
    bodies = {e.id: e.body for e in suite.entries}
    assert bodies["weather-paris-first"]["match"] == "in_order"
    assert bodies["berlin-weather"]["match"] == "superset"
    assert [e.id for e in suite.entries if e.optional] == ["refunds-optional"]


def test_invalid_suite_exits_2_with_one_line(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: s\nexpectations:\n  - id: a\n    match: sometimes\n")
    code, out, err = run(capsys, "check", str(bad), str(CAPTURES / "adk" / "spans.otlp.pb"))
    assert code == 2 and out == ""
    assert err.startswith(f"tooltrail check: {bad}: expectations[0].match:")
    assert "Traceback" not in err and err.count("\n") == 1


@pytest.mark.parametrize("capture", ["strands", "openai_agents_otel", "pydantic_ai", "adk"])
def test_verdicts_on_real_framework_captures(capture: str, suite: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Each capture scripts the same conversation (tests/captures/README.md): turn 1 weather
    Paris + London then time Paris; turn 2 convert_currency raises and weather Berlin."""
    key = json.loads((CAPTURES / capture / "expected.json").read_text())["conversation_id"]
    for name in ("spans.otlp.pb", "spans.otlp.json"):
        code, doc = run_json(capsys, "check", str(suite), str(CAPTURES / capture / name))
        assert code == 1
        assert verdicts(doc) == {
            ("weather-paris-first", key): "pass",
            ("berlin-weather", key): "pass",
            ("no-errors", key): "fail",  # convert_currency raised
            ("refunds", None): "fail",
            ("refunds-optional", None): "skipped",
        }
        jsonschema.validate(doc, REPORT_SCHEMA)
        failed = {c["expectation"]: c for c in doc["checks"] if c["status"] == "fail"}
        assert failed["refunds"]["reason"] == "no conversation matched"
        assert "convert_currency" in failed["no-errors"]["reason"]
        assert doc["inputs"][0]["format"] == ("otlp-protobuf" if name.endswith("pb")
                                              else "otlp-json")
        conversation = doc["conversations"][key]
        assert [len(t["tool_calls"]) for t in conversation["turns"]][:2] in ([3, 2], [3, 1])
        assert doc["expectations"][0]["definition"]["calls"][0]["name"] == "get_weather"


def _pass_suite(tmp_path: Path) -> Path:
    path = tmp_path / "pass.yaml"
    path.write_text("name: p\nexpectations:\n  - id: looked-up\n    selector: {conversation: "
                    "'s-*'}\n    calls: [{name: lookup_order, arguments: {order_id: 42}}]\n")
    return path


def test_jsonl_gzip_directory_stdin_and_exit_codes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    suite = _pass_suite(tmp_path)
    good = session_requests("s-good", [[ToolStep("lookup_order", {"order_id": 42})]])
    lazy = session_requests("s-lazy", [[], []])
    data = tmp_path / "data" / "nested"
    data.mkdir(parents=True)
    write_jsonl(data / "good.jsonl", good)
    (data / "lazy.jsonl.gz").write_bytes(
        gzip.compress("".join(otlp_json_line(r) + "\n" for r in lazy).encode()))
    (tmp_path / "data" / ".hidden").write_text("not an input")
    code, doc = run_json(capsys, "check", str(suite), str(data / "good.jsonl"))
    assert code == 0 and verdicts(doc) == {("looked-up", "s-good"): "pass"}
    assert doc["inputs"][0]["format"] == "otlp-json"  # one line is one JSON document
    code, doc = run_json(capsys, "check", str(suite), str(tmp_path / "data"))
    assert code == 1
    assert verdicts(doc) == {("looked-up", "s-good"): "pass", ("looked-up", "s-lazy"): "fail"}
    lazy_check = next(c for c in doc["checks"] if c["conversation"] == "s-lazy")
    assert lazy_check["reason"] == "Expected `lookup_order`; it was never called."
    assert lazy_check["source"].endswith("lazy.jsonl.gz")
    assert [i["format"] for i in doc["inputs"]] == ["otlp-json", "otlp-jsonl"]
    stdin = io.TextIOWrapper(io.BytesIO(good[0].SerializeToString()))
    monkeypatch.setattr(sys, "stdin", stdin)
    code, doc = run_json(capsys, "check", str(suite), "-")
    assert code == 0 and doc["inputs"][0] == {**doc["inputs"][0], "source": "-",
                                             "format": "otlp-protobuf"}


def test_a_keyless_file_is_one_conversation_keyed_by_its_stem(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = _pass_suite(tmp_path)
    turns = session_requests(None, [[ToolStep("lookup_order", {"order_id": 1})],
                                    [ToolStep("lookup_order", {"order_id": 42})]])
    write_jsonl(tmp_path / "s-two-turns.otlp.jsonl", turns)
    code, doc = run_json(capsys, "check", str(suite), str(tmp_path / "s-two-turns.otlp.jsonl"))
    assert code == 0
    assert doc["counts"]["conversations"] == 1
    assert len(doc["conversations"]["s-two-turns"]["turns"]) == 2


def test_an_unreadable_input_hides_no_verdict(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    suite = _pass_suite(tmp_path)
    good = tmp_path / "good.pb"
    good.write_bytes(session_requests("s-good", [[ToolStep("lookup_order",
                                                           {"order_id": 42})]])[0]
                     .SerializeToString())
    truncated = tmp_path / "truncated.pb"
    truncated.write_bytes(good.read_bytes()[:-7])
    unknown = tmp_path / "notes.txt.json"
    unknown.write_text('{"hello": "world"}')
    code, out, _ = run(capsys, "check", str(suite), str(truncated), str(good), str(unknown),
                         str(tmp_path / "missing.pb"))
    assert code == 2
    lines = out.splitlines()
    assert any(line.startswith(f"ERROR  {truncated}: ") and "protobuf" in line
               for line in lines)
    assert f"ERROR  {unknown}: unknown input format" in out
    assert f"ERROR  {tmp_path / 'missing.pb'}: cannot read" in out
    assert any(line.startswith("PASS") and "s-good" in line for line in lines)
    junit = tmp_path / "junit.xml"
    code, out, _ = run(capsys, "check", str(suite), str(truncated), str(good),
                       "--junit", str(junit), "--format", "github")
    assert code == 2
    assert out.startswith(f"::error file={truncated},title=unreadable input::")
    root = ET.parse(junit).getroot()
    errors = root.findall("./testsuite[@name='inputs']/testcase/error")
    assert [e.get("type") for e in errors] == ["unreadable"]


def test_junit_and_github_and_unselected(suite: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.jsonl"
    write_jsonl(other, session_requests("x-other", [[ToolStep("lookup_order", {})]]))
    junit = tmp_path / "out" / "junit.xml"
    junit.parent.mkdir()
    code, out, _ = run(capsys, "check", str(suite), str(CAPTURES / "strands" / "spans.otlp.pb"),
                       "--format", "github", "--junit", str(junit))
    assert code == 1
    assert "::error file=" in out and "title=no-errors × conv-strands-0001::" in out
    assert "::notice" in out and "refunds-optional" in out
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites" and root.get("name") == "captures"
    cases = {(s.get("name"), c.get("name")): c for s in root for c in s}
    assert set(cases) == {("weather-paris-first", "conv-strands-0001"),
                          ("berlin-weather", "conv-strands-0001"),
                          ("no-errors", "conv-strands-0001"),
                          ("refunds", "(no conversation)"),
                          ("refunds-optional", "(no conversation)")}
    failure = cases[("no-errors", "conv-strands-0001")].find("failure")
    assert failure is not None and "convert_currency" in (failure.get("message") or "")
    assert failure.text and "convert_currency" in failure.text
    assert cases[("refunds-optional", "(no conversation)")].find("skipped") is not None
    assert cases[("berlin-weather", "conv-strands-0001")].find("failure") is None
    code, doc = run_json(capsys, "check", str(suite), str(other))
    assert doc["unselected"] == [] and code == 1  # no selector: every conversation is selected
    narrow = tmp_path / "narrow.yaml"
    narrow.write_text("name: n\nexpectations: [{id: r, selector: {conversation: 'refund-*'}, "
                      "optional: true}]\n")
    code, out, _ = run(capsys, "check", str(narrow), str(other))
    assert code == 0 and "not selected by any expectation: x-other" in out
    many = write_jsonl(tmp_path / "many.jsonl", [
        r for i in range(8) for r in session_requests(f"x-{i}", [[ToolStep("a", {})]])])
    code, out, _ = run(capsys, "check", str(narrow), str(many))
    assert code == 0 and ("not selected by any expectation: x-0, x-1, x-2, x-3, x-4 and 3 more "
                          "(--format json lists them)") in out.splitlines()
    code, doc = run_json(capsys, "check", str(narrow), str(many))
    assert doc["unselected"] == [f"x-{i}" for i in range(8)]


def test_usage_errors_exit_2(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "check", str(suite))
    assert code == 2 and "give at least one INPUT" in err
    with pytest.raises(SystemExit) as exit_:
        run(capsys, "check", str(suite), "x", "--format", "yaml")
    assert exit_.value.code == 2


def test_openai_messages_steps_turns_and_forced_format(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Calls of one assistant message are one step (parallel, any order within it); every
    user message after the first opens a turn; JSON Lines of messages are one trajectory."""
    suite = tmp_path / "s.yaml"
    suite.write_text("name: s\nexpectations:\n"
                     "  - id: parallel-then-time\n    match: strict\n    scope: turn\n"
                     "    turn: 0\n    calls: [{name: weather, arguments: {city: London}},\n"
                     "            {name: weather, arguments: {city: Paris}}, {name: time}]\n"
                     "  - id: second-turn\n    scope: turn\n    turn: 1\n    match: strict\n"
                     "    calls: [{name: refund}]\n")

    def call(i: str, name: str, args: str) -> dict[str, object]:
        return {"id": i, "type": "function", "function": {"name": name, "arguments": args}}

    messages = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "tool_calls": [call("a", "weather", '{"city": "Paris"}'),
                                             call("b", "weather", '{"city": "London"}')]},
        {"role": "tool", "tool_call_id": "a", "content": "sunny"},
        {"role": "tool", "tool_call_id": "b", "content": "rain"},
        {"role": "assistant", "tool_calls": [call("c", "time", "{}")]},
        {"role": "user", "content": "refund me"},
        {"role": "assistant", "tool_calls": [call("d", "refund", '{"amount": 1}')]},
    ]
    path = tmp_path / "chat.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in messages))
    code, doc = run_json(capsys, "check", str(suite), str(path))
    assert code == 0 and doc["inputs"][0]["format"] == "openai"
    turns = doc["conversations"]["chat"]["turns"]
    assert [[(c["name"], c["step"]) for c in t["tool_calls"]] for t in turns] == [
        [("weather", 0), ("weather", 0), ("time", 1)], [("refund", 0)]]
    assert turns[0]["tool_calls"][0]["result"] in ("sunny", "rain")
    code, out, _ = run(capsys, "check", str(suite), str(path), "--input-format",
                       "otlp-protobuf")
    assert code == 2 and f"ERROR  {path}: " in out and "protobuf" in out


def test_golden_from_a_capture_pins_it(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    capture = CAPTURES / "strands" / "spans.otlp.pb"
    out = tmp_path / "golden.yaml"
    code, _, err = run(capsys, "golden", str(capture), "--conversation", "conv-strands-0001",
                       "--per-turn", "--ignore-arg", "amount", "-o", str(out))
    assert code == 0, err
    body = yaml.safe_load(out.read_text())
    assert [len(t["calls"]) for t in body["turns"]] == [3, 2, 0]
    assert body["turns"][1]["calls"][0]["arguments"]["amount"] == {"$any": True}
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({"name": "g", "expectations": [body]}))
    code, doc = run_json(capsys, "check", str(suite), str(capture))
    assert code == 0 and verdicts(doc) == {("conv-strands-0001", "conv-strands-0001"): "pass"}
    code, doc = run_json(capsys, "check", str(suite), str(CAPTURES / "pydantic_ai" /
                                                          "spans.otlp.pb"))
    assert code == 1  # another framework's recording is not this one (and has another key)
    code, _, err = run(capsys, "golden", str(capture), "--conversation", "nope")
    assert code == 2 and "no conversation 'nope' in the inputs" in err


@pytest.mark.parametrize("selective", [False, True])
def test_bench_check_verdicts_agree_with_what_it_wrote(selective: bool) -> None:
    """`tooltrail bench check` (tiny size; its figures are not asserted): every conversation
    written as the script goes passes what picks it, every perturbed one fails something
    (all expectations applying), and each selected pair has its verdict."""
    import re
    import subprocess

    args = ["--conversations", "60", "--timeout", "240"] + (["--selective"] if selective else [])
    done = subprocess.run([sys.executable, "-m", "tooltrail", "bench", "check", *args],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    perturbed = re.search(r"(\d+) perturbed conversations, (\d+) with a failure, 0 wrong",
                          done.stdout)
    assert perturbed, done.stdout
    assert int(perturbed[1]) > 0, done.stdout  # the seeded run strays: the check is not vacuous
    per = 2 if selective else 20  # expectations picking each conversation
    assert f" {60 * per:,} verdicts, exit 1" in done.stdout, done.stdout


def test_check_gives_the_results_the_worker_stores(tmp_path: Path) -> None:
    """Offline check scores without storing; the worker scores and stores. Over real framework
    captures and the benchmark's conversations (some perturbed), every result check reports is
    the one the worker stores and REST returns, field for field (`scored_at` aside)."""
    from tooltrail.collector.api import convert
    from tooltrail.collector.extract import DEFAULT_CONVERSATION_KEYS, ExtractOptions
    from tooltrail.collector.metrics import Metrics
    from tooltrail.collector.store import queries
    from tooltrail.collector.suites import bench, run
    from tooltrail.collector.suites.suite import load_suite
    from tooltrail.collector.worker import Worker

    bench.write_inputs(tmp_path / "bench.jsonl", 40)
    suite_doc = bench.suite(20)
    suite_doc["expectations"].append(yaml.safe_load(SUITE)["expectations"][0])
    (tmp_path / "suite.json").write_text(json.dumps(suite_doc))
    suite = load_suite(tmp_path / "suite.json")
    sources = [str(tmp_path / "bench.jsonl")] + [
        str(CAPTURES / c / "spans.otlp.json") for c in ("strands", "pydantic_ai", "adk")]
    options = ExtractOptions(DEFAULT_CONVERSATION_KEYS)

    with run.check_offline(suite, sources, options, with_conversations=False) as report:
        offline = {(c.expectation, c.conversation, c.scope): c.result for c in report.checks
                   if c.conversation is not None}

    with run.temporary_store() as engine:
        with engine.begin() as conn:
            for entry in suite.entries:
                queries.add_expectation_version(conn, entry.id, entry.body, must_exist=False)
        run.write(engine, sources, options)
        worker = Worker(engine, Metrics(), settle_seconds=0.0, poll_seconds=1.0, batch=500,
                        lease_seconds=3600.0)
        while worker.round():
            pass
        with engine.connect() as conn:
            rows = queries.list_results(conn, limit=1 << 30, before_id=None, expectation=None,
                                        conversation_id=None, passed=None, since=None,
                                        until=None)
            stored = {}
            for row in rows:
                out = convert.result(row, row["conversation_key"]).model_dump(mode="json")
                scope = out["scope"]
                stored[(out["expectation"], out["conversation"], "conversation"
                        if scope.get("kind") != "turn" else f"turn {scope['turn']}")] = out
    assert len(stored) > 40 * 20 and offline.keys() == stored.keys()
    assert any(not r["passed"] for r in stored.values())
    for key, result in stored.items():
        assert offline[key] is not None
        assert {**offline[key], "scored_at": None} == {**result, "scored_at": None}, key


def test_a_bad_span_in_a_json_line_is_rejected_alone_as_a_receiver_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The OTLP/HTTP receiver keeps the other spans of a request when one span does not map
    (`codec.decode_body`); check reads OTLP through the same pipeline, so it does too."""
    request = json.loads(otlp_json_line(session_requests(
        "s-good", [[ToolStep("lookup_order", {"order_id": 42})]])[0]))
    spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans.append({**spans[0], "spanId": "00000000000000ff", "name": "bad",
                  "startTimeUnixNano": "soon"})
    inputs = tmp_path / "spans.jsonl"
    inputs.write_text(json.dumps(request) + "\n")
    code, doc = run_json(capsys, "check", str(_pass_suite(tmp_path)), str(inputs))
    assert code == 0, doc["inputs"]
    assert verdicts(doc) == {("looked-up", "s-good"): "pass"}
    (read,) = doc["inputs"]
    assert read["error"] is None
    assert [(s["span_id"], s["name"]) for s in read["rejected_spans"]] == [
        ("00000000000000ff", "bad")]
    assert "soon" in read["rejected_spans"][0]["reason"]



PEAK = """
import resource, sys
from tooltrail.collector.cli import main
code = main(sys.argv[2:])
sys.stdout.flush()
open(sys.argv[1], "w").write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
sys.exit(code)
"""


def _measured(tmp_path: Path, *argv: str) -> tuple[int, int, bytes]:
    """Run `tooltrail` in a child process: (exit code, its peak RSS in KiB, its stdout)."""
    import subprocess

    peak = tmp_path / "peak.txt"
    done = subprocess.run([sys.executable, "-c", PEAK, str(peak), *argv], capture_output=True,
                          timeout=600, check=False)
    assert done.returncode in (0, 1), done.stderr.decode()[-2000:]
    return done.returncode, int(peak.read_text()), done.stdout


def test_outputs_stream_in_bounded_memory(tmp_path: Path) -> None:
    """--format json, --junit and --html over many conversations are complete and valid, and
    writing them costs the process a bounded amount of memory over the table alone (they once
    held every result and conversation: ~0.3 MB a conversation here)."""
    from tooltrail.collector.suites import bench

    conversations = 400
    bench.write_inputs(tmp_path / "in.jsonl", conversations)
    (tmp_path / "suite.json").write_text(json.dumps(bench.suite(4)))
    common = ("check", str(tmp_path / "suite.json"), str(tmp_path / "in.jsonl"))
    _, table, _ = _measured(tmp_path, *common)
    code, everything, out = _measured(tmp_path, *common, "--format", "json", "--junit",
                                      str(tmp_path / "out.xml"), "--html",
                                      str(tmp_path / "out.html"))
    assert everything - table < 50 * 1024, (table, everything)

    doc = json.loads(out)
    jsonschema.validate(doc, REPORT_SCHEMA)
    checks = doc["checks"]
    assert code == 1 and len(checks) == doc["counts"]["checks"] == conversations * 4
    assert doc["counts"]["failed"] == sum(c["status"] == "fail" for c in checks) > 0
    assert {c["conversation"] for c in checks} == set(doc["conversations"])
    assert len(doc["conversations"]) == conversations
    assert all(c["result"]["passed"] == (c["status"] == "pass") for c in checks)

    suites = ET.parse(tmp_path / "out.xml").getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == [f"exp-{i:02d}" for i in range(4)]
    cases = [case for s in suites for case in s.findall("testcase")]
    assert len(cases) == len(checks)
    assert sum(int(s.get("failures") or 0) for s in suites) == doc["counts"]["failed"] == sum(
        case.find("failure") is not None for case in cases)

    page = (tmp_path / "out.html").read_text()
    assert page.rstrip().endswith("</html>")
    assert page.count('<div id="v') == len(checks)
    assert f"{len(checks)} verdicts" in page
