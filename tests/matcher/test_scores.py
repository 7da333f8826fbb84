"""precision / recall / f1 / argument_score / order_score, weights, and micro aggregation."""

from __future__ import annotations

import pytest

from tooltrail.matcher import micro_summary

from .util import call, calls, names, run


def test_precision_recall_f1() -> None:
    r = run(names("a", "b", "c", "d", match="superset"), calls("a", "b", "c", "x", "y"))
    assert (r.precision, r.recall) == (3 / 5, 3 / 4)
    assert r.f1 == pytest.approx(2 * (3 / 5) * (3 / 4) / (3 / 5 + 3 / 4))
    r = run(names("a", match="superset"), [])
    assert (r.precision, r.recall, r.f1) == (1.0, 0.0, 0.0)  # A empty: precision 1
    r = run(names(match="in_order"), calls("a"))
    assert (r.precision, r.recall, r.f1) == (0.0, 1.0, 0.0)  # E empty: recall 1
    r = run(names(match="strict"), [])
    assert (r.precision, r.recall, r.f1) == (1.0, 1.0, 1.0)


def test_pairing_ignores_order_whatever_the_mode() -> None:
    r = run(names("a", "b", match="strict"), calls("b", "a"))
    assert not r.passed
    assert (r.precision, r.recall, r.f1) == (1.0, 1.0, 1.0)
    assert r.order_score == 0.5


def test_passing_subset_can_have_precision_below_one() -> None:
    r = run(names("a", match="subset"), calls("a", "a", "a", "a"))
    assert r.passed
    assert r.precision == 0.25 and r.recall == 1.0


def test_weights_change_recall_never_the_verdict() -> None:
    heavy = names("lookup", {"name": "refund", "weight": 3}, match="superset")
    light = names("lookup", "refund", match="superset")
    r, plain = run(heavy, calls("lookup")), run(light, calls("lookup"))
    assert r.recall == 0.25 and plain.recall == 0.5
    assert r.passed is plain.passed is False
    r = run(heavy, calls("refund"))
    assert r.recall == 0.75
    assert run(heavy, calls("refund", "lookup")).passed


def test_weights_choose_which_expected_call_is_paired() -> None:
    # one actual call can satisfy either expected call: the heavier one gets it
    exp = names({"name": "f", "weight": 1}, {"name": "f", "weight": 5, "arguments": {"x": 1}},
                match="superset")  # fmt: skip
    r = run(exp, [call("f", x=1)])
    assert r.recall == 5 / 6
    assert r.counts.paired_expected_weight == 5.0
    assert r.counts.total_expected_weight == 6.0


def test_argument_score() -> None:
    exp = names(
        {"name": "lookup_order", "arguments": {"order_id": 42}},
        {
            "name": "issue_refund",
            "weight": 3,
            "arguments": {
                "amount": {"$approx": 19.99, "$tol": 0.01},
                "reason": {"$regex": ".*late.*"},
            },
        },
    )
    r = run(
        exp, [call("lookup_order", order_id=42), call("issue_refund", amount=25.0, reason="late")]
    )
    assert r.argument_score == (1 + 3 * 0.5) / 4
    r = run(exp, [call("lookup_order", order_id=42)])
    assert r.argument_score == 1 / 4  # an unpaired expected call scores 0


def test_argument_score_leaves_out_calls_without_listed_keys() -> None:
    exp = names("a", {"name": "b", "arguments": {}}, {"name": "c", "arguments": {"x": 1},
                                                      "arguments_match": "ignore"})  # fmt: skip
    assert run(exp, []).argument_score == 1.0
    exp = names("a", {"name": "b", "arguments": {"x": 1, "y": 2}})
    assert run(exp, [call("b", x=1, y=3)]).argument_score == 0.5


