"""Parsing and validation of expectations: aliases, normalisation, every error with its path."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tooltrail.matcher import InvalidExpectation, parse_expectation, parse_expectation_text


def _error(data: Any, **kw: Any) -> str:
    with pytest.raises(InvalidExpectation) as info:
        parse_expectation(data, **kw)
    err = info.value
    assert str(err) == (f"{err.path}: {err.message}" if err.path else err.message)
    return str(err)


def _c(**fields: Any) -> dict[str, Any]:
    return {"name": "a", **fields}


INVALID: list[tuple[Any, str]] = [
    (
        {"calls": [{"name": "a"}, {"name": "b"}, _c(arguments={"amount": {"$aprox": 19.99}})]},
        "calls[2].arguments.amount: unknown operator $aprox",
    ),
    (
        {"calls": [_c(arguments={"a.b": {"$aprox": 1}})]},
        'calls[0].arguments["a.b"]: unknown operator $aprox',
    ),
    (
        {"calls": [_c(arguments={"x[0]": {"$x": 1}})]},
        'calls[0].arguments["x[0]"]: unknown operator $x',
    ),
    (
        {"calls": [_c(arguments={"o": {"deep key": {"$x": 1}}})]},
        'calls[0].arguments.o["deep key"]: unknown operator $x',
    ),
    (
        {"calls": [_c(arguments={"l": [1, {"$x": 1}]})]},
        "calls[0].arguments.l[1]: unknown operator $x",
    ),
    (
        {"calls": [_c(arguments={"x": {"$not": {"$foo": 1}}})]},
        "calls[0].arguments.x.$not: unknown operator $foo",
    ),
    (
        {"calls": [_c(arguments={"x": {"$all": [{"$type": "string"}, {"$foo": 1}]}})]},
        "calls[0].arguments.x.$all[1]: unknown operator $foo",
    ),
    ({"matc": "strict"}, "matc: unknown field (did you mean `match`?)"),
    ({"zzz": 1}, "zzz: unknown field"),
    ({"calls": [_c(args={})]}, "calls[0].args: unknown field (did you mean `arguments`?)"),
    (
        {"match": "sorted"},
        "match: must be one of strict, in_order, unordered, superset, subset "
        '(or exact, any_order, contains, within), got "sorted"',
    ),
    (
        {"match": 3},
        "match: must be one of strict, in_order, unordered, superset, subset "
        "(or exact, any_order, contains, within), got 3",
    ),
    ({"arguments": "strict"}, 'arguments: must be one of ignore, partial, exact, got "strict"'),
    ({"scope": "turns"}, 'scope: must be one of conversation, turn, each_turn, got "turns"'),
    (
        {"calls": [_c(arguments_match="loose")]},
        'calls[0].arguments_match: must be one of ignore, partial, exact, got "loose"',
    ),
    (
        {"calls": [_c(arguments={"r": {"$regex": "("}})]},
        "calls[0].arguments.r: $regex does not compile (RE2 syntax): missing ): (",
    ),
    (
        {"calls": [_c(arguments={"r": {"$regex": "(?<=a)b"}})]},
        "calls[0].arguments.r: $regex does not compile (RE2 syntax): invalid perl operator: (?<=",
    ),
    (
        {"calls": [_c(arguments={"r": {"$regex": 5}})]},
        "calls[0].arguments.r: $regex must be a string, got 5",
    ),
    ({"calls": [_c(weight=0)]}, "calls[0].weight: must be a number > 0, got 0"),
    ({"calls": [_c(weight=-2.5)]}, "calls[0].weight: must be a number > 0, got -2.5"),
    ({"calls": [_c(weight=True)]}, "calls[0].weight: must be a number > 0, got true"),
    ({"calls": [_c(weight="3")]}, 'calls[0].weight: must be a number > 0, got "3"'),
    (
        {"forbid": ["delete_*"], "calls": [{"name": "delete_account"}]},
        "calls[0].name: `delete_account` is forbidden by forbid[0] `delete_*`",
    ),
    (
        {"allow": ["lookup_*"], "calls": [{"name": "lookup_order"}, {"name": "refund"}]},
        "calls[1].name: `refund` is not in `allow`",
    ),
    ({"allow": [], "calls": [{"name": "a"}]}, "calls[0].name: `a` is not in `allow`"),
    (
        {"calls": [_c(arguments={"x": {"$regex": "a", "y": 1}})]},
        "calls[0].arguments.x: mixes operators ($regex) and plain keys (y); "
        "write a key that starts with $ with $literal",
    ),
    (
        {"calls": [_c(arguments={"x": {"$approx": "x"}})]},
        'calls[0].arguments.x: $approx must be a number, got "x"',
    ),
    (
        {"calls": [_c(arguments={"x": {"$approx": True}})]},
        "calls[0].arguments.x: $approx must be a number, got true",
    ),
    (
        {"calls": [_c(arguments={"x": {"$approx": 1, "$tol": -1}})]},
        "calls[0].arguments.x: $tol must not be negative",
    ),
    (
        {"calls": [_c(arguments={"x": {"$tol": 0.1}})]},
        "calls[0].arguments.x: $tol is only allowed with $approx",
    ),
    (
        {"calls": [_c(arguments={"x": {"$rel": 0.1, "$gt": 1}})]},
        "calls[0].arguments.x: $rel is only allowed with $approx",
    ),
    (
        {"calls": [_c(arguments={"x": {"$any": True, "$type": "string"}})]},
        "calls[0].arguments.x: $any must stand alone (found $type with it)",
    ),
    (
        {"calls": [_c(arguments={"x": {"$literal": 1, "$type": "string"}})]},
        "calls[0].arguments.x: $literal must stand alone (found $type with it)",
    ),
    ({"calls": [_c(arguments={"x": {"$any": False}})]}, "calls[0].arguments.x: $any must be true"),
    (
        {"calls": [_c(arguments={"x": {"$absent": 1}})]},
        "calls[0].arguments.x: $absent must be true",
    ),
    (
        {"calls": [_c(arguments={"$absent": True})]},
        "calls[0].arguments: $absent is only allowed as the value of a key",
    ),
    (
        {"calls": [_c(arguments={"x": [{"$absent": True}]})]},
        "calls[0].arguments.x[0]: $absent is only allowed as the value of a key",
    ),
    (
        {"calls": [_c(arguments={"x": {"$type": "str"}})]},
        "calls[0].arguments.x: $type must be one of string, number, integer, boolean, object, "
        'array, null, got "str"',
    ),
    (
        {"calls": [_c(arguments={"x": {"$in": "abc"}})]},
        "calls[0].arguments.x: $in must be a list of values",
    ),
    (
        {"calls": [_c(arguments={"x": {"$all": []}})]},
        "calls[0].arguments.x: $all must be a non-empty list of specs",
    ),
    (
        {"calls": [_c(arguments={"x": {"$unordered": 3}})]},
        "calls[0].arguments.x: $unordered must be a list of specs",
    ),
    (
        {"calls": [_c(arguments={"x": {"$norm": 3}})]},
        "calls[0].arguments.x: $norm must be a string, got 3",
    ),
    (
        {"calls": [_c(arguments={"x": {"$gt": "3"}})]},
        'calls[0].arguments.x: $gt must be a number, got "3"',
    ),
    (
        {"calls": [_c(arguments={"x": {"$contains": {"$foo": 1}}})]},
        "calls[0].arguments.x.$contains: unknown operator $foo",
    ),
    (
        {"calls": [_c(error={"$regex": "("})]},
        "calls[0].error: $regex does not compile (RE2 syntax): missing ): (",
    ),
    ({"calls": [_c(result={"x": {"$bad": 1}})]}, "calls[0].result.x: unknown operator $bad"),
    ({"scope": "turn"}, "turn: required with scope turn: an integer (-1 is the last)"),
    (
        {"scope": "turn", "turn": "last"},
        "turn: required with scope turn: an integer (-1 is the last)",
    ),
    ({"turn": 1}, "turn: only allowed with scope turn"),
    ({"calls": [], "turns": []}, "turns: give either `calls` or `turns`, not both"),
    ({"scope": "each_turn", "turns": []}, "turns: per-turn expectations need scope conversation"),
    ({"allow_extra_turns": True}, "allow_extra_turns: only allowed with `turns`"),
    ({"turns": [{"calls": [], "mode": "strict"}]}, "turns[0].mode: unknown field"),
    (
        {"turns": [{"match": "nope"}]},
        "turns[0].match: must be one of strict, in_order, unordered, "
        "superset, subset (or exact, any_order, contains, within), "
        'got "nope"',
    ),
    (
        {"turns": [{"calls": []}, {"calls": [_c(arguments={"x": {"$y": 1}})]}]},
        "turns[1].calls[0].arguments.x: unknown operator $y",
    ),
    ({"turns": [[]]}, "turns[0]: must be an object with `calls`"),
    ({"min_calls": 3, "max_calls": 2}, "min_calls: 3 is more than max_calls 2"),
    (
        {"max_calls": 1, "calls": [{"name": "a"}, {"name": "b"}]},
        "max_calls: 1 is fewer than the 2 calls the expectation requires",
    ),
    ({"max_calls": -1}, "max_calls: must be a non-negative integer, got -1"),
    ({"min_calls": 1.5}, "min_calls: must be a non-negative integer, got 1.5"),
    ({"require_no_errors": "yes"}, 'require_no_errors: must be true or false, got "yes"'),
    (
        {"id": "has space"},
        'id: must be a slug (letters, digits, `.`, `_`, `-`; at most 128), got "has space"',
    ),
    ({"description": 3}, "description: must be a string"),
    ([], "an expectation must be an object"),
    ("calls", "an expectation must be an object"),
    ({"calls": [_c(arguments="x")]}, 'calls[0].arguments: must be an object, got "x"'),
    ({"calls": [_c(arguments=[1])]}, "calls[0].arguments: must be an object, got [1]"),
    ({"calls": {"name": "a"}}, "calls: must be a list of calls"),
    ({"calls": [{"name": "a"}, "b"]}, "calls[1]: must be an object with a `name`"),
    ({"calls": [{"arguments": {}}]}, "calls[0].name: must be a non-empty tool name"),
    ({"calls": [{"name": ""}]}, "calls[0].name: must be a non-empty tool name"),
    (
        {"selector": {"services": "x"}},
        "selector.services: unknown field "
        "(expected one of conversation, service, agent, attributes)",
    ),
    ({"selector": "x"}, "selector: must be an object"),
    ({"selector": {"agent": 3}}, "selector.agent: must be a non-empty string"),
    ({"selector": {"attributes": [1]}}, "selector.attributes: must be an object"),
    ({"forbid": "delete_*"}, "forbid: must be a list of tool-name globs"),
    ({"allow": ["a", ""]}, "allow[1]: must be a non-empty string"),
    (
        {"calls": [_c(arguments={"n": float("nan")})]},
        "calls[0].arguments.n: numbers must be finite",
    ),
    ({"calls": [_c(arguments={1: 2})]}, "calls[0].arguments: keys must be strings, got 1"),
]


@pytest.mark.parametrize(("data", "message"), INVALID)
def test_invalid_expectations_name_the_field(data: Any, message: str) -> None:
    assert _error(data) == message


def test_invalid_expectation_attributes() -> None:
    with pytest.raises(InvalidExpectation) as info:
        parse_expectation({"calls": [{"name": "a", "arguments": {"x": {"$aprox": 1}}}]})
    assert info.value.path == "calls[0].arguments.x"
    assert info.value.message == "unknown operator $aprox"
    assert isinstance(info.value, ValueError)
    with pytest.raises(InvalidExpectation) as info:
        parse_expectation([])  # type: ignore[arg-type]
    assert info.value.path == ""
    assert str(info.value) == "an expectation must be an object"


def test_require_id() -> None:
    assert _error({}, require_id=True) == "id: required"
    assert parse_expectation({"id": "refund-late-order.v2_x"}, require_id=True).id == (
        "refund-late-order.v2_x"
    )
    assert parse_expectation({}).id is None


@pytest.mark.parametrize(
    ("written", "mode"),
    [
        ("strict", "strict"), ("exact", "strict"), ("EXACT", "strict"), ("Strict", "strict"),
        ("in_order", "in_order"), ("in-order", "in_order"), ("In Order", "in_order"),
        ("IN_ORDER", "in_order"), ("unordered", "unordered"), ("any_order", "unordered"),
        ("Any-Order", "unordered"), ("any order", "unordered"), ("superset", "superset"),
        ("contains", "superset"), ("Contains", "superset"), ("subset", "subset"),
        ("within", "subset"), (" WITHIN ", "subset"),
    ],
)  # fmt: skip
def test_mode_aliases_and_normalisation(written: str, mode: str) -> None:
    assert parse_expectation({"match": written}).match == mode


def test_other_enums_are_normalised() -> None:
    exp = parse_expectation(
        {
            "scope": "Each-Turn",
            "arguments": "EXACT",
            "calls": [
                {"name": "a", "arguments_match": "Ignore"},
                {"name": "b", "arguments": {"x": {"$type": "Integer"}}},
            ],
        }
    )
    assert exp.scope == "each_turn"
    assert exp.arguments == "exact"
    assert exp.calls is not None
    assert exp.calls[0].mode == "ignore"
    assert exp.calls[1].mode == "exact"
    assert exp.to_dict()["calls"][1]["arguments"] == {"x": {"$type": "integer"}}


def test_defaults() -> None:
    exp = parse_expectation({})
    assert (exp.scope, exp.match, exp.arguments) == ("conversation", "in_order", "partial")
    assert exp.calls is None and exp.turns is None
    assert exp.forbid == () and exp.allow is None
    assert exp.max_calls is None and exp.min_calls is None
    assert exp.require_no_errors is False
    assert exp.to_dict() == {
        "scope": "conversation",
        "match": "in_order",
        "arguments": "partial",
        "require_no_errors": False,
    }


FULL: dict[str, Any] = {
    "id": "refund-late-order",
    "description": "Refund flow for a late order",
    "selector": {
        "conversation": "refund-*",
        "service": "support-agent",
        "agent": "support",
        "attributes": {"eval.case.id": "refund-late-order"},
    },
    "scope": "conversation",
    "match": "in_order",
    "arguments": "partial",
    "calls": [
        {"name": "lookup_order", "arguments": {"order_id": 42}},
        {
            "name": "issue_refund",
            "arguments": {
                "amount": {"$approx": 19.99, "$tol": 0.01},
                "reason": {"$regex": "(?i).*late.*"},
                "note": {"$absent": True},
                "meta": {"$literal": {"$ref": "x"}},
                "tags": {"$contains": "vip", "$type": "array"},
                "items": [{"sku": "A"}, {"$any": True}],
                "city": {"$norm": "New York"},
                "n": {"$gte": 1, "$lt": 10},
                "kind": {"$in": ["a", "b"]},
                "ids": {"$unordered": [1, 2]},
                "x": {"$not": {"$all": [{"$type": "string"}, {"$regex": "z.*"}]}},
                "r": {"$approx": 100, "$rel": 0.05},
            },
            "arguments_match": "exact",
            "weight": 3,
            "error": False,
            "result": {"$contains": "refunded"},
        },
        {"name": "notify", "error": {"$regex": "timeout.*"}},
    ],
    "forbid": ["delete_*"],
    "allow": ["lookup_*", "get_order", "issue_refund", "notify"],
    "max_calls": 8,
    "min_calls": 1,
    "require_no_errors": False,
}


def test_to_dict_round_trips() -> None:
    exp = parse_expectation(FULL)
    assert exp.to_dict() == FULL
    again = parse_expectation(exp.to_dict())
    assert again == exp
    assert again.to_dict() == exp.to_dict()


def test_to_dict_round_trips_per_turn_and_turn_scope() -> None:
    data = {
        "match": "strict",
        "turns": [{"calls": [{"name": "a"}]}, {"match": "any-order", "arguments": "ignore",
                                               "calls": [{"name": "b"}]}],
        "allow_extra_turns": True,
    }  # fmt: skip
    exp = parse_expectation(data)
    out = exp.to_dict()
    assert out["turns"][1] == {
        "match": "unordered",
        "arguments": "ignore",
        "calls": [{"name": "b"}],
    }
    assert parse_expectation(out).to_dict() == out
    turn = parse_expectation({"scope": "turn", "turn": -1})
    assert turn.to_dict()["turn"] == -1
    assert parse_expectation(turn.to_dict()) == turn


def test_text_json_and_yaml() -> None:
    yaml_text = """
