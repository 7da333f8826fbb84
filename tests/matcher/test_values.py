"""Value specs: one table per operator, literals by JSON equality, partial and exact objects."""

from __future__ import annotations

from typing import Any

import pytest

from tooltrail.matcher.compiler import compile_spec
from tooltrail.matcher.values import MISSING, json_equal

M = MISSING  # the key is absent


def _matches(spec: Any, value: Any, exact: bool = False) -> bool:
    """Does {"v": value} (or {} for MISSING) match the arguments {"v": spec}?"""
    compiled = compile_spec({"v": spec}, "arguments", exact)
    args = {} if value is MISSING else {"v": value}
    return compiled.matches(args)


LITERALS = [
    (1, 1, True),
    (1, 1.0, True),
    (1.0, 1, True),
    (1.5, 1.5, True),
    (1, 2, False),
    (True, True, True),
    (True, 1, False),
    (1, True, False),
    (False, 0, False),
    (0, False, False),
    ("a", "a", True),
    ("a", "A", False),
    ("1", 1, False),
    (None, None, True),
    (None, 0, False),
    (None, M, False),
    ("a", M, False),
    ([1, 2], [1, 2], True),
    ([1, 2], [2, 1], False),
    ([1, 2], [1, 2, 3], False),
    ([1], (1,), True),
    ([True], [1], False),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),
    ({"a": 1}, {"a": 1, "b": 2}, True),  # partial: nested objects partially
    ({"a": {"b": 1}}, {"a": {"b": 1.0, "c": 0}}, True),
    ({"a": 1}, {"a": True}, False),
    ({}, {"x": 1}, True),
    ({}, {}, True),
    ({}, [], False),
    ({}, "x", False),
    ([{"a": 1}], [{"a": 1, "b": 2}], True),  # lists: same length, element by element
]


@pytest.mark.parametrize(("spec", "value", "ok"), LITERALS)
def test_literals_partial(spec: Any, value: Any, ok: bool) -> None:
    assert _matches(spec, value) is ok


EXACT = [
    ({"a": 1}, {"a": 1}, True),
    ({"a": 1}, {"a": 1, "b": 2}, False),
    ({"a": {"b": 1}}, {"a": {"b": 1, "c": 0}}, False),
    ({"a": {"b": 1}}, {"a": {"b": 1}}, True),
    ([{"a": 1}], [{"a": 1, "b": 2}], False),
    ({}, {}, True),
    ({}, {"x": 1}, False),
    ({"a": 1, "b": {"$absent": True}}, {"a": 1}, True),
    ({"a": 1, "b": {"$absent": True}}, {"a": 1, "b": 2}, False),
    ({"a": {"$any": True}}, {"a": {"deep": [1, {"x": 2}]}}, True),
]


@pytest.mark.parametrize(("spec", "value", "ok"), EXACT)
def test_exact_objects(spec: Any, value: Any, ok: bool) -> None:
    assert _matches(spec, value, exact=True) is ok


def test_exact_key_sets_at_top_level() -> None:
    spec = compile_spec({"a": 1, "gone": {"$absent": True}}, "arguments", True)
    assert spec.matches({"a": 1})
    assert not spec.matches({"a": 1, "b": 2})
    assert not spec.matches({"a": 1, "gone": None})
    assert not spec.matches("a=1")


