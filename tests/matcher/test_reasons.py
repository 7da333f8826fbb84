"""Every failure kind has its sentence; the reason is the first difference in priority order."""

from __future__ import annotations

from typing import Any

import pytest

from tooltrail.matcher import Call, Trajectory

from .util import call, calls, names, run

REFUND = {
    "name": "issue_refund",
    "arguments": {"amount": {"$approx": 19.99, "$tol": 0.01}, "reason": {"$regex": "(?i).*late.*"}},
}

CASES: list[tuple[str, dict[str, Any], list[Call] | Trajectory, str]] = [
    (
        "missing",
        names("lookup_order", "issue_refund"),
        calls("issue_refund"),
        "Expected `lookup_order`; it was never called.",
    ),
    (
        "missing",
        names("a", "a", match="superset"),
        calls("a"),
        "Expected `a` 2 times; it was called 1 time.",
    ),
    (
        "argument",
        names("lookup_order", REFUND),
        [call("lookup_order"), call("issue_refund", amount=25.0, reason="late")],
        "Call 2 `issue_refund`: `amount` was 25.0, expected ≈19.99 ±0.01.",
    ),
    (
        "argument",
        names(REFUND),
        [call("issue_refund", amount=19.99, reason="lost")],
        'Call 1 `issue_refund`: `reason` was "lost", expected a string matching /(?i).*late.*/.',
    ),
    (
        "argument",
        names({"name": "f", "arguments": {"amount": 3}}),
        [call("f", total=3)],
        "Call 1 `f`: `amount` was missing, expected 3.",
    ),
    (
        "argument",
        names({"name": "f", "arguments": {"a": 1}}, arguments="exact"),
        [call("f", a=1, note="x")],
        'Call 1 `f`: `note` was "x", expected it to be absent.',
    ),
    (
        "argument",
        names({"name": "f", "arguments": {"note": {"$absent": True}}}),
        [call("f", note=None)],
        "Call 1 `f`: `note` was null, expected it to be absent.",
    ),
    (
        "argument",
        names({"name": "f", "arguments": {"address": {"city": "London"}}}),
        [call("f", address={"city": "Paris"})],
        'Call 1 `f`: `address.city` was "Paris", expected "London".',
    ),
    (
        "argument",
        names({"name": "f", "arguments": {"items": [{"sku": "A"}, {"sku": "B"}]}}),
        [call("f", items=[{"sku": "A"}, {"sku": "C"}])],
        'Call 1 `f`: `items[1].sku` was "C", expected "B".',
    ),
    (
        "argument",
        names({"name": "f", "arguments": {"a.b": 2}}),
        [Call("f", {"a.b": 1})],
        'Call 1 `f`: `["a.b"]` was 1, expected 2.',
    ),
    (
        "argument",
        names({"name": "f", "arguments": {"flag": True}}),
        [call("f", flag=1)],
        "Call 1 `f`: `flag` was 1, expected true.",
    ),
    (
        "argument",
        names({"name": "f", "arguments": {"city": "Paris"}}),
        [Call("f", "Paris")],
        'Call 1 `f`: the arguments were "Paris", expected an object.',
    ),
    (
        "result",
        names({"name": "refund", "result": {"$contains": "refunded"}}),
        [call("refund", result="declined")],
        'Call 1 `refund`: the result was "declined", expected something containing "refunded".',
    ),
    (
        "result",
        names({"name": "f", "result": {"status": "closed"}}),
        [call("f", result={"status": "open"})],
        'Call 1 `f`: result `status` was "open", expected "closed".',
    ),
    (
        "error",
        names({"name": "refund", "error": False}),
        [call("refund", error="card declined")],
        'Call 1 `refund` failed ("card declined"), expected it to succeed.',
    ),
    (
        "error",
        names({"name": "refund", "error": False}),
        [call("refund", error=True)],
        "Call 1 `refund` failed, expected it to succeed.",
    ),
    (
        "error",
        names({"name": "f", "error": True}),
        [call("f")],
        "Call 1 `f` succeeded, expected it to fail.",
    ),
    (
        "error",
        names({"name": "f", "error": {"$regex": "time.*"}}),
        [call("f")],
        "Call 1 `f` succeeded, expected it to fail with a string matching /time.*/.",
    ),
    (
        "error",
        names({"name": "f", "error": {"$regex": "time.*"}}),
        [call("f", error="denied")],
        'Call 1 `f`: the error was "denied", expected a string matching /time.*/.',
    ),
    (
        "order",
        names("a", "b"),
        calls("b", "a"),
        "Expected `b` after `a` (call 2); it was called before it, at call 1.",
    ),
    (
        "order",
        names("a", "b", "c", match="strict"),
        calls("a", "c", "b"),
        "Expected `c` after `b` (call 3); it was called before it, at call 2.",
    ),
    (
        "order",
        names("a", "b", "c"),
        calls("b", "c", "a"),
        "Expected `a` before `b` (call 1); it was called after it, at call 3.",
    ),
    ("unexpected", names("a", match="unordered"), calls("a", "x"), "Call 2 `x` was not expected."),
    ("unexpected", names("a", match="strict"), calls("a", "a"), "Call 2 `a` was not expected."),
    (
        "unexpected",
        names("search", match="subset"),
        calls("search", "delete"),
        "Call 2 `delete` was not expected.",
    ),
    (
        "unexpected",
        names({"name": "search", "arguments": {"q": "cats"}}, match="subset"),
        [call("search", q="dogs")],
        'Call 1 `search` was not expected: `q` was "dogs", expected "cats".',
    ),
    (
        "unexpected",
        names({"name": "f", "error": False}, match="within"),
        [call("f", error="x")],
        'Call 1 `f` was not expected: it failed ("x"), expected it to succeed.',
    ),
    (
        "forbidden",
        names("lookup", forbid=["delete_*"]),
        calls("lookup", "a", "b", "delete_account"),
        "`delete_account` is forbidden but was called (call 4).",
    ),
    (
        "not_allowed",
        {"allow": ["lookup_*"]},
        calls("lookup_order", "refund"),
        "`refund` is not an allowed tool but was called (call 2).",
    ),
    (
        "not_allowed",
        {"allow": []},
        calls("a"),
        "`a` is not an allowed tool but was called (call 1).",
    ),
    (
        "error",
        {"require_no_errors": True},
        [call("a"), call("lookup_order", error="order not found")],
        'Call 2 `lookup_order` failed: "order not found".',
    ),
    ("error", {"require_no_errors": True}, [call("f", error=True)], "Call 1 `f` failed."),
    (
        "budget",
        {"max_calls": 2},
        calls("a", "b", "c"),
        "Expected at most 2 tool calls; there were 3.",
    ),
    ("budget", {"min_calls": 1}, [], "Expected at least 1 tool call; there were 0."),
    ("budget", {"min_calls": 3}, calls("a"), "Expected at least 3 tool calls; there was 1."),
    (
        "turn_missing",
        {"turns": [{"calls": []}, {"calls": []}, {"calls": []}]},
        Trajectory([[], []]),
        "Turn 3 is missing; there were 2 turns.",
    ),
    (
        "turn_missing",
        {"scope": "turn", "turn": -1},
        Trajectory([]),
        "The last turn is missing; there were no turns.",
    ),
    (
        "turn_missing",
        {"scope": "turn", "turn": 1},
        Trajectory([[]]),
        "Turn 2 is missing; there was 1 turn.",
    ),
    (
        "turn_missing",
        {"scope": "turn", "turn": -3},
        Trajectory([[], []]),
        "Turn 3 from the end is missing; there were 2 turns.",
    ),
    (
        "turn_extra",
        {"turns": [{"calls": []}, {"calls": []}]},
        Trajectory([[], [], []]),
        "Turn 3 was not expected; expected 2 turns.",
    ),
    (
        "missing",
        {"turns": [{"calls": [{"name": "a"}]}, {"calls": [{"name": "b"}]}]},
        Trajectory([[call("a")], [call("c")]]),
        "In turn 2, expected `b`; it was never called.",
    ),
    (
        "argument",
        {"turns": [{"calls": []}, {"calls": [{"name": "b", "arguments": {"x": 1}}]}]},
        Trajectory([[], [call("b", x=2)]]),
        "In turn 2, call 1 `b`: `x` was 2, expected 1.",
    ),
    (
        "forbidden",
        {"forbid": ["rm"], "turns": [{"calls": []}, {"calls": []}]},
        Trajectory([[call("a")], [call("b"), call("rm")]]),
        "In turn 2, `rm` is forbidden but was called (call 2).",
    ),
]


