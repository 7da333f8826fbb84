"""Invariants, stated once for every mode (hypothesis), and a brute-force oracle."""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.matcher.test_shares import reference_share
from tooltrail.matcher import (
    Call,
    Expectation,
    Result,
    Trajectory,
    expectation_from_trajectory,
    parse_expectation,
    score,
)
from tooltrail.matcher.expected import ExpectedCall

MODES = ("strict", "in_order", "unordered", "superset", "subset")
ARG_MODES = ("ignore", "partial", "exact")
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
    database=None,
)

scalars = st.one_of(st.integers(0, 2), st.booleans(), st.sampled_from(["p", "q"]), st.none())
values = st.one_of(
    scalars,
    st.lists(scalars, max_size=2),
    st.dictionaries(st.sampled_from(["u", "v"]), scalars, max_size=2),
)
arguments = st.dictionaries(st.sampled_from(["x", "y", "z"]), values, max_size=3)


@st.composite
def turns(draw: st.DrawFn, max_calls: int = 6) -> list[list[Call]]:
    """Turns of calls; consecutive calls sometimes share a step (parallel calls)."""
    out = []
    for _ in range(draw(st.integers(1, 3))):
        calls: list[Call] = []
        step = 0
        for _ in range(draw(st.integers(0, max_calls))):
            mode = draw(st.sampled_from(["same", "next", "none"]))
            if mode == "next" or (mode == "same" and (not calls or calls[-1].step is None)):
                step += 1
            name = draw(st.sampled_from("abc"))
            error = draw(st.sampled_from([None, None, None, "boom"]))
            calls.append(
                Call(name, draw(arguments), error=error, step=None if mode == "none" else step)
            )
        out.append(calls)
    return out


def _trajectory(t: list[list[Call]]) -> Trajectory:
    return Trajectory(t)