OPERATORS = [
    # $any: any value, any subtree, but the key must be present
    ({"$any": True}, None, True),
    ({"$any": True}, {"x": [1]}, True),
    ({"$any": True}, M, False),
    # $absent
    ({"$absent": True}, M, True),
    ({"$absent": True}, None, False),
    ({"$absent": True}, 0, False),
    # $in
    ({"$in": [1, "a"]}, 1.0, True),
    ({"$in": [1, "a"]}, "a", True),
    ({"$in": [1, "a"]}, True, False),
    ({"$in": [{"a": 1}]}, {"a": 1}, True),
    ({"$in": [{"a": 1}]}, {"a": 1, "b": 2}, False),
    ({"$in": []}, 1, False),
    # $regex: RE2, full match, strings only
    ({"$regex": "(?i).*late.*"}, "Arrived LATE today", True),
    ({"$regex": "late"}, "too late", False),
    ({"$regex": "a+"}, "aaa", True),
    ({"$regex": "a|ab"}, "ab", True),
    ({"$regex": "\\d+"}, 12, False),
    ({"$regex": "é.*"}, "école", True),
    ({"$regex": "(a+)+$"}, "a" * 5000 + "!", False),
    # $contains
    ({"$contains": "refund"}, "refunded in full", True),
    ({"$contains": "refund"}, "REFUND", False),
    ({"$contains": "a"}, ["b", "a"], True),
    ({"$contains": "a"}, ["ab"], False),
    ({"$contains": {"sku": "A"}}, [{"sku": "A", "n": 2}], True),
    ({"$contains": 1}, [1.0], True),
    ({"$contains": "a"}, {"a": 1}, False),
    ({"$contains": 1}, "1", False),
    ({"$contains": "x"}, 5, False),
    # $approx with $tol / $rel: numbers only, bounds inclusive
    ({"$approx": 19.99, "$tol": 0.01}, 20.0, True),
    ({"$approx": 19.99, "$tol": 0.01}, 19.98, True),
    ({"$approx": 19.99, "$tol": 0.01}, 20.01, False),
    ({"$approx": 19.99, "$tol": 0.01}, 25.0, False),
    ({"$approx": 100, "$rel": 0.05}, 105, True),
    ({"$approx": 100, "$rel": 0.05}, 105.5, False),
    ({"$approx": -100, "$rel": 0.05}, -95, True),
    ({"$approx": 100, "$tol": 1, "$rel": 0.1}, 109, True),  # either suffices
    ({"$approx": 100, "$tol": 20, "$rel": 0.01}, 119, True),
    ({"$approx": 1}, 1.0, True),
    ({"$approx": 1}, 1.0001, False),  # neither: equality
    ({"$approx": 1, "$tol": 0.5}, True, False),
    ({"$approx": 1, "$tol": 0.5}, "1", False),
    # comparisons (combinable)
    ({"$gt": 1}, 2, True),
    ({"$gt": 1}, 1, False),
    ({"$gte": 1}, 1, True),
    ({"$lt": 1}, 0.5, True),
    ({"$lte": 1}, 1.0, True),
    ({"$gte": 1, "$lt": 10}, 10, False),
    ({"$gte": 1, "$lt": 10}, 9.9, True),
    ({"$gt": 0}, True, False),
    ({"$gt": 0}, "5", False),
    # $type
    ({"$type": "string"}, "", True),
    ({"$type": "string"}, 1, False),
    ({"$type": "number"}, 1.5, True),
    ({"$type": "number"}, True, False),
    ({"$type": "integer"}, 2.0, True),
    ({"$type": "integer"}, 2.5, False),
    ({"$type": "integer"}, False, False),
    ({"$type": "boolean"}, False, True),
    ({"$type": "boolean"}, 0, False),
    ({"$type": "object"}, {}, True),
    ({"$type": "object"}, [], False),
    ({"$type": "array"}, [], True),
    ({"$type": "null"}, None, True),
    ({"$type": "null"}, M, False),
    # $norm: BFCL folding
    ({"$norm": "New York"}, "new york", True),
    ({"$norm": "New York"}, "NEW-YORK.", True),
    ({"$norm": "New York"}, "newyork", True),
    ({"$norm": "St. Louis, MO"}, "st louis mo", True),
    ({"$norm": "ÉCOLE"}, "école", True),
    ({"$norm": "New York"}, "New Jersey", False),
    ({"$norm": "1"}, 1, False),
    # $unordered: one-to-one in some order
    ({"$unordered": [1, 2, 2]}, [2, 1, 2], True),
    ({"$unordered": [1, 2, 2]}, [2, 1, 1], False),
    ({"$unordered": [{"a": 1}, {"a": 1, "b": 2}]}, [{"a": 1, "b": 2}, {"a": 1}], True),
    ({"$unordered": [{"$type": "string"}, "x"]}, ["x", "y"], True),  # greedy would fail
    ({"$unordered": [1]}, [1, 1], False),
    ({"$unordered": []}, [], True),
    ({"$unordered": [1]}, 1, False),
    # $not, $all
    ({"$not": {"$regex": "x.*"}}, "yes", True),
    ({"$not": {"$regex": "x.*"}}, "xyz", False),
    ({"$not": 1}, 2, True),
    ({"$not": {"$in": [1, 2]}}, 3, True),
    ({"$all": [{"$type": "string"}, {"$regex": "a.*"}]}, "abc", True),
    ({"$all": [{"$type": "string"}, {"$regex": "a.*"}]}, "bc", False),
    # $literal: the value itself, even with $ keys
    ({"$literal": {"$ref": "x"}}, {"$ref": "x"}, True),
    ({"$literal": {"$ref": "x"}}, {"$ref": "y"}, False),
    ({"$literal": {"a": 1}}, {"a": 1, "b": 2}, False),
    ({"$literal": 1}, 1.0, True),
    # several operators are ANDed
    ({"$type": "string", "$regex": "a.*"}, "ab", True),
    ({"$type": "string", "$regex": "a.*"}, "b", False),
]


