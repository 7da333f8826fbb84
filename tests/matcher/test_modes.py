"""Order modes: one example table for all five modes, steps, and the cases where we
deliberately differ from ArkSim, Rhesis, agentevals and BFCL-style matchers."""

from __future__ import annotations

import pytest

from tooltrail.matcher import Trajectory

from .util import call, calls, names, run

MODES = ("strict", "in_order", "unordered", "superset", "subset")

# expected names, actual names, verdict per mode (strict, in_order, unordered, superset, subset)
TABLE = [
    ("ab", "ab", "TTTTT"),
    ("ab", "ba", "FFTTT"),
    ("ab", "axb", "FTFTF"),
    ("ab", "abx", "FTFTF"),
    ("ab", "a", "FFFFT"),
    ("ab", "", "FFFFT"),
    ("", "", "TTTTT"),
    ("", "a", "FTFTF"),  # empty E: strict, unordered and subset require A empty
    ("a", "aa", "FTFTT"),
    ("aa", "a", "FFFFT"),
    ("aba", "aab", "FFTTT"),
    ("ab", "xy", "FFFFF"),
    ("abc", "cab", "FFTTT"),
    ("abc", "xaybzc", "FTFTF"),
    ("aab", "abab", "FTFTT"),
]


@pytest.mark.parametrize(("expected", "actual", "verdicts"), TABLE)
def test_mode_table(expected: str, actual: str, verdicts: str) -> None:
    for mode, verdict in zip(MODES, verdicts, strict=True):
        result = run(names(*expected, match=mode), calls(*actual))
        assert result.passed is (verdict == "T"), (mode, expected, actual, result.reason)
        assert result.score == (1.0 if result.passed else 0.0)
        assert (result.reason == "") is result.passed
        assert (result.differences == ()) is result.passed


ARGS_TABLE = [
    # (expected arguments, actual arguments, partial, exact, ignore)
    ({"order_id": 42}, {"order_id": 42}, True, True, True),
    ({"order_id": 42}, {"order_id": 42.0}, True, True, True),
    ({"order_id": 42}, {"order_id": 42, "verbose": True}, True, False, True),
    ({"order_id": 42}, {"order_id": "42"}, False, False, True),
    ({"order_id": 42}, {}, False, False, True),
    ({"flag": True}, {"flag": 1}, False, False, True),
    ({}, {"x": 1}, True, False, True),
    ({"a": {"b": 1}}, {"a": {"b": 1, "c": 2}}, True, False, True),
    ({"a": [1, 2]}, {"a": [1, 2, 3]}, False, False, True),
    (None, {"anything": [1]}, True, True, True),  # no `arguments`: any arguments
]


@pytest.mark.parametrize(("spec", "actual", "partial", "exact", "ignore"), ARGS_TABLE)
def test_argument_modes(
    spec: dict[str, object] | None, actual: dict[str, object], partial: bool, exact: bool,
    ignore: bool,
) -> None:  # fmt: skip
    expected = {"name": "f"} if spec is None else {"name": "f", "arguments": spec}
    for mode, verdict in (("partial", partial), ("exact", exact), ("ignore", ignore)):
        result = run(names(expected, arguments=mode), [call("f", **actual)])
        assert result.passed is verdict, (mode, result.reason)


def test_arguments_match_overrides_the_default() -> None:
    exp = names(
        {"name": "f", "arguments": {"a": 1}, "arguments_match": "exact"},
        {"name": "g", "arguments": {"a": 1}},
        arguments="partial",
    )
    assert run(exp, [call("f", a=1), call("g", a=1, b=2)]).passed
    assert not run(exp, [call("f", a=1, b=2), call("g", a=1)]).passed


def test_name_match_is_exact_and_case_sensitive() -> None:
    assert not run(names("Lookup"), calls("lookup")).passed
    assert not run(names("lookup"), calls("lookup_order")).passed


