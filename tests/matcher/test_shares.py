"""Argument shares: the one definition (`ObjectSpec.key_hits`, cached by `Shares`)
against an independently written one, and the argument score's shortcut."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from tooltrail.matcher import Call, Trajectory, parse_expectation, score
from tooltrail.matcher.agreement import best_total
from tooltrail.matcher.assign import max_matching
from tooltrail.matcher.expected import exact_values
from tooltrail.matcher.shares import Shares
from tooltrail.matcher.values import AbsentSpec, ObjectSpec

values = st.sampled_from([0, 1, "p", "q"])
args = st.fixed_dictionaries({"x": values, "y": values})
specs = values | st.sampled_from([{"$regex": "p|q"}, {"$in": [0, "q"]}, {"$absent": True}])


def reference_share(spec: ObjectSpec | None, v: Any) -> float:
    """The share of listed keys `v` meets, through `mismatch` (the tree-walking
    explanation, written apart from `matches`)."""
    if spec is None or not isinstance(v, dict):
        return 0.0
    hits = 0
    for k, s in spec.entries.items():
        if isinstance(s, AbsentSpec):
            hits += k not in v
        else:
            hits += k in v and s.mismatch(v[k]) is None
    return hits / len(spec.entries)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    expected=st.lists(
        st.tuples(st.dictionaries(st.sampled_from(["x", "y"]), specs, min_size=1),
                  st.sampled_from([1, 0.5, 2, 0.1])),
        min_size=1, max_size=12,
    ),
    actual=st.lists(args, min_size=1, max_size=12),
)  # fmt: skip
def test_best_total_is_the_optimum(
    expected: list[tuple[dict[str, Any], float]], actual: list[dict[str, Any]]
) -> None:
    """Small and large (above SMALL cells: the shortcut) problems alike."""
    body = [{"name": "t", "arguments": a, "weight": w} for a, w in expected]
    plan = parse_expectation({"match": "unordered", "calls": body}).plan
    assert plan is not None
    calls = [Call("t", a) for a in actual]
    adj = [[i for i, c in enumerate(calls) if e.check(c.arguments)] for e in plan.calls]
    paired = max_matching(adj, len(calls), plan.order)
    cols = list(range(len(calls)))
    shares = Shares(calls)
    truth = [[e.weight * reference_share(e.listed, c.arguments) for c in calls] for e in plan.calls]
    rows, picked = linear_sum_assignment(truth, maximize=True)
    want = sum(truth[i][j] for i, j in zip(rows, picked, strict=True))
    exact = exact_values(plan.calls)
    assert best_total(plan.calls, cols, paired, shares, exact) == pytest.approx(want, abs=1e-9)
    for e in plan.calls:
        for a, c in enumerate(calls):
            assert shares.get(e, a) == reference_share(e.listed, c.arguments)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(
    expected=st.lists(st.dictionaries(st.sampled_from(["x", "y"]), specs, min_size=1),
                      min_size=1, max_size=5),
    actual=st.lists(args, min_size=1, max_size=3),
)  # fmt: skip
def test_explanations_pair_leftovers_by_the_optimal_assignment(
    expected: list[dict[str, Any]], actual: list[dict[str, Any]]
) -> None:
    """`Differences._agreement` pairs leftover calls with rows at the optimal total of
    (unweighted) shares."""
    from tooltrail.matcher.differences import Differences
    from tooltrail.matcher.explain import Frame

    body = [{"name": "t", "arguments": a} for a in expected]
    plan = parse_expectation({"match": "unordered", "calls": body}).plan
    assert plan is not None
    calls = [Call("t", a) for a in actual]
    rows = list(plan.calls)
    free = list(range(len(calls)))
    ctx = Differences(calls, rows, Frame(), {"t": free}, [], Shares(calls))
    truth = [[reference_share(e.listed, c.arguments) for c in calls] for e in rows]
    r, c = linear_sum_assignment(truth, maximize=True)
    pairs = ctx._agreement(rows, free)
    assert len(pairs) == min(len(rows), len(free))
    got = sum(truth[i][j] for i, j in pairs)
    assert got == pytest.approx(sum(truth[i][j] for i, j in zip(r, c, strict=True)), abs=1e-12)


def test_a_leftover_call_among_many_rows_is_explained_as_before() -> None:
    """Above SMALL rows, one leftover call is paired by `best_agreement` (its share
    matrix rounds k × (1/n), so 9/15 and 3/5 differ by an ulp), as before the
    one-column shortcut: the tie between the two rows below goes to expected call 1."""
    args = {f"k{i}": 0 for i in range(15)}
    first = {f"k{i}": (0 if i < 9 else 1) for i in range(15)}  # 9 of 15 keys hold
    second = {"k0": 0, "k1": 0, "k2": 0, "k3": 1, "k4": 1}  # 3 of 5
    rest = [{"name": "f", "arguments": {"zz": i}} for i in range(63)]
    body = [{"name": "f", "arguments": first}, {"name": "f", "arguments": second}, *rest]
    exp = parse_expectation({"match": "superset", "calls": body})
    r = score(exp, Trajectory.from_calls([Call("f", args)]))[0]
    argument = [d for d in r.differences if d.kind == "argument"]
    assert [(d.expected_index, d.path) for d in argument] == [(1, "calls[1].arguments.k3")]


def _nested(ident: int, **options: Any) -> dict[str, Any]:
    """An expected `t` call whose `include` spec `{items: true}` is the same text in
    every call; only its exactness (from `arguments_match`) differs."""
    return {"name": "t", "arguments": {"id": ident, "kind": "x", "include": {"items": True}},
            **options}  # fmt: skip


def _actual(ident: int) -> Call:
    # `include` has a key the spec does not list: partial holds, exact does not.
    return Call("t", {"id": ident, "kind": "x", "include": {"items": True, "history": False}})


def test_exact_and_partial_copies_of_one_spec_do_not_share_verdicts() -> None:
    """A share must tell `{items: true}` under `exact` from the same text under
    `partial` (2 × 2 calls, 3 keys)."""
    exp = parse_expectation({
        "match": "unordered",
        "calls": [_nested(1, arguments_match="exact"), _nested(2)],
    })  # fmt: skip
    calls = [_actual(1), _actual(2)]
    r = score(exp, Trajectory.from_calls(calls))[0]
    # Uncached shares (id, kind, include): the exact call e0 fails `include` everywhere,
    # e0 on a0 = 2/3 (id, kind), on a1 = 1/3 (kind); the partial call e1 on a0 = 2/3
    # (kind, include), on a1 = 3/3. Best: e0→a0 + e1→a1 = 5/3 over weight 2 → 5/6.
    # (A shared verdict gave e1 `include` false too: 2/3 + 2/3 → 4/6.)
    assert r.argument_score == pytest.approx(5 / 6, abs=1e-12)
    plan = exp.plan
    assert plan is not None
    shares = Shares(calls)
    for e in plan.calls:  # in either order, each share is the uncached one
        for a, c in enumerate(calls):
            assert e.listed is not None
            assert shares.get(e, a) == reference_share(e.listed, c.arguments)


def test_exact_and_partial_copies_of_one_spec_in_the_share_matrix() -> None:
    """The same above SMALL cells (9 calls)."""
    body = [_nested(i) for i in range(7)] + [_nested(99), _nested(8, arguments_match="exact")]
    exp = parse_expectation({"match": "unordered", "calls": body})
    calls = [_actual(i) for i in range(9)]
    r = score(exp, Trajectory.from_calls(calls))[0]
    # Uncached: partial e0..e6 pair with a0..a6 (3/3 each); e7 (partial, id 99) scores
    # 2/3 anywhere (kind, include); the exact e8 fails `include`, so 2/3 on a8 (id,
    # kind), 1/3 elsewhere. Best: 7 + 2/3 + 2/3 over weight 9 → 25/27.
    # (A shared verdict gave e8 `include` true, 3/3 on a8: 26/27.)
    assert r.argument_score == pytest.approx(25 / 27, abs=1e-12)
    plan = exp.plan
    assert plan is not None
    shares = Shares(calls)
    rows = list(plan.calls)
    m = shares.matrix(rows, list(range(len(calls))), weighted=False)
    for i, e in enumerate(rows):
        assert m[i] == pytest.approx([reference_share(e.listed, c.arguments) for c in calls])
