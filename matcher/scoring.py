"""`score`: an expectation against a trajectory, one result per scope instance."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import explain
from .expected import ORDERED_MODES, TurnSpec
from .explain import Frame
from .modes import Unit, evaluate
from .result import Counts, Difference, Result, build
from .selector import glob_match
from .spec import Expectation
from .types import Call, Trajectory


def score(expectation: Expectation, trajectory: Trajectory) -> list[Result]:
    """Score a trajectory: one result per scope instance.

    - scope `conversation` (and per-turn `turns:` lists): one result;
    - scope `turn`: one result for that turn (`{"kind": "turn", "turn": i}`, i the
      resolved 0-based index); a turn that does not exist fails with a `turn_missing`
      difference (and keeps the index as written, e.g. -1);
    - scope `each_turn`: one result per actual turn; a conversation with no turn
      at all gets one failing result (`turn_missing`, turn 0): an agent that did
      nothing is never a silent pass.
    """
    exp = expectation
    if exp.turns is not None:
        return [_per_turn(exp, trajectory)]
    if exp.scope == "conversation":
        frame = Frame(call_turns=trajectory.call_turns)
        scope = {"kind": "conversation"}
        calls = trajectory.calls
        by_name = trajectory.name_positions
        return [_single(exp, calls, trajectory.blocks, frame, scope, by_name=by_name)]
    n = len(trajectory.turns)
    if exp.scope == "turn":
        t = exp.turn if exp.turn is not None else -1
        index = t + n if t < 0 else t
        if 0 <= index < n:
            return [_turn(exp, trajectory, index)]
        missing = explain.turn_missing(t, n, "turn")
        return [_single(exp, (), (), Frame(turn=t), {"kind": "turn", "turn": t}, missing)]
    if n == 0:
        missing = explain.turn_missing(0, 0, "scope")
        return [_single(exp, (), (), Frame(turn=0), {"kind": "turn", "turn": 0}, missing)]
    return [_turn(exp, trajectory, t) for t in range(n)]


def _turn(exp: Expectation, trajectory: Trajectory, t: int) -> Result:
    calls = trajectory.turns[t]
    scope = {"kind": "turn", "turn": t}
    return _single(exp, calls, trajectory.turn_blocks[t], Frame(turn=t), scope)


def _single(
    exp: Expectation,
    calls: Sequence[Call],
    blocks: Sequence[tuple[int, int]],
    frame: Frame,
    scope: dict[str, Any],
    missing_turn: Difference | None = None,
    by_name: dict[str, list[int]] | None = None,
) -> Result:
    diffs = _constraints(exp, [(calls, frame)], len(calls), frame)
    if missing_turn is not None:
        diffs.append(missing_turn)
    if exp.plan is None:
        unit = Unit()
    else:
        unit = evaluate(calls, blocks, exp.plan, exp.match, frame, by_name=by_name)
        diffs.extend(unit.diffs)
    total_actual = len(calls) if exp.plan is not None else 0
    ordered = [unit] if exp.match in ORDERED_MODES else None
    return _result(scope, diffs, [unit], total_actual, ordered)


def _per_turn(exp: Expectation, trajectory: Trajectory) -> Result:
    turns = trajectory.turns
    specs: Sequence[TurnSpec] = exp.turns or ()
    frames = [Frame(prefix=f"In turn {t + 1}, ", turn=t) for t in range(len(turns))]
    diffs = _constraints(exp, list(zip(turns, frames, strict=True)), len(trajectory.calls), Frame())
    units = []
    for t, spec in enumerate(specs):
        if t >= len(turns):
            diffs.append(explain.turn_missing(t, len(turns), f"turns[{t}]"))
            units.append(_absent_turn(spec))
            continue
        unit = evaluate(
            turns[t], trajectory.turn_blocks[t], spec.plan, spec.match, frames[t],
            f"turns[{t}].calls",
        )  # fmt: skip
        diffs.extend(unit.diffs)
        units.append(unit)
    if not exp.allow_extra_turns:
        diffs.extend(explain.turn_extra(t, len(specs)) for t in range(len(specs), len(turns)))
    ordered = [u for u, s in zip(units, specs, strict=True) if s.match in ORDERED_MODES]
    if not ordered and not specs and exp.match in ORDERED_MODES:
        ordered = [Unit()]  # `turns: []` under an ordered default: nothing out of order
    return _result({"kind": "conversation"}, diffs, units, len(trajectory.calls), ordered or None)


def _absent_turn(spec: TurnSpec) -> Unit:
    """What a turn that never happened contributes: every expected call unpaired."""
    unit = Unit(n_expected=len(spec.calls))
    for e in spec.calls:
        unit.total_weight += e.weight
        if e.listed is not None:
            unit.arg_den += e.weight
        t = unit.tools.setdefault(e.name, [0, 0, 0.0, 0.0])
        t[3] += e.weight
    return unit


def _constraints(
    exp: Expectation,
    parts: Sequence[tuple[Sequence[Call], Frame]],
    total: int,
    frame: Frame,
) -> list[Difference]:
    """`forbid`, `allow`, `require_no_errors` per call, then the call budget."""
    if (
        not exp.forbid and exp.allow is None and not exp.require_no_errors
        and exp.max_calls is None and exp.min_calls is None
    ):  # fmt: skip
        return []  # the usual expectation: no constraint at all
    bad: list[list[Difference]] = [[], [], []]
    check_names = bool(exp.forbid) or exp.allow is not None
    if check_names or exp.require_no_errors:
        for calls, part_frame in parts:
            for a, call in enumerate(calls):
                if check_names:
                    _names(exp, a, call, part_frame, bad)
                if exp.require_no_errors and call.failed:
                    bad[2].append(explain.failed(part_frame, a, call))
    diffs = bad[0] + bad[1] + bad[2]
    if exp.max_calls is not None and total > exp.max_calls:
        diffs.append(explain.budget(frame, "max_calls", exp.max_calls, total))
    if exp.min_calls is not None and total < exp.min_calls:
        diffs.append(explain.budget(frame, "min_calls", exp.min_calls, total))
    return diffs


def _names(exp: Expectation, a: int, call: Call, frame: Frame, bad: list[list[Difference]]) -> None:
    for i, g in enumerate(exp.forbid):
        if glob_match(g, call.name):
            bad[0].append(explain.forbidden(frame, a, call, i, g))
            return
    if exp.allow is not None and not any(glob_match(g, call.name) for g in exp.allow):
        bad[1].append(explain.not_allowed(frame, a, call, exp.allow))


def _result(
    scope: dict[str, Any],
    diffs: list[Difference],
    units: Sequence[Unit],
    total_actual: int,
    ordered: Sequence[Unit] | None,
) -> Result:
    if len(units) == 1:  # the common case, kept cheap
        u = units[0]
        paired_actual, paired_w, total_w = u.paired_actual, u.paired_weight, u.total_weight
        arg_num, arg_den, tools = u.arg_num, u.arg_den, u.tools
    else:
        paired_actual = sum(u.paired_actual for u in units)
        paired_w = sum(u.paired_weight for u in units)
        total_w = sum(u.total_weight for u in units)
        arg_num = sum(u.arg_num for u in units)
        arg_den = sum(u.arg_den for u in units)
        tools = {}
        for u in units:
            for name, row in u.tools.items():
                acc = tools.setdefault(name, [0, 0, 0.0, 0.0])
                for k in range(4):
                    acc[k] += row[k]
    precision = paired_actual / total_actual if total_actual else 1.0
    recall = paired_w / total_w if total_w else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision and recall else 0.0
    argument_score = arg_num / arg_den if arg_den else 1.0
    order_score = None
    if ordered is not None:
        if len(ordered) == 1:
            n_exp, lcs = ordered[0].n_expected, ordered[0].lcs
        else:
            n_exp = sum(u.n_expected for u in ordered)
            lcs = sum(u.lcs for u in ordered)
        order_score = lcs / n_exp if n_exp else 1.0
    per_tool = []
    for name in sorted(tools):
        t = tools[name]
        per_tool.append((name, t[0], t[1], t[2], t[3]))
    counts = build(Counts, {
        "paired_actual": paired_actual,
        "total_actual": total_actual,
        "paired_expected_weight": float(paired_w),
        "total_expected_weight": float(total_w),
        "tools": tuple(per_tool),
    })  # fmt: skip
    passed = not diffs
    matched: tuple[tuple[Sequence[int], Frame], ...]
    if len(units) == 1:
        found = units[0].matched
        matched = () if found is None else (found,)
    else:
        matched = tuple(u.matched for u in units if u.matched is not None)
    return build(Result, {
        "scope": scope, "passed": passed, "score": 1.0 if passed else 0.0,
        "precision": precision, "recall": recall, "f1": f1,
        "argument_score": argument_score, "order_score": order_score,
        "reason": diffs[0].message if diffs else "", "differences": tuple(diffs),
        "counts": counts, "matched": matched,
    })  # fmt: skip