def test_error_and_result_specs_take_part_in_compatibility() -> None:
    exp = names({"name": "refund", "error": False, "result": {"$contains": "refunded"}})
    assert run(exp, [call("refund", result="refunded 19.99")]).passed
    assert not run(exp, [call("refund", result="refunded", error="boom")]).passed
    assert not run(exp, [call("refund", result="declined")]).passed
    assert run(names({"name": "f", "error": True}), [call("f", error=True)]).passed
    assert not run(names({"name": "f", "error": True}), [call("f", error="")]).passed
    assert run(
        names({"name": "f", "error": {"$regex": "time.*"}}), [call("f", error="timeout")]
    ).passed
    assert not run(names({"name": "f", "error": {"$regex": "time.*"}}), [call("f")]).passed
    # result specs are partial, whatever the arguments mode
    exp = names({"name": "f", "result": {"status": "ok"}}, arguments="exact")
    assert run(exp, [call("f", result={"status": "ok", "id": 3})]).passed


def test_ignore_skips_arguments_only() -> None:
    exp = names({"name": "f", "arguments": {"a": 1}, "error": False}, arguments="ignore")
    assert run(exp, [call("f", a=2)]).passed
    assert not run(exp, [call("f", a=1, error="boom")]).passed


# --- steps: parallel calls may be reordered within a step, never across ----------------


def test_strict_reorders_within_a_step() -> None:
    exp = names("a", "b", "c", match="strict")
    assert run(exp, [call("b", step=1), call("a", step=1), call("c", step=2)]).passed
    assert run(exp, [call("a", step=1), call("c", step=2), call("b", step=2)]).passed
    assert not run(exp, [call("b", step=1), call("a", step=2), call("c", step=3)]).passed
    assert not run(exp, [call("b"), call("a"), call("c")]).passed  # no step: each its own


def test_in_order_reorders_within_a_step() -> None:
    exp = names("a", "b", match="in_order")
    assert run(exp, [call("x", step=0), call("b", step=0), call("a", step=0)]).passed
    assert run(exp, [call("b", step=0), call("a", step=0), call("x", step=1)]).passed
    assert not run(exp, [call("b", step=0), call("a", step=1)]).passed
    three = names("a", "b", "c", "d", match="in_order")
    parallel = [call("a", step=0), call("c", step=1), call("x", step=1), call("b", step=1),
                call("d", step=2)]  # fmt: skip
    assert run(three, parallel).passed
    result = run(
        three, [call("c", step=1), call("a", step=1), call("d", step=2), call("b", step=3)]
    )
    assert not result.passed
    assert result.order_score == 0.75


def test_steps_never_span_turns() -> None:
    exp = names("a", "b", match="strict")
    traj = Trajectory([[call("b", step=0)], [call("a", step=0)]])
    assert not run(exp, traj).passed
    assert run(exp, Trajectory([[call("a", step=0)], [call("b", step=0)]])).passed


def test_a_step_chooses_the_best_expected_calls() -> None:
    # the step {f(x=2), f(x=1)} must pair f(x=1) first and f(x=2) second
    exp = names({"name": "f", "arguments": {"x": 1}}, {"name": "f", "arguments": {"x": 2}},
                {"name": "f", "arguments": {"x": 3}}, match="strict")  # fmt: skip
    actual = [call("f", x=2, step=0), call("f", x=1, step=0), call("f", x=3, step=1)]
    assert run(exp, actual).passed


# --- deliberate differences from the seed systems ---------------------------------------


def test_greedy_false_negative_superset_arguments() -> None:
    """agentevals, ArkSim and BFCL pair first-fit: f(a=1) grabs f(a=1, b=2) and
    f(b=2) is left with nothing. A maximum matching pairs both."""
    expected = [{"name": "f", "arguments": {"a": 1}}, {"name": "f", "arguments": {"b": 2}}]
    actual = [call("f", a=1, b=2), call("f", a=1)]
    for mode in ("unordered", "superset", "subset"):
        result = run(names(*expected, match=mode), actual)
        assert result.passed, (mode, result.reason)
        assert (result.precision, result.recall, result.f1) == (1.0, 1.0, 1.0)