@pytest.mark.parametrize(("kind", "expectation", "actual", "reason"), CASES)
def test_reason_sentence(
    kind: str, expectation: dict[str, Any], actual: list[Call] | Trajectory, reason: str
) -> None:
    result = run(expectation, actual)
    assert not result.passed
    assert result.reason == reason
    first = result.differences[0]
    assert first.kind == kind
    assert first.message == reason


def test_count_difference() -> None:
    result = run(names("a", "b", match="strict"), calls("a", "b", "c"))
    assert [d.kind for d in result.differences] == ["unexpected", "count"]
    count = result.differences[1]
    assert count.message == "Expected 2 calls; there were 3."
    assert (count.expected, count.actual, count.path) == (2, 3, "calls")
    result = run(names("a", "b", match="unordered"), calls("a"))
    assert [d.message for d in result.differences] == [
        "Expected `b`; it was never called.",
        "Expected 2 calls; there was 1.",
    ]


def test_priority_order() -> None:
    exp = {
        "match": "strict",
        "calls": [{"name": "a"}, {"name": "b"}],
        "forbid": ["rm*"],
        "allow": ["a", "b", "rm*"],
        "max_calls": 3,
        "require_no_errors": True,
    }
    result = run(exp, [call("x"), call("a", error="bad"), call("rm"), call("zz")])
    assert [d.kind for d in result.differences] == [
        "forbidden", "not_allowed", "not_allowed", "error", "budget", "missing", "unexpected",
        "unexpected", "unexpected", "count",
    ]  # fmt: skip
    assert result.reason == "`rm` is forbidden but was called (call 3)."
    # mode differences: by expected index, then by actual position
    result = run(names("a", "b", "c", match="unordered"), calls("z", "c", "y"))
    assert [d.message for d in result.differences] == [
        "Expected `a`; it was never called.",
        "Expected `b`; it was never called.",
        "Call 1 `z` was not expected.",
        "Call 3 `y` was not expected.",
    ]


