"""The expectation JSON Schema OpenAPI documents agrees with the parser (issue 11 item 12):
every expectation the matcher's tests parse validates against it (case-folded enums,
aliases, nulls), and every one the parser rejects is rejected by the schema too, unless the
rule is one a JSON Schema cannot say (value-spec operators, names against forbid/allow,
min_calls against max_calls, budgets). The corpus is what the matcher's own test suite
feeds the parser (tests/matcher/conftest.py records it), plus test_spec.py's documented
invalid expectations."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.matcher.test_spec import INVALID
from tooltrail.collector.api.expectation_schema import expectation_schema
from tooltrail.matcher import InvalidExpectation, parse_expectation
from tooltrail.matcher.selector import FIELDS as SELECTOR_FIELDS
from tooltrail.matcher.spec import CALL_FIELDS, TOP_FIELDS, TURN_FIELDS

VALIDATORS = {r: jsonschema.Draft202012Validator(expectation_schema(r)) for r in (False, True)}
CROSS_FIELD = re.compile(
    r"is forbidden by forbid\[|is not in `allow`|is more than max_calls|is fewer than the \d+ "
    r"calls|nested too deeply")


def parser_only(path: str, message: str) -> bool:
    """A rule of the parser a JSON Schema cannot say: inside a value spec (arguments,
    result, error), or comparing fields with each other."""
    in_spec = re.search(r"\.(result|error)\b|\.arguments[.\[]", path) is not None
    operator_at_top = path.endswith(".arguments") and message.startswith("$")
    return in_spec or operator_at_top or CROSS_FIELD.search(message) is not None


def check(body: Any, require_id: bool, error: dict[str, str] | None) -> str | None:
    """Why schema and parser disagree on `body` (None when they agree)."""
    valid = VALIDATORS[require_id].is_valid(body)
    if error is None and not valid:
        errors = [e.message for e in VALIDATORS[require_id].iter_errors(body)]
        return f"the parser accepts it, the schema does not: {errors[:3]}"
    if error is not None and valid and not parser_only(error["path"], error["message"]):
        return f"the parser rejects it ({error['path']}: {error['message']}), the schema not"
    return None


def test_the_schema_has_exactly_the_parsers_fields() -> None:
    schema = expectation_schema(True)
    properties = schema["properties"]
    assert list(properties) == list(TOP_FIELDS)
    assert list(properties["calls"]["items"]["properties"]) == list(CALL_FIELDS)
    assert list(properties["turns"]["items"]["properties"]) == list(TURN_FIELDS)
    assert list(properties["selector"]["properties"]) == list(SELECTOR_FIELDS)


@pytest.mark.parametrize("body", [
    {"id": "a", "match": "Any-Order", "calls": [{"name": "x", "arguments_match": "EXACT"}]},
    {"match": " in order ", "arguments": "Partial", "scope": "Each_Turn", "calls": []},
    {"match": "contains", "forbid": None, "allow": None, "max_calls": None, "calls": None},
    {"turns": [{"match": "within", "arguments": None}, {}], "allow_extra_turns": True},
    {"scope": "TURN", "turn": -1, "selector": {"agent": None, "attributes": None}},
    {"calls": [{"name": "a", "error": {"$contains": "timeout"}, "result": None}]},
])
def test_what_the_parser_accepts_validates(body: dict[str, Any]) -> None:
    parse_expectation(body)
    assert check(body, False, None) is None


@pytest.mark.parametrize(("body", "message"), INVALID)
def test_documented_invalid_expectations_are_rejected_by_both(body: Any, message: str) -> None:
    with pytest.raises(InvalidExpectation) as info:
        parse_expectation(body)
    error = {"path": info.value.path, "message": info.value.message}
    try:
        sent = json.loads(json.dumps(body, allow_nan=False))
    except ValueError:
        pytest.skip("not a JSON body (NaN)")
    if sent != body:
        pytest.skip("not a JSON body (a non-string key)")
    assert check(sent, False, error) is None


@pytest.mark.slow
def test_schema_and_parser_agree_on_the_matcher_test_corpus(tmp_path: Path) -> None:
    corpus = tmp_path / "expectations.jsonl"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/matcher"],
        env={**os.environ, "TOOLTRAIL_EXPECTATION_CORPUS": str(corpus)},
        capture_output=True, text=True, timeout=600,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert run.returncode == 0, run.stdout[-3000:]
    seen = {line for line in corpus.read_text(encoding="utf-8").splitlines()}
    entries = [json.loads(line) for line in sorted(seen)]
    accepted = [e for e in entries if e["error"] is None]
    rejected = [e for e in entries if e["error"] is not None]
    assert len(accepted) > 500 and len(rejected) > 50  # the corpus is the suite's, not a few
    disagreements = [
        (e["body"], why) for e in entries
        if (why := check(json.loads(e["body"]), e["require_id"], e["error"])) is not None
    ]
    assert disagreements == []
    assert sum(not parser_only(**e["error"]) for e in rejected) > 20  # the schema rejects many
