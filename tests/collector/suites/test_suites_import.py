"""`tooltrail import`: each source's documented examples (their
tests/collector/suites/suites_data/*/README.md cites them) imported, then checked; the
verdicts are those the source tool gives."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.collector.suites.checkutil import (
    CAPTURES,
    run,
    run_json,
    session_requests,
    verdicts,
    write_jsonl,
)
from tests.spans import ToolStep
from tooltrail.collector.suites.importers import (
    Context,
    ImportFailure,
    import_agentevals,
    import_arksim,
    import_file,
    import_kagent,
)
from tooltrail.collector.suites.suite import parse_suite

DATA = Path(__file__).parent / "suites_data"
KAGENT_TOOL = "get-weather-by-city_get-weather-by-city"


def imported(capsys: pytest.CaptureFixture[str], kind: str, source: Path, out: Path,
             *extra: str) -> str:
    code, _, err = run(capsys, "import", kind, str(source), "-o", str(out), *extra)
    assert code == 0, err
    parse_suite(yaml.safe_load(out.read_text()), str(out))  # the output is a valid suite
    return err


def test_arksim_scenarios(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = tmp_path / "arksim.yaml"
    err = imported(capsys, "arksim", DATA / "arksim" / "scenarios.json", suite)
    assert "scenarios[3].assertions[1].type: 'llm_judge' assertions are not mapped" in err
    body = {e["id"]: e for e in yaml.safe_load(suite.read_text())["expectations"]}
    assert body["order_status_check"]["match"] == "superset"  # contains
    assert body["product_search_with_budget"]["match"] == "subset"  # within
    cancel = body["auth_cancel_order"]["calls"]
    assert [c.get("arguments_match") for c in cancel] == ["ignore", "ignore", "partial", "exact"]
    inputs = sorted(str(p) for p in (DATA / "arksim").glob("*-*.json"))
    code, doc = run_json(capsys, "check", str(suite), *inputs)
    assert code == 1
    # the verdicts ArkSim's trajectory_matching.py gives these trajectories
    assert verdicts(doc) == {
        ("order_status_check", "order_status_check-extras"): "pass",
        ("order_status_check", "order_status_check-unverified"): "fail",
        ("product_search_with_budget", "product_search_with_budget-search-only"): "pass",
        ("product_search_with_budget", "product_search_with_budget-strayed"): "fail",
        ("auth_cancel_order", "auth_cancel_order-in-order"): "pass",
        ("auth_cancel_order", "auth_cancel_order-unconfirmed"): "fail",
        ("auth_cancel_order", "auth_cancel_order-skipped-auth"): "fail",
        ("auth_check_order", "auth_check_order-any-order"): "pass",
        ("auth_check_order", "auth_check_order-extra"): "fail",
    }


def test_arksim_empty_expected_passes_anything() -> None:
    """trajectory_matching.py: no expected tool calls → matched, whatever the mode."""
    ctx = Context("s")
    data = {"scenarios": [{"scenario_id": "x", "assertions": [
        {"type": "tool_calls", "expected": [], "match_mode": "strict"}]}]}
    suite = parse_suite(import_arksim(data, ctx))
    assert suite.entries[0].expectation.match == "superset"
    assert suite.entries[0].expectation.calls == ()


def test_kagent_story_three_sessions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Seed 004: one suite, three sessions; exit codes 0, 1, 1; as the ADK events kagent
    stores (read by collector.capture.adk_events), as OpenAI messages (what kagent-agentevals
    converts them into) and as OTLP JSON Lines from the real SDK."""
    suite = tmp_path / "kagent.yaml"
    err = imported(capsys, "kagent", DATA / "kagent" / "suite.yaml", suite)
    assert "source: not mapped" in err
    called, budget, strict = ("answer-is-grounded-in-a-tool-call",
                              "stayed-within-its-tool-budget",
                              "looked-up-the-city-the-user-asked-about")
    expected = {
        "weather-grounded": (0, {called: "pass", budget: "pass", strict: "pass"}),
        "weather-ungrounded": (1, {called: "fail", budget: "pass", strict: "fail"}),
        "weather-wrong-city": (1, {called: "pass", budget: "pass", strict: "fail"}),
    }
    otlp = {
        "weather-grounded": [ToolStep(KAGENT_TOOL, {"city": "London"}, "73.2 F")],
        "weather-ungrounded": [],
        "weather-wrong-city": [ToolStep(KAGENT_TOOL, {"city": "Paris"}, "73.2 F")],
    }
    for session, (exit_code, wanted) in expected.items():
        messages = DATA / "kagent" / "messages" / f"{session}.json"
        events = DATA / "kagent" / "events" / f"{session}.jsonl"
        spans = write_jsonl(tmp_path / f"{session}.jsonl",
                            session_requests(None, [otlp[session]]))
        for source, kind in ((messages, "openai"), (events, "adk-events"),
                             (spans, "otlp-json")):
            code, doc = run_json(capsys, "check", str(suite), str(source))
            assert code == exit_code, (session, source)
            assert doc["inputs"][0]["format"] == kind
            assert verdicts(doc) == {(e, session): v for e, v in wanted.items()}
    code, out, _ = run(capsys, "check", str(suite),
                       str(DATA / "kagent" / "messages" / "weather-wrong-city.json"))
    assert '`city` was "Paris", expected "London"' in out