def test_argument_difference_names_the_argument_of_the_closest_call() -> None:
    """Leftover calls of the same name are paired by argument agreement."""
    exp = names(
        {"name": "f", "arguments": {"city": "Paris", "day": "mon", "unit": "C"}},
        {"name": "f", "arguments": {"city": "Rome", "day": "tue", "unit": "C"}},
        match="unordered",
    )
    result = run(exp, [call("f", city="Rome", day="tue", unit="F"),
                       call("f", city="Paris", day="sun", unit="C")])  # fmt: skip
    assert [d.message for d in result.differences] == [
        'Call 2 `f`: `day` was "sun", expected "mon".',
        'Call 1 `f`: `unit` was "F", expected "C".',
    ]


def test_structured_fields() -> None:
    result = run(
        names("lookup_order", REFUND),
        [call("lookup_order"), call("issue_refund", amount=25.0, reason="late")],
    )
    d = result.differences[0].to_dict()
    assert d == {
        "kind": "argument",
        "expected_index": 1,
        "actual_index": 1,
        "turn": 0,
        "path": "calls[1].arguments.amount",
        "expected": {"$approx": 19.99, "$tol": 0.01},
        "actual": 25.0,
        "message": "Call 2 `issue_refund`: `amount` was 25.0, expected ≈19.99 ±0.01.",
    }
    missing = run(names("lookup_order", "issue_refund"), calls("lookup_order"))
    assert missing.to_dict()["differences"] == [
        {"kind": "missing", "expected_index": 1, "actual_index": None, "turn": None,
         "path": "calls[1]", "expected": {"name": "issue_refund"}, "actual": None,
         "message": "Expected `issue_refund`; it was never called."}
    ]  # fmt: skip


def test_differences_carry_the_turn_of_the_call() -> None:
    traj = Trajectory([[call("a")], [call("x"), call("rm")]])
    result = run(names("a", match="unordered", forbid=["rm"]), traj)
    assert [(d.kind, d.actual_index, d.turn) for d in result.differences] == [
        ("forbidden", 2, 1), ("unexpected", 1, 1), ("unexpected", 2, 1), ("count", None, None),
    ]  # fmt: skip


def test_new_difference_is_the_dataclass() -> None:
    from tooltrail.matcher.result import Difference, new_difference

    fields = ("argument", "msg", 1, 2, 0, "calls[1]", {"a": 1}, [1])
    made = new_difference(*fields)
    plain = Difference(*fields)
    assert made == plain and repr(made) == repr(plain) and hash(made.path) == hash(plain.path)
    assert made.to_dict() == plain.to_dict() and vars(made) == vars(plain)


def test_results_are_plain_dataclasses() -> None:
    import dataclasses

    from tooltrail.matcher import Call, Trajectory, parse_expectation, score

    exp = parse_expectation({"match": "strict", "calls": [{"name": "a", "arguments": {"x": 1}}]})
    for made in ([Call("a", {"x": 1})], [Call("a", {"x": 2}), Call("b", {})]):
        r = score(exp, Trajectory.from_calls(made))[0]
        fields = {f.name: getattr(r, f.name) for f in dataclasses.fields(r)}
        assert type(r)(**fields) == r and vars(type(r)(**fields)) == vars(r)
        c = r.counts
        again = type(c)(**{f.name: getattr(c, f.name) for f in dataclasses.fields(c)})
        assert again == c and vars(again) == vars(c) and repr(again) == repr(c)


def test_difference_paths_join_like_field_paths() -> None:
    """`explain._join` continues a field path from the relative path already shown in
    the sentence; it must equal appending each part in turn."""
    import random

    from tooltrail.matcher.explain import _at, _join
    from tooltrail.matcher.types import index_path, key_path

    def appended(base: str, path: tuple[str | int, ...]) -> str:
        for part in path:
            base = index_path(base, part) if isinstance(part, int) else key_path(base, part)
        return base

    rng = random.Random(0)
    keys = ["a", "", "a b", "[x", "$x", "a-b", "é", "1a", 'q"', "x.y", "_"]
    for _ in range(3000):
        path = tuple(
            rng.choice(keys) if rng.random() < 0.7 else rng.randrange(3)
            for _ in range(rng.randrange(4))
        )
        base = rng.choice(["calls[0].arguments", "turns[1].calls[2].result"])
        assert _join(base, _at(path)) == appended(base, path), (base, path)
