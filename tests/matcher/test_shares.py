"""The argument_score shortcut: when its certificate holds it equals the full assignment."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from matcher import Call, parse_expectation
from matcher.assign import max_matching
from matcher.shares import Shares, certified_total, small_total

values = st.sampled_from([0, 1, "p", "q"])
args = st.fixed_dictionaries({"x": values, "y": values})
specs = values | st.sampled_from([{"$regex": "p|q"}, {"$in": [0, "q"]}, {"$absent": True}])


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    expected=st.lists(
        st.tuples(st.dictionaries(st.sampled_from(["x", "y"]), specs, min_size=1),
                  st.sampled_from([1, 0.5, 2])),
        min_size=1, max_size=5,
    ),
    actual=st.lists(args, min_size=1, max_size=5),
)  # fmt: skip
def test_certified_total_is_the_optimum(
    expected: list[tuple[dict[str, Any], float]], actual: list[dict[str, Any]]
) -> None:
    body = [{"name": "t", "arguments": a, "weight": w} for a, w in expected]
    plan = parse_expectation({"match": "unordered", "calls": body}).plan
    assert plan is not None
    calls = [Call("t", a) for a in actual]
    adj = [[i for i, c in enumerate(calls) if e.check(c.arguments)] for e in plan.calls]
    paired = max_matching(adj, len(calls), plan.order)
    cols = list(range(len(calls)))
    shares = Shares(calls)
    got = certified_total(plan.calls, cols, paired, shares)
    if got is not None:
        assert got == small_total(plan.calls, cols, shares)
    for e in plan.calls:  # shared verdicts of repeated specs change no share
        listed = e.listed
        assert listed is not None
        for a, c in enumerate(calls):
            assert shares.get(e, a) == listed.key_share(c.arguments)