@pytest.mark.parametrize(("spec", "value", "ok"), OPERATORS)
def test_operators(spec: Any, value: Any, ok: bool) -> None:
    assert _matches(spec, value) is ok


def test_operator_in_nested_partial_and_exact() -> None:
    spec = {"addr": {"city": {"$norm": "New York"}}}
    assert _matches(spec, {"addr": {"city": "new york", "zip": "10001"}})
    assert not _matches(spec, {"addr": {"city": "new york", "zip": "10001"}}, exact=True)
    assert _matches(spec, {"addr": {"city": "NEW YORK"}}, exact=True)


def test_operators_at_top_of_arguments() -> None:
    # arguments that did not decode to an object stay a string; an operator can match it
    spec = compile_spec({"$regex": "city=.*"}, "arguments", False)
    assert spec.matches("city=Paris")
    assert not spec.matches({"city": "Paris"})


def test_json_equal() -> None:
    assert json_equal({"a": [1, {"b": 2.0}]}, {"a": [1.0, {"b": 2}]})
    assert not json_equal({"a": True}, {"a": 1})
    assert not json_equal([1, 2], [1])
    assert not json_equal({"a": 1}, {"b": 1})
    assert json_equal(None, None) and not json_equal(None, False)


DESCRIPTIONS = [
    ({"$approx": 19.99, "$tol": 0.01}, "≈19.99 ±0.01"),
    ({"$approx": 100, "$rel": 0.05}, "≈100 ±5%"),
    ({"$approx": 100, "$tol": 1, "$rel": 0.1}, "≈100 ±1 or ±10%"),
    ({"$approx": 3}, "3"),
    ({"$regex": "(?i).*late.*"}, "a string matching /(?i).*late.*/"),
    ({"$in": ["a", 1]}, 'one of ["a", 1]'),
    ({"$contains": "refunded"}, 'something containing "refunded"'),
    ({"$contains": {"sku": "A"}}, 'a list containing {"sku": "A"}'),
    ({"$gte": 1, "$lt": 10}, "≥ 1 and < 10"),
    ({"$type": "integer"}, "an integer"),
    ({"$norm": "New York"}, '"New York" (ignoring case, spaces and punctuation)'),
    ({"$unordered": [1, 2]}, "[1, 2] in any order"),
    ({"$not": {"$type": "null"}}, "not null"),
    ({"$all": [{"$type": "string"}, {"$regex": "a"}]}, "a string and a string matching /a/"),
    ({"$literal": {"$x": 1}}, '{"$x": 1}'),
    ({"$any": True}, "any value"),
    ("x", '"x"'),
    ([1, {"a": True}], '[1, {"a": true}]'),
]


@pytest.mark.parametrize(("spec", "text"), DESCRIPTIONS)
def test_descriptions(spec: Any, text: str) -> None:
    assert compile_spec(spec, "x", False).describe() == text