def test_argument_score_is_an_optimal_assignment() -> None:
    """Greedy in row order would pair f(a=1, b=2) with f(a=1) (0.5) and leave f(a=1)
    with f(b=2) (0): 0.25. The optimal assignment scores (0.5 + 1) / 2."""
    exp = names({"name": "f", "arguments": {"a": 1, "b": 2}}, {"name": "f", "arguments": {"a": 1}},
                match="unordered")  # fmt: skip
    r = run(exp, [call("f", a=1), call("f", b=2)])
    assert r.argument_score == 0.75
    assert r.reason == "Call 2 `f`: `a` was missing, expected 1."


def test_argument_score_counts_absent_keys_and_exact_nesting() -> None:
    exp = names({"name": "f", "arguments": {"a": {"x": 1}, "gone": {"$absent": True}}},
                arguments="exact")  # fmt: skip
    assert run(exp, [call("f", a={"x": 1, "y": 2})]).argument_score == 0.5
    assert run(exp, [call("f", a={"x": 1}, gone=1)]).argument_score == 0.5


def test_order_score() -> None:
    assert (
        run(names("a", "b", "c", "d", match="in_order"), calls("b", "a", "c", "d")).order_score
        == 0.75
    )
    assert run(names("a", "b", match="strict"), calls("x", "a", "y", "b")).order_score == 1.0
    assert run(names(match="strict"), calls("a")).order_score == 1.0
    for mode in ("unordered", "superset", "subset"):
        assert run(names("a", match=mode), calls("a")).order_score is None


def test_order_score_uses_compatibility() -> None:
    exp = names({"name": "f", "arguments": {"x": 1}}, {"name": "f", "arguments": {"x": 2}},
                match="in_order")  # fmt: skip
    assert run(exp, [call("f", x=2), call("f", x=1)]).order_score == 0.5
    assert run(exp, [call("f", x=3), call("f", x=3)]).order_score == 0.0


def test_constraint_only_expectations() -> None:
    r = run({"forbid": ["rm"]}, calls("a", "b"))
    assert r.passed
    assert (r.precision, r.recall, r.f1, r.argument_score, r.order_score) == (
        1.0,
        1.0,
        1.0,
        1.0,
        1.0,
    )
    assert r.counts.total_actual == 0  # adds nothing to micro precision
    assert not run({"forbid": ["rm"]}, calls("a", "rm")).passed


def test_result_to_dict_shape() -> None:
    d = run(names("a", "b", match="unordered"), calls("a")).to_dict()
    assert list(d) == ["scope", "passed", "score", "precision", "recall", "f1", "argument_score",
                       "order_score", "reason", "differences", "counts", "pairs"]  # fmt: skip
    assert d["pairs"] == [{"expected_index": 0, "actual_index": 0, "turn": 0}]
    assert d["counts"] == {
        "paired_actual": 1, "total_actual": 1, "paired_expected_weight": 1.0,
        "total_expected_weight": 2.0,
        "tools": {
            "a": {"paired_actual": 1, "total_actual": 1, "paired_expected_weight": 1.0,
                  "total_expected_weight": 1.0},
            "b": {"paired_actual": 0, "total_actual": 0, "paired_expected_weight": 0.0,
                  "total_expected_weight": 1.0},
        },
    }  # fmt: skip
    assert d["score"] == 0.0 and d["order_score"] is None


def test_micro_summary_sums_counts_before_dividing() -> None:
    bad = run(names("a", "b", "c", "d", match="superset"), calls("a"))  # recall 1/4
    good = [run(names(*"abcdefghij", match="superset"), calls(*"abcdefghij")) for _ in range(1)]
    summary = micro_summary([bad, *good])
    assert summary["count"] == 2 and summary["passed"] == 1 and summary["failed"] == 1
    assert summary["pass_rate"] == 0.5
    assert summary["recall"] == 11 / 14  # not the mean of 0.25 and 1.0
    assert summary["precision"] == 1.0
    assert summary["f1"] == pytest.approx(2 * (11 / 14) / (1 + 11 / 14))
    assert summary["tools"]["b"]["recall"] == 0.5
    assert summary["total_expected_weight"] == 14.0


def test_micro_summary_empty() -> None:
    summary = micro_summary([])
    assert summary["count"] == 0
    assert summary["pass_rate"] is None and summary["f1"] is None
    assert summary["tools"] == {}