def test_greedy_false_negative_with_an_open_expected_call() -> None:
    expected = [{"name": "search"}, {"name": "search", "arguments": {"q": "cats"}}]
    result = run(
        names(*expected, match="unordered"), [call("search", q="cats"), call("search", q="dogs")]
    )
    assert result.passed


def test_booleans_are_not_numbers() -> None:
    """Python (and so BFCL-style checkers) says True == 1; JSON does not."""
    assert not run(names({"name": "f", "arguments": {"flag": True}}), [call("f", flag=1)]).passed
    assert not run(names({"name": "f", "arguments": {"n": 1}}), [call("f", n=True)]).passed
    assert not run(names({"name": "f", "arguments": {"n": 0}}), [call("f", n=False)]).passed
    assert run(names({"name": "f", "arguments": {"n": 1}}), [call("f", n=1.0)]).passed


@pytest.mark.parametrize("mode", ["strict", "unordered", "superset"])
def test_booleans_are_not_numbers_among_many_calls_of_a_tool(mode: str) -> None:
    """With more than a few calls of one tool, candidates are looked up by value first,
    where True == 1 and hash(True) == hash(1): that lookup must not decide."""
    ids: list[object] = [True, 1, "1", [1], {"a": 1}, 1.0, False, 0, None]
    actual = [call("f", id=i) for i in ids]
    literals: list[object] = [1, True, 0, False, None, "1", 1.0]
    expected = names(*({"name": "f", "arguments": {"id": v}} for v in literals),
                     match=mode)  # fmt: skip
    r = run(expected, actual)
    # 1 and 1.0 pair with the two numbers equal to 1; true, 0, false, null and "1"
    # with one call each; [1] and {"a": 1} are left over.
    assert r.paired_actual == 7
    assert r.passed is (mode == "superset")


def test_three_of_four_calls_is_recall_075_not_zero() -> None:
    result = run(names("a", "b", "c", "d", match="strict"), calls("a", "b", "c"))
    assert not result.passed
    assert result.recall == 0.75
    assert result.precision == 1.0
    assert result.f1 == pytest.approx(2 * 0.75 / 1.75)
    assert result.order_score == 0.75
    assert result.reason == "Expected `d`; it was never called."


def test_parallel_calls_in_either_order_score_the_same() -> None:
    exp = names("get_weather", "get_time", "summarise", match="strict")
    one = run(
        exp, [call("get_weather", step=0), call("get_time", step=0), call("summarise", step=1)]
    )
    two = run(
        exp, [call("get_time", step=0), call("get_weather", step=0), call("summarise", step=1)]
    )
    assert one.passed and two.passed
    first, second = one.to_dict(), two.to_dict()
    # everything but the pairing, which names positions: each expected call is paired with
    # the call of its name wherever the step put it
    assert first.pop("pairs") == [
        {"expected_index": j, "actual_index": j, "turn": 0} for j in range(3)
    ]
    assert second.pop("pairs") == [
        {"expected_index": 0, "actual_index": 1, "turn": 0},
        {"expected_index": 1, "actual_index": 0, "turn": 0},
        {"expected_index": 2, "actual_index": 2, "turn": 0},
    ]
    assert first == second


def test_rhesis_empty_list_differs() -> None:
    """Rhesis: "An empty list expects no tool calls at all" (under its in_order default).
    docs/matching.md: empty E passes `in_order` and `superset`; use strict (or max_calls: 0)."""
    assert run({"calls": []}, calls("a")).passed
    assert not run({"calls": [], "match": "strict"}, calls("a")).passed
    assert not run({"calls": [], "max_calls": 0}, calls("a")).passed
    assert run({"calls": [], "match": "strict"}, []).passed


# --- published examples we agree with ----------------------------------------------------