def test_kagent_unmapped_fields_warn() -> None:
    ctx = Context("s")
    document = import_kagent({"name": "s", "cases": [
        {"name": "c", "session_id": "abc-123", "invocation_id": "e-1",
         "drop_internal_tools": False, "extra_tool_denylist": ["x"],
         "evaluators": [{"type": "llm_judge", "model": "m"},
                        {"type": "tools_used", "expected": ["t"], "mode": "unordered"}]}]},
        ctx)
    assert [e["id"] for e in document["expectations"]] == ["c.tools_used"]
    assert document["expectations"][0]["selector"] == {"conversation": "abc-123*"}
    assert any("invocation_id" in w for w in ctx.warnings)
    assert any("drop_internal_tools" in w for w in ctx.warnings)
    assert any("extra_tool_denylist" in w for w in ctx.warnings)
    assert any("'llm_judge' evaluators are not mapped" in w for w in ctx.warnings)
    with pytest.raises(ImportFailure, match=r"cases\[0\].evaluators\[0\].mode"):
        import_kagent({"cases": [{"name": "c", "session_id": "fixture", "evaluators": [
            {"type": "tools_used", "mode": "strict", "expected": ["t"]}]}]}, Context("s"))


def test_agentevals_readme_examples(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    strict = tmp_path / "strict.yaml"
    imported(capsys, "agentevals", DATA / "agentevals" / "weather-reference.json", strict)
    code, doc = run_json(capsys, "check", str(strict),
                         str(DATA / "agentevals" / "weather-reference-run.json"),
                         str(DATA / "agentevals" / "weather-reference-sf.json"))
    assert code == 1
    assert verdicts(doc) == {("weather-reference", "weather-reference-run"): "pass",
                             ("weather-reference", "weather-reference-sf"): "fail"}
    unordered = tmp_path / "unordered.yaml"
    imported(capsys, "agentevals", DATA / "agentevals" / "unordered.yaml", unordered)
    code, doc = run_json(capsys, "check", str(unordered),
                         str(DATA / "agentevals" / "weather-and-fun-run.json"))
    assert code == 0 and verdicts(doc) == {("weather-and-fun", "weather-and-fun-run"): "pass"}


def test_agentevals_argument_modes() -> None:
    reference = [{"role": "assistant", "tool_calls": [{"function": {
        "name": "f", "arguments": '{"a": {"b": 1}, "c": 2}'}}]}]
    ctx = Context("ref")
    doc = import_agentevals({"reference_outputs": reference, "tool_args_match_mode": "superset",
                             "tool_args_match_overrides": {"f": ["a.b"]}}, ctx)
    call = doc["expectations"][0]["calls"][0]
    assert call == {"name": "f", "arguments_match": "partial", "arguments": {"a": {"b": 1}}}
    doc = import_agentevals({"reference_outputs": reference, "tool_args_match_mode": "superset"},
                            ctx)
    assert doc["expectations"][0]["calls"][0]["arguments"] == {"a": {"$literal": {"b": 1}},
                                                              "c": 2}
    doc = import_agentevals({"reference_outputs": reference, "tool_args_match_mode": "subset"},
                            ctx)
    assert doc["expectations"][0]["arguments"] == "exact"
    assert any("subset" in w and "stricter" in w for w in ctx.warnings)


def test_adk_evalset_on_the_real_adk_capture(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    suite = tmp_path / "adk.yaml"
    err = imported(capsys, "adk", DATA / "adk" / "weather.evalset.json", suite, "--selector",
                   'conversation: "{id}*"')
    assert "criteria.response_match_score: not mapped" in err
    expectations = yaml.safe_load(suite.read_text())["expectations"]
    assert [len(e["turns"]) for e in expectations] == [3, 3]
    code, doc = run_json(capsys, "check", str(suite), str(CAPTURES / "adk" / "spans.otlp.pb"))
    assert code == 1
    # conv-adk-0001-rome selects nothing: its key is the case's own, no recording has it
    assert verdicts(doc) == {("conv-adk", "conv-adk-0001"): "pass",
                             ("conv-adk-0001-rome", None): "fail"}
    legacy = tmp_path / "legacy.yaml"
    imported(capsys, "adk", DATA / "adk" / "conv-adk.test.json", legacy)
    code, doc = run_json(capsys, "check", str(legacy), str(CAPTURES / "adk" / "spans.otlp.json"))
    assert code == 0 and verdicts(doc) == {("conv-adk", "conv-adk-0001"): "pass"}
    rome = tmp_path / "rome.yaml"
    imported(capsys, "adk", DATA / "adk" / "weather.evalset.json", rome, "--selector", "")
    code, doc = run_json(capsys, "check", str(rome), str(CAPTURES / "adk" / "spans.otlp.pb"))
    failed = [c for c in doc["checks"] if c["status"] == "fail"]
    assert [c["expectation"] for c in failed] == ["conv-adk-0001-rome"]
    assert "Rome" in failed[0]["reason"] and "Berlin" in failed[0]["reason"]


def test_rhesis_tests(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = tmp_path / "rhesis.yaml"
    err = imported(capsys, "rhesis", DATA / "rhesis" / "tests.json", suite)
    assert "tests[2]: has no expected_tool_calls" in err
    inputs = sorted(str(p) for p in (DATA / "rhesis").glob("*-*.json"))
    code, doc = run_json(capsys, "check", str(suite), *inputs)
    assert code == 1
    assert verdicts(doc) == {
        ("refund-late-order", "refund-late-order-ok"): "pass",
        ("refund-late-order", "refund-late-order-no-lookup"): "fail",
        ("small-talk", "small-talk-chatty"): "fail",  # an empty list expects no tool calls
    }
    reasons = {c["conversation"]: c["reason"] for c in doc["checks"]}
    assert reasons["refund-late-order-no-lookup"] == (
        "Expected `lookup_order`; it was never called.")


def test_import_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "not-arksim.json"
    bad.write_text('{"cases": []}')
    code, out, err = run(capsys, "import", "arksim", str(bad))
    assert code == 2 and out == ""
    assert err == f"tooltrail import: {bad}: arksim: scenarios: expected a list\n"
    bad.write_text("{not json: [")
    code, _, err = run(capsys, "import", "rhesis", str(bad))
    assert code == 2 and err.startswith(f"tooltrail import: {bad}: not valid JSON or YAML")
    code, _, err = run(capsys, "import", "kagent", str(tmp_path / "missing.yaml"))
    assert code == 2 and "cannot read" in err
    with pytest.raises(ImportFailure, match="match_mode: unknown mode 'fuzzy'"):
        bad.write_text('{"scenarios": [{"scenario_id": "s", "assertions": [{"type": '
                       '"tool_calls", "expected": [{"name": "a"}], "match_mode": "fuzzy"}]}]}')
        import_file("arksim", bad)