@st.composite
def expected_calls(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Random expected calls over the same names and values, a few operators."""
    out = []
    for _ in range(draw(st.integers(0, 5))):
        item: dict[str, Any] = {"name": draw(st.sampled_from("abc"))}
        if draw(st.booleans()):
            spec: dict[str, Any] = {}
            for key in draw(st.lists(st.sampled_from(["x", "y", "z"]), max_size=2, unique=True)):
                spec[key] = draw(
                    st.one_of(
                        values,
                        st.just({"$any": True}),
                        st.just({"$absent": True}),
                        st.just({"$in": [0, "p"]}),
                        st.just({"$type": "integer"}),
                    )
                )
            item["arguments"] = spec
        if draw(st.integers(0, 4)) == 0:
            item["weight"] = draw(st.sampled_from([0.5, 2, 3]))
        if draw(st.integers(0, 5)) == 0:
            item["error"] = draw(st.booleans())
        out.append(item)
    return out


def _exp(calls: list[dict[str, Any]], match: str, arguments: str = "partial") -> Expectation:
    return parse_expectation({"match": match, "arguments": arguments, "calls": calls})


def _one(exp: Expectation, traj: Trajectory) -> Result:
    [result] = score(exp, traj)
    return result


def _scores(r: Result) -> list[float]:
    return [r.score, r.precision, r.recall, r.f1, r.argument_score] + (
        [] if r.order_score is None else [r.order_score]
    )


def _consistent(r: Result) -> None:
    assert all(0.0 <= s <= 1.0 for s in _scores(r))
    json.dumps(r.to_dict(), allow_nan=False)
    assert r.passed is (r.differences == ()) is (r.reason == "")
    assert r.score == (1.0 if r.passed else 0.0)


@pytest.mark.parametrize("mode", MODES)
@SETTINGS
@given(t=turns(), expected=expected_calls(), scope=st.sampled_from(["conversation", "each_turn"]))
def test_scores_lie_in_unit_interval(
    mode: str, t: list[list[Call]], expected: list[dict[str, Any]], scope: str
) -> None:
    exp = parse_expectation({"match": mode, "calls": expected, "scope": scope})
    for r in score(exp, _trajectory(t)):
        _consistent(r)


@pytest.mark.parametrize("mode", MODES)
@SETTINGS
@given(t=turns(), arguments=st.sampled_from(ARG_MODES))
def test_trajectory_against_itself_passes(mode: str, t: list[list[Call]], arguments: str) -> None:
    traj = _trajectory(t)
    for per_turn in (False, True):
        data = expectation_from_trajectory(traj, per_turn=per_turn, match=mode, arguments=arguments)
        r = _one(parse_expectation(data), traj)
        assert r.passed, r.reason
        assert _scores(r) == [1.0] * len(_scores(r))
        assert (r.order_score is None) is (mode not in ("strict", "in_order"))


@SETTINGS
@given(t=turns(), expected=expected_calls(), seed=st.integers(0, 2**16))
def test_unordered_is_invariant_under_permutation(
    t: list[list[Call]], expected: list[dict[str, Any]], seed: int
) -> None:
    flat = [Call(c.name, c.arguments, error=c.error) for turn in t for c in turn]
    shuffled = flat[:]
    random.Random(seed).shuffle(shuffled)
    exp = _exp(expected, "unordered")
    a, b = _one(exp, Trajectory.from_calls(flat)), _one(exp, Trajectory.from_calls(shuffled))
    assert a.passed is b.passed
    assert (a.precision, a.recall, a.f1) == (b.precision, b.recall, b.f1)
    assert a.argument_score == pytest.approx(b.argument_score)


@SETTINGS
@given(t=turns(), expected=expected_calls(), arguments=st.sampled_from(ARG_MODES))
def test_mode_implications(
    t: list[list[Call]], expected: list[dict[str, Any]], arguments: str
) -> None:
    traj = _trajectory(t)
    v = {mode: _one(_exp(expected, mode, arguments), traj).passed for mode in MODES}
    if v["strict"]:
        assert v["in_order"]
    if v["in_order"]:
        assert v["superset"]
    if v["unordered"]:
        assert v["superset"] and v["subset"]


@pytest.mark.parametrize("mode", ["superset", "in_order"])
@SETTINGS
@given(t=turns(), expected=expected_calls(), extra=arguments, name=st.sampled_from("abcd"))
def test_appending_a_call_never_breaks(
    mode: str, t: list[list[Call]], expected: list[dict[str, Any]], extra: dict[str, Any], name: str
) -> None:
    exp = _exp(expected, mode)
    if not _one(exp, _trajectory(t)).passed:
        return
    longer = [*t[:-1], [*t[-1], Call(name, extra)]]
    assert _one(exp, _trajectory(longer)).passed


@pytest.mark.parametrize("mode", MODES)
@SETTINGS
@given(t=turns(), expected=expected_calls())
def test_exact_implies_partial_implies_ignore(
    mode: str, t: list[list[Call]], expected: list[dict[str, Any]]
) -> None:
    traj = _trajectory(t)
    exact, partial, ignore = (
        _one(_exp(expected, mode, a), traj).passed for a in ("exact", "partial", "ignore")
    )
    if exact:
        assert partial
    if partial:
        assert ignore


def _shuffle_steps(t: list[list[Call]], rng: random.Random) -> list[list[Call]]:
    out = []
    for turn in t:
        new: list[Call] = []
        i = 0
        while i < len(turn):
            j = i + 1
            while j < len(turn) and turn[j].step is not None and turn[j].step == turn[i].step:
                j += 1
            block = turn[i:j]
            rng.shuffle(block)
            new.extend(block)
            i = j
        out.append(new)
    return out


@pytest.mark.parametrize("mode", MODES)
@SETTINGS
@given(t=turns(), expected=expected_calls(), seed=st.integers(0, 2**16))
def test_reordering_within_a_step_never_changes_a_verdict(
    mode: str, t: list[list[Call]], expected: list[dict[str, Any]], seed: int
) -> None:
    exp = _exp(expected, mode)
    a = _one(exp, _trajectory(t))
    b = _one(exp, _trajectory(_shuffle_steps(t, random.Random(seed))))
    assert a.passed is b.passed
    assert (a.precision, a.recall, a.order_score) == (b.precision, b.recall, b.order_score)
    assert a.argument_score == pytest.approx(b.argument_score)


# --- a brute-force oracle for the verdicts and scores -----------------------------------


def _reorderings(t: list[list[Call]]) -> Iterator[list[Call]]:
    """Every order of the conversation's calls allowed by its steps."""
    blocks: list[list[Call]] = []
    for turn in t:
        for i, c in enumerate(turn):
            if i and c.step is not None and c.step == turn[i - 1].step:
                blocks[-1].append(c)
            else:
                blocks.append([c])
    for combo in itertools.product(*(itertools.permutations(b) for b in blocks)):
        yield [c for block in combo for c in block]


def _lcs(a: Sequence[Call], e: Sequence[ExpectedCall]) -> int:
    dp = [[0] * (len(e) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a)):
        for j in range(len(e)):
            dp[i + 1][j + 1] = max(
                dp[i][j + 1], dp[i + 1][j], dp[i][j] + int(e[j].compatible(a[i]))
            )
    return dp[len(a)][len(e)]


def _assignments(m: int, n: int) -> Iterator[tuple[int | None, ...]]:
    """Every partial injective map from m rows into n columns."""
    for choice in itertools.product([None, *range(n)], repeat=m):
        used = [c for c in choice if c is not None]
        if len(used) == len(set(used)):
            yield choice


def _oracle(exp: Expectation, t: list[list[Call]]) -> dict[str, Any]:
    e = list(exp.calls or ())
    a = [c for turn in t for c in turn]
    orders = list(_reorderings(t))
    lcs = max(_lcs(o, e) for o in orders)
    compat = [[x.compatible(c) for c in a] for x in e]
    best_w, best_pairs = 0.0, 0
    for choice in _assignments(len(e), len(a)):
        if all(k is None or compat[j][k] for j, k in enumerate(choice)):
            best_w = max(best_w, sum(e[j].weight for j, k in enumerate(choice) if k is not None))
            best_pairs = max(best_pairs, sum(k is not None for k in choice))
    covers_e = any(
        all(k is not None and compat[j][k] for j, k in enumerate(choice))
        for choice in _assignments(len(e), len(a))
    )
    verdict = {
        "strict": len(a) == len(e) and lcs == len(e),
        "in_order": lcs == len(e),
        "unordered": len(a) == len(e) and covers_e,
        "superset": covers_e,
        "subset": all(any(compat[j][i] for j in range(len(e))) for i in range(len(a))),
    }[exp.match]
    arg_rows = [x for x in e if x.listed is not None]
    best_args = 0.0
    for choice in _assignments(len(arg_rows), len(a)):
        total = 0.0
        for x, k in zip(arg_rows, choice, strict=True):
            if k is not None and a[k].name == x.name:
                total += x.weight * reference_share(x.listed, a[k].arguments)
        best_args = max(best_args, total)
    den = sum(x.weight for x in arg_rows)
    total_w = sum(x.weight for x in e)
    return {
        "passed": verdict,
        "order_score": lcs / len(e) if e else 1.0,
        "recall": best_w / total_w if total_w else 1.0,
        "precision": best_pairs / len(a) if a else 1.0,
        "argument_score": best_args / den if den else 1.0,
    }


@st.composite
def small_turns(draw: st.DrawFn) -> list[list[Call]]:
    t = draw(turns(max_calls=4))
    total = sum(len(x) for x in t)
    return t if total <= 5 else [t[0][:4]]


@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(t=small_turns(), expected=expected_calls())
def test_against_brute_force(
    mode: str, t: list[list[Call]], expected: list[dict[str, Any]]
) -> None:
    expected = expected[:4]
    exp = _exp(expected, mode)
    got = _one(exp, _trajectory(t))
    want = _oracle(exp, t)
    assert got.passed is want["passed"], got.reason
    assert got.recall == pytest.approx(want["recall"])
    assert got.argument_score == pytest.approx(want["argument_score"])
    if mode in ("strict", "in_order"):
        assert got.order_score == pytest.approx(want["order_score"])
    # with positive weights a maximum-weight pairing is also a maximum one (a matroid)
    assert got.precision == pytest.approx(want["precision"])