def test_rhesis_local_example() -> None:
    result = run(
        {"match": "in_order", "arguments": "partial",
         "calls": [{"name": "lookup_order"}, {"name": "issue_refund"}]},
        [call("lookup_order", order_id=42), call("issue_refund", order_id=42)],
    )  # fmt: skip
    assert result.passed and result.score == 1.0
    assert (result.precision, result.recall) == (1.0, 1.0)


def test_rhesis_first_difference_sentence() -> None:
    exp = {
        "calls": [{"name": "lookup_order", "arguments": {"order_id": 42}}, {"name": "issue_refund"}]
    }
    result = run(exp, [call("issue_refund", order_id=42)])
    assert result.reason == "Expected `lookup_order`; it was never called."
    assert result.score == 0.0
    assert (result.precision, result.recall) == (1.0, 0.5)


ARKSIM_SCENARIOS = [
    ("contains", ["send_verification_code", "verify_customer", "get_order"],
     ["lookup_customer", "send_verification_code", "verify_customer", "get_order"], True),
    ("within", ["search_products"], ["search_products", "search_products"], True),
    ("within", ["search_products"], ["search_products", "cancel_order"], False),
    ("strict", ["send_verification_code", "verify_customer", "get_order", "cancel_order"],
     ["send_verification_code", "verify_customer", "get_order", "cancel_order"], True),
    ("strict", ["send_verification_code", "verify_customer", "get_order", "cancel_order"],
     ["verify_customer", "send_verification_code", "get_order", "cancel_order"], False),
    ("unordered", ["send_verification_code", "verify_customer", "get_order"],
     ["get_order", "send_verification_code", "verify_customer"], True),
    ("within", ["send_verification_code", "verify_customer", "lookup_customer"],
     ["lookup_customer"], True),
]  # fmt: skip


@pytest.mark.parametrize(("mode", "expected", "actual", "ok"), ARKSIM_SCENARIOS)
def test_arksim_customer_service_scenarios(
    mode: str, expected: list[str], actual: list[str], ok: bool
) -> None:
    assert run(names(*expected, match=mode), calls(*actual)).passed is ok


def test_agentevals_weather_suite() -> None:
    """seed 004: superset catches the agent that answered from memory; subset alone
    cannot (the empty set is a subset of everything); only an argument check catches
    Paris for London."""
    tool = "get-weather-by-city_get-weather-by-city"
    grounded = [call(tool, city="London")]
    ungrounded: list = []
    wrong_city = [call(tool, city="Paris")]
    superset = names(tool, match="superset")
    subset = names(tool, match="subset")
    strict = names({"name": tool, "arguments": {"city": "London"}}, match="strict")
    assert [run(e, grounded).passed for e in (superset, subset, strict)] == [True, True, True]
    assert [run(e, ungrounded).passed for e in (superset, subset, strict)] == [False, True, False]
    assert [run(e, wrong_city).passed for e in (superset, subset, strict)] == [True, True, False]
    # tooltrail's fix for the allowlist: bound it from below too
    assert not run({**subset, "min_calls": 1}, ungrounded).passed


def test_bfcl_style_examples() -> None:
    gold = names({"name": "search", "arguments": {"q": "cats"}},
                 {"name": "answer", "arguments": {"a": "meow"}}, match="unordered")  # fmt: skip
    assert run(gold, [call("search", q="cats"), call("answer", a="meow")]).f1 == 1.0
    hallucinated = run(gold, [call("search", q="cats"), call("delete_all")])
    assert round(hallucinated.f1, 3) == 0.5  # 1 TP, 1 FP, 1 FN
    pairs = names({"name": "s", "arguments": {"q": "a"}}, {"name": "s", "arguments": {"q": "b"}},
                  match="unordered")  # fmt: skip
    assert run(pairs, [call("s", q="b"), call("s", q="a")]).passed
    folded = names({"name": "weather", "arguments": {"city": {"$norm": "New York"}}})
    assert run(folded, [call("weather", city="new york")]).passed
