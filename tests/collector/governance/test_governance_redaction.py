"""Redaction at ingest (docs/redaction.md): what the rules remove is stored nowhere, on either
store, whichever way a call comes in; a hashed value still matches an expectation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from tests.collector.dbscan import where_found
from tests.server import Server, running_server
from tests.spans import ToolStep, agent_turn, provider
from tooltrail.collector.governance.redaction import (
    MASK,
    KeyRule,
    Policy,
    RedactionError,
    hash_value,
    load_policy,
    luhn,
)
from tooltrail.collector.model import Batch, ToolCall, TraceInfo
from tooltrail.collector.store.rows import CALL_FIELDS, prepare

SECRET = "test-redaction-secret"
EMAIL = "jane.doe@example.com"
CARD = "4111 1111 1111 1111"  # a test card number (passes the Luhn check)
CARD_DIGITS = "4111111111111111"
CUSTOMER = "C-1001"
CODE = "481516"
VISIBLE = "kept-marker-7f3a"  # no rule covers it: the scan must find it (the scan can fail)
RULES = {
    "keys": [
        {"key": "customer_id", "action": "hash"},
        {"key": "verification_code", "action": "drop", "tool": "verify_*"},
        {"key": "card*", "action": "mask", "in": "result"},
    ],
    "patterns": ["email", "card"],
}
ARGUMENTS = {"customer_id": CUSTOMER, "contact": f"write to {EMAIL}", "pay": f"card {CARD}",
             "note": VISIBLE}


def tooltrail_redact_hash(value: str) -> str:
    """The hash as the documented command prints it."""
    done = subprocess.run(
        [sys.executable, "-m", "tooltrail", "redact-hash", value], check=True,
        capture_output=True, text=True, env={**os.environ, "TOOLTRAIL_REDACTION_SECRET": SECRET})
    return done.stdout.strip()


@pytest.fixture
def rules_file(tmp_path: Path) -> Path:
    path = tmp_path / "redaction.yaml"
    path.write_text(yaml.safe_dump(RULES))
    return path


@pytest.fixture
def server(database_url: str, rules_file: Path) -> Iterator[Server]:
    with running_server(database_url, "--redaction-rules", str(rules_file),
                        env={"TOOLTRAIL_REDACTION_SECRET": SECRET}) as s:
        yield s


def test_redacted_values_are_stored_nowhere_and_hashes_still_match(
    server: Server, database_url: str,
) -> None:
    hashed = tooltrail_redact_hash(CUSTOMER)
    assert hashed == hash_value(SECRET.encode(), CUSTOMER) and CUSTOMER not in hashed
    tp = provider(OTLPSpanExporter(endpoint=f"{server.base_url}/v1/traces"))
    agent_turn(tp, "red-otlp", [
        ToolStep("lookup_customer", ARGUMENTS, {"email": EMAIL, "card_number": CARD_DIGITS}),
        ToolStep("verify_identity", {"verification_code": CODE, "customer_id": CUSTOMER},
                 "verified"),
    ])
    calls = [{"name": "lookup_customer", "arguments": ARGUMENTS,
              "result": {"email": EMAIL, "card_number": CARD_DIGITS}}]
    a2a_key = "https://arksim.arklex.ai/a2a/tool-call-capture/v1"
    with server.client() as client:
        explicit = client.post("/api/v1/conversations/red-explicit/turns/0/calls",
                               json={"calls": calls, "attributes": {"contact": EMAIL}})
        assert explicit.status_code == 200, explicit.text
        a2a = client.post("/api/v1/a2a/tasks?conversation=red-a2a", json={
            "id": "task-red", "contextId": "red-a2a", "artifacts": [{
                "artifactId": "a", "extensions": [a2a_key],
                "metadata": {f"{a2a_key}/tool_calls": calls}}]})
        assert a2a.status_code == 200, a2a.text
        created = client.post("/api/v1/expectations", json={
            "id": "hashed-customer", "selector": {"conversation": "red-*"}, "match": "superset",
            "calls": [{"name": "lookup_customer", "arguments": {"customer_id": hashed}}]})
        assert created.status_code == 201, created.text
    for key in ("red-otlp", "red-explicit", "red-a2a"):
        body = server.wait_for(f"/api/v1/conversations/{key}/results",
                               lambda b: any(r["expectation"] == "hashed-customer"
                                             for r in b["data"]))
        (result,) = [r for r in body["data"] if r["expectation"] == "hashed-customer"]
        assert result["passed"] is True, result
    with server.client() as client:
        stored = client.get("/api/v1/conversations/red-otlp").json()
    lookup, verify = [c for t in stored["turns"] for c in t["tool_calls"]]
    assert lookup["arguments"] == {
        "customer_id": hashed, "contact": "write to [redacted:email]",
        "pay": "card [redacted:card]", "note": VISIBLE}
    assert lookup["result"] == {"email": "[redacted:email]", "card_number": MASK}
    assert verify["arguments"] == {"customer_id": hashed}  # the code dropped

    found = where_found(database_url, [EMAIL, CARD, CARD_DIGITS, CUSTOMER, CODE, VISIBLE])
    assert {needle for _, _, needle in found} == {VISIBLE}, found
    # the extracted arguments are not kept a second time in the span attributes
    assert {(t, c) for t, c, _ in found} == {("tool_calls", "arguments")}, found


def test_without_rules_the_scan_finds_the_values(tmp_path: Path) -> None:
    """The control of the scan above: the same call unredacted is found where it is stored."""
    url = f"sqlite:///{tmp_path / 'plain.db'}"
    with running_server(url) as plain:
        tp = provider(OTLPSpanExporter(endpoint=f"{plain.base_url}/v1/traces"))
        agent_turn(tp, "plain", [ToolStep("lookup_customer", ARGUMENTS, {"email": EMAIL})])
        plain.wait_for("/api/v1/conversations/plain", lambda b: b["call_count"] == 1)
    found = where_found(url, [EMAIL, CARD, CUSTOMER])
    assert {n for _, _, n in found} == {EMAIL, CARD, CUSTOMER}
    # stored once: in the call's arguments and result, not again in its attributes
    assert {(t, c) for t, c, _ in found} == {("tool_calls", "arguments"), ("tool_calls", "result")}


def call(**changes: object) -> ToolCall:
    base = ToolCall(
        trace_id="t" * 32, span_id="s" * 16, parent_span_id=None, name="lookup_customer",
        call_id="c1", arguments={"customer_id": CUSTOMER}, arguments_raw=None, result=None,
        error=None, status="ok", start_ns=1, end_ns=2, convention="genai",
        attributes={"gen_ai.tool.call.arguments": json.dumps({"customer_id": CUSTOMER}),
                    "gen_ai.tool.name": "lookup_customer", "app.region": "eu"})
    return base.evolve(**changes)


def stored_attributes(policy: Policy, tool_call: ToolCall) -> dict[str, object]:
    row = prepare(Batch(calls=(tool_call,), traces=()), redact=policy.apply).calls[0]
    value = row[CALL_FIELDS.index("attributes")]
    return dict(json.loads(value) if isinstance(value, str | bytes) else value)


def test_span_attributes_setting_all_allowlist_none() -> None:
    assert stored_attributes(Policy(), call()) == {
        "gen_ai.tool.name": "lookup_customer", "app.region": "eu"}
    assert stored_attributes(Policy(attributes=("app.*",)), call()) == {"app.region": "eu"}
    assert stored_attributes(Policy(attributes="none"), call()) == {}


def test_raw_arguments_are_dropped_when_a_key_rule_applies() -> None:
    policy = Policy(keys=(KeyRule("customer_id", "hash"),), secret=b"k")
    raw = f'{{"customer_id": "{CUSTOMER}", broken'
    redacted = policy.apply(Batch(calls=(call(arguments=raw, arguments_raw=raw),), traces=()))
    assert CUSTOMER not in json.dumps(redacted.calls[0].arguments_raw)


def test_card_pattern_needs_the_luhn_check_and_hash_rules_need_a_secret(
    rules_file: Path,
) -> None:
    assert luhn(CARD) and not luhn("4111 1111 1111 1112")
    policy = load_policy(str(rules_file), SECRET, "all")
    assert policy.text("order 1234567890123 card 4111-1111-1111-1111") == (
        "order 1234567890123 card [redacted:card]")
    with pytest.raises(RedactionError, match="need a secret"):
        load_policy(str(rules_file), None, "all")
    bad = rules_file.with_name("bad.yaml")
    bad.write_text(yaml.safe_dump({"keys": [{"key": "x", "action": "shred"}]}))
    with pytest.raises(RedactionError, match=r"keys\[0\]: `action` is one of drop, mask, hash"):
        load_policy(str(bad), SECRET, "all")


def test_serve_refuses_unusable_rules_in_one_line(tmp_path: Path, rules_file: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tooltrail", "serve", "--database-url",
         f"sqlite:///{tmp_path / 'x.db'}", "--redaction-rules", str(rules_file)],
        capture_output=True, text=True, timeout=60, check=False,
        env={k: v for k, v in os.environ.items() if k != "TOOLTRAIL_REDACTION_SECRET"})
    assert done.returncode == 2
    assert done.stderr.strip() == (f"tooltrail serve: redaction rules {rules_file}: `hash` rules "
                                   "need a secret (TOOLTRAIL_REDACTION_SECRET)")


TRICKY = [
    {"a": ["x", {"b": f"\n{CARD}\t"}]},
    {"a": f'"{CARD_DIGITS}"', "n": 4111111111111111},  # a JSON number is not a string value
    {"a": "4111-1111-1111-1111 and 1234567890123"},
    {"a": "é4111111111111111é", "b": "conv-b86455b100000001-0000"},
    {"a": "x" * 300 + EMAIL.upper()},
    {"k": "no digits here", "l": ["12 34 56 78 90 12 3"]},
    {"nested": {"deep": [[[f"mail {EMAIL}"]]]}},
]


@pytest.mark.parametrize("value", TRICKY)
def test_ruling_a_call_out_at_once_never_misses_what_the_walk_finds(
    value: dict[str, object], rules_file: Path,
) -> None:
    policy = load_policy(str(rules_file), SECRET, "all")
    walked = policy.value(value, None, True)
    redacted = policy.call(call(arguments=value, result=value, attributes={}))
    assert redacted.arguments == walked and redacted.result == walked
    # the walk itself redacts whatever holds an email or a card number (the check has teeth)
    holds = any(s in json.dumps(value) for s in ("4111", EMAIL, EMAIL.upper()))
    assert (walked != value) == holds


def trace(attributes: dict[str, object]) -> TraceInfo:
    return TraceInfo(trace_id="t" * 32, turn_key="k", conversation_key="c", key_rank=0,
                     service="svc", agents=frozenset(), start_ns=1, end_ns=2,
                     has_agent_root=True, attributes=attributes)


def test_trace_attributes_are_masked_value_by_value_and_untouched_ones_kept(
    rules_file: Path,
) -> None:
    policy = load_policy(str(rules_file), SECRET, "all")
    clean = trace({"service.name": "svc", "n": 4111111111111111, "ids": ["conv-1", "x"]})
    assert policy.trace(clean) is clean  # nothing to mask: not copied
    dirty = {"user": EMAIL, "input.value": f"pay with {CARD} please", "service.name": "svc",
             "list": [EMAIL, "ok"], "long": "y" * 400 + " " + EMAIL}
    for _ in range(2):  # the second time, short values come from the memo: the same answers
        masked = policy.trace(trace(dict(dirty))).attributes
        assert masked == {"user": "[redacted:email]",
                          "input.value": "pay with [redacted:card] please",
                          "service.name": "svc", "list": ["[redacted:email]", "ok"],
                          "long": "y" * 400 + " [redacted:email]"}
    assert policy.text("pay with 4111 1111 1111 1112 please").endswith("1112 please")


def test_a_call_no_rule_or_pattern_touches_is_not_copied(rules_file: Path) -> None:
    policy = load_policy(str(rules_file), SECRET, "none")
    untouched = call(arguments={"q": "shoes", "n": 2}, result={"items": ["a"]}, attributes={})
    assert policy.call(untouched) is untouched
    touched = policy.call(call(arguments={"q": "shoes", "customer_id": CUSTOMER}, attributes={}))
    assert touched.arguments == {"q": "shoes", "customer_id": hash_value(SECRET.encode(),
                                                                          CUSTOMER)}


def test_a_mapping_shape_seen_before_still_finds_rules_under_new_value_types(
    rules_file: Path,
) -> None:
    # plans are remembered per shape (keys and value types): the same keys holding a string,
    # then a mapping, then a list must each be walked as what they hold
    policy = load_policy(str(rules_file), SECRET, "none")
    hashed = hash_value(SECRET.encode(), CUSTOMER)
    shapes = [
        ({"who": "plain", "n": 1}, {"who": "plain", "n": 1}),
        ({"who": {"customer_id": CUSTOMER}, "n": 1}, {"who": {"customer_id": hashed}, "n": 1}),
        ({"who": [{"customer_id": CUSTOMER}, "x"], "n": 1},
         {"who": [{"customer_id": hashed}, "x"], "n": 1}),
        ({"who": "plain", "n": 1}, {"who": "plain", "n": 1}),
    ]
    for _ in range(2):  # the second round answers from the remembered plans
        for sent, stored in shapes:
            assert policy.call(call(arguments=sent, attributes={})).arguments == stored
    results = policy.call(call(result={"card_no": "1", "ok": [{"card": "2"}]}, attributes={}))
    assert results.result == {"card_no": MASK, "ok": [{"card": MASK}]}