id: refund-late-order
match: any-order
calls:
  - name: lookup_order
    arguments: {order_id: 42}
  - name: issue_refund
    arguments:
      amount: {$approx: 19.99, $tol: 0.01}
"""
    exp = parse_expectation_text(yaml_text)
    assert exp.match == "unordered"
    assert exp.to_dict()["calls"][1]["arguments"] == {"amount": {"$approx": 19.99, "$tol": 0.01}}
    json_text = '{"id": "x", "calls": [{"name": "a", "arguments": {"p": "\\/"}}]}'
    assert parse_expectation_text(json_text).to_dict()["calls"][0]["arguments"] == {"p": "/"}


def test_text_errors() -> None:
    with pytest.raises(InvalidExpectation) as info:
        parse_expectation_text("calls: [\n  {name: a")
    assert info.value.path == ""
    assert info.value.message.startswith("not valid JSON or YAML (line ")
    with pytest.raises(InvalidExpectation) as info:
        parse_expectation_text("")
    assert str(info.value) == "an expectation must be an object"
    with pytest.raises(InvalidExpectation) as info:
        parse_expectation_text("calls:\n  - name: a\n    arguments: {day: 2024-01-01}\n")
    assert str(info.value) == "calls[0].arguments.day: not a JSON value (date); quote it"
    with pytest.raises(InvalidExpectation) as info:
        parse_expectation_text("id: x\nmatch: nope\n", require_id=True)
    assert info.value.path == "match"


def test_call_without_arguments_and_empty_object() -> None:
    exp = parse_expectation({"calls": [{"name": "a"}, {"name": "b", "arguments": {}}]})
    assert exp.calls is not None
    assert exp.calls[0].arguments is None
    assert exp.to_dict()["calls"] == [{"name": "a"}, {"name": "b", "arguments": {}}]


def test_allow_and_forbid_accept_matching_calls() -> None:
    exp = parse_expectation(
        {"forbid": ["delete_*"], "allow": ["lookup_*", "issue_[rs]efund"],
         "calls": [{"name": "lookup_order"}, {"name": "issue_refund"}]}
    )  # fmt: skip
    assert exp.forbid == ("delete_*",)
    assert exp.allow == ("lookup_*", "issue_[rs]efund")


def test_subset_budget_is_not_a_contradiction() -> None:
    exp = parse_expectation(
        {"match": "within", "max_calls": 1, "calls": [{"name": "a"}, {"name": "b"}]}
    )
    assert exp.max_calls == 1


def test_expectations_compare_by_their_normalised_form() -> None:
    a = parse_expectation({"match": "Any-Order", "calls": [{"name": "x", "weight": 1}]})
    b = parse_expectation({"match": "unordered", "calls": [{"name": "x"}]})
    assert a == b and hash(a) == hash(b)
    assert a != parse_expectation({"match": "strict", "calls": [{"name": "x"}]})
    assert json.loads(json.dumps(a.to_dict())) == a.to_dict()


def test_deep_nesting_is_a_validation_error() -> None:
    deep: Any = 1
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(InvalidExpectation) as info:
        parse_expectation({"calls": [{"name": "a", "arguments": {"x": deep}}]})
    assert str(info.value) == "nested too deeply"
    with pytest.raises(InvalidExpectation):
        parse_expectation_text('{"calls": ' + "[" * 100000 + "]" * 100000 + "}")
