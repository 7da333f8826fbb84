"""One list of expected calls against one list of actual calls: verdict, pairings, scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import explain
from .agreement import best_agreement, best_total
from .assign import in_order_greedy, lcs_chain, max_matching
from .expected import ORDERED_MODES, ExpectedCall, Plan
from .explain import Frame
from .types import Call, Difference, name_index
from .values import canon_scalar

_INDEX_MIN = 12  # look candidates up by argument value above this many same-name calls


@dataclass
class Unit:
    """The outcome of one evaluation; units add up into a result."""

    diffs: list[Difference] = field(default_factory=list)
    paired_actual: int = 0
    paired_weight: float = 0.0
    total_weight: float = 0.0
    arg_num: float = 0.0  # weighted sum of argument shares
    arg_den: float = 0.0  # weight of the calls that list argument keys
    lcs: int = 0
    n_expected: int = 0
    tools: dict[str, list[float]] = field(default_factory=dict)


def _candidates(
    e: ExpectedCall,
    args: Sequence[Any],
    same_name: Sequence[int],
    index: dict[tuple[str, str], dict[Any, list[int]]],
) -> Sequence[int]:
    """Actual calls that may be compatible: same name, and the indexed key's value."""
    ik = e.index_key
    if ik is None:
        return same_name
    key, canon = ik
    buckets = index.get((e.name, key))
    if buckets is None:
        buckets = {}
        for i in same_name:
            a = args[i]
            if isinstance(a, Mapping) and key in a:
                c = canon_scalar(a[key])
                if c is not None:
                    buckets.setdefault(c, []).append(i)
        index[(e.name, key)] = buckets
    return buckets.get(canon, ())


def compatibility(
    calls: Sequence[Call], plan: Plan, by_name: dict[str, list[int]]
) -> list[list[int]]:
    """adj[j]: the actual calls (ascending) compatible with expected call j.

    Identical expected calls share one list (computed once)."""
    index: dict[tuple[str, str], dict[Any, list[int]]] = {}
    args = [c.arguments for c in calls]
    adj: list[list[int]] = []
    dup_of = plan.dup_of
    for j, e in enumerate(plan.calls):
        if dup_of[j] != j:
            adj.append(adj[dup_of[j]])
            continue
        same: Sequence[int] | None = by_name.get(e.name)
        if not same:
            adj.append([])
            continue
        if len(same) > _INDEX_MIN and e.index_key is not None:
            same = _candidates(e, args, same, index)
        check = e.check
        if e.args_only:
            adj.append([i for i in same if check(args[i])])
        else:
            adj.append([i for i in same if check(calls[i])])
    return adj


def evaluate(
    calls: Sequence[Call],
    blocks: Sequence[tuple[int, int]],
    plan: Plan,
    mode: str,
    frame: Frame,
    path: str = "calls",
    by_name: dict[str, list[int]] | None = None,
) -> Unit:
    """Score the plan's expected calls against `calls` in `mode` (MATCHING.md)."""
    expected = plan.calls
    n, m = len(calls), len(expected)
    if by_name is None:
        by_name = name_index(calls)
    adj = compatibility(calls, plan, by_name)
    unit = Unit(n_expected=m, total_weight=plan.total_weight)
    chain: list[tuple[int, int]] = []
    if mode in ORDERED_MODES:
        compat: list[list[int]] = [[] for _ in range(n)]
        for j, row in enumerate(adj):
            for a in row:
                compat[a].append(j)
        chain = in_order_greedy(compat, m) or lcs_chain(compat, blocks)
        unit.lcs = len(chain)
    if len(chain) == m:  # every expected call paired in order: a maximum matching too
        match_l = [-1] * m
        for j, a in chain:
            match_l[j] = a
    else:
        match_l = max_matching(adj, n, plan.order)
    weights = plan.weights
    paired_actual = 0
    paired_weight = 0.0
    for j, r in enumerate(match_l):
        if r >= 0:
            paired_actual += 1
            paired_weight += weights[j]
    unit.paired_actual = paired_actual
    unit.paired_weight = paired_weight
    ctx = _Ctx(calls, expected, frame, by_name, adj) if n or m else None
    if ctx is None:
        pass
    elif mode in ORDERED_MODES:
        if len(chain) < m or (mode == "strict" and n != m):
            ctx.ordered_diffs(chain, blocks, strict=mode == "strict")
    elif mode == "subset":
        covered = set().union(*adj) if adj else set()
        if len(covered) < n:
            ctx.subset_diffs(covered)
    elif paired_actual < m or (mode == "unordered" and n != m):
        ctx.pairing_diffs(match_l, unordered=mode == "unordered")
    if ctx is not None and ctx.diffs:
        ctx.diffs.sort(key=_diff_order)
        if mode in ("strict", "unordered") and n != m:
            ctx.diffs.append(explain.count(frame, m, n, path))
        unit.diffs = ctx.diffs
    _argument_score(unit, calls, plan, by_name, match_l)
    _tools(unit, plan, by_name, match_l)
    return unit


def _argument_score(
    unit: Unit,
    calls: Sequence[Call],
    plan: Plan,
    by_name: dict[str, list[int]],
    match_l: Sequence[int],
) -> None:
    """Optimal assignment of argument agreement within each tool name."""
    for name, rows, den in plan.listed:
        unit.arg_den += den
        if all(match_l[e.index] >= 0 for e in rows):
            unit.arg_num += den  # compatible pairs agree on every listed key: the maximum
            continue
        cols = by_name.get(name)
        if cols:
            position = {a: k for k, a in enumerate(cols)}
            paired = [position.get(match_l[e.index], -1) for e in rows]
            unit.arg_num += best_total(rows, [calls[a].arguments for a in cols], paired)


def _tools(unit: Unit, plan: Plan, by_name: dict[str, list[int]], match_l: Sequence[int]) -> None:
    """Per-tool pair counts: [paired actual, total actual, paired weight, total weight]."""
    tools = {name: [0, len(idx), 0.0, 0.0] for name, idx in by_name.items()}
    for name, (_, weight) in plan.per_name.items():
        t = tools.get(name)
        if t is None:
            tools[name] = [0, 0, 0.0, weight]
        else:
            t[3] = weight
    expected = plan.calls
    for j, r in enumerate(match_l):
        if r >= 0:
            t = tools[expected[j].name]
            t[0] += 1
            t[2] += expected[j].weight
    unit.tools = tools


class _Ctx:
    """Builds the differences of one evaluation."""

    def __init__(
        self,
        calls: Sequence[Call],
        expected: Sequence[ExpectedCall],
        frame: Frame,
        by_name: dict[str, list[int]],
        adj: list[list[int]],
    ) -> None:
        self.calls = calls
        self.expected = expected
        self.frame = frame
        self.by_name = by_name
        self.adj = adj
        self.diffs: list[Difference] = []
        self.referenced: set[int] = set()

    def _explain_unpaired(self, unpaired: list[int], used: set[int]) -> None:
        """Missing / argument / error / result differences for unpaired expected calls.

        Leftover calls of the same name are paired by argument agreement so the
        sentence names the argument that differs.
        """
        names: dict[str, list[int]] = {}
        for j in unpaired:
            names.setdefault(self.expected[j].name, []).append(j)
        for name, rows in names.items():
            same = self.by_name.get(name, [])
            free = [a for a in same if a not in used and a not in self.referenced]
            paired: dict[int, int] = {}
            if free:
                row_calls = [self.expected[j] for j in rows]
                free_args = [self.calls[a].arguments for a in free]
                for i, k in best_agreement(row_calls, free_args, weighted=False)[1]:
                    paired[rows[i]] = free[k]
            n_expected = sum(1 for e in self.expected if e.name == name)  # failures only
            for j in rows:
                e = self.expected[j]
                a = paired.get(j)
                d = None
                if a is not None:
                    d = explain.mismatch(self.frame, e, a, self.calls[a])
                if d is None:
                    self.diffs.append(explain.missing(self.frame, e, n_expected, len(same)))
                else:
                    self.referenced.add(a)  # type: ignore[arg-type]
                    self.diffs.append(d)

    def pairing_diffs(self, match_l: Sequence[int], *, unordered: bool) -> None:
        """`unordered` / `superset`: expected calls left out of the maximum matching."""
        used = {r for r in match_l if r >= 0}
        self._explain_unpaired([j for j, r in enumerate(match_l) if r < 0], used)
        if unordered:
            self._unexpected(used)

    def _unexpected(self, used: set[int]) -> None:
        for a, call in enumerate(self.calls):
            if a not in used and a not in self.referenced:
                self.diffs.append(explain.unexpected(self.frame, a, call))

    def ordered_diffs(
        self, chain: list[tuple[int, int]], blocks: Sequence[tuple[int, int]], *, strict: bool
    ) -> None:
        """`strict` / `in_order`: expected calls left out of the longest chain."""
        in_chain = dict(chain)
        used = set(in_chain.values())
        block_of = {}
        for b, (s, t) in enumerate(blocks):
            for a in range(s, t):
                block_of[a] = b
        rest = []
        for j in range(len(self.expected)):
            if j in in_chain:
                continue
            free = [a for a in self.adj[j] if a not in used]
            if not free:
                rest.append(j)
                continue
            a = next((x for x in free if x not in self.referenced), free[0])
            self.referenced.add(a)
            anchor = self._anchor(j, a, chain, block_of)
            e = self.expected[j]
            self.diffs.append(explain.out_of_order(self.frame, e, a, self.calls[a], anchor))
        self._explain_unpaired(rest, used)
        if strict:
            self._unexpected(used)

    def _anchor(
        self, j: int, a: int, chain: list[tuple[int, int]], block_of: dict[int, int]
    ) -> tuple[str, int, bool] | None:
        before = [(e, x) for e, x in chain if e < j]
        after = [(e, x) for e, x in chain if e > j]
        if before and block_of[a] <= block_of[before[-1][1]]:
            e, x = before[-1]
            return self.expected[e].name, x, True
        if after:
            e, x = after[0]
            return self.expected[e].name, x, False
        if before:
            e, x = before[-1]
            return self.expected[e].name, x, True
        return None

    def subset_diffs(self, covered: set[int]) -> None:
        """`subset`: actual calls no expected call accounts for."""
        for a, call in enumerate(self.calls):
            if a in covered:
                continue
            rows = [e for e in self.expected if e.name == call.name]
            detail = None
            if rows:
                best = max(rows, key=lambda e: _share(e, call))
                detail = explain.mismatch(self.frame, best, a, call)
            self.diffs.append(explain.unexpected(self.frame, a, call, detail))


def _diff_order(d: Difference) -> tuple[int, int, int]:
    """By expected index, then by actual position."""
    if d.expected_index is not None:
        return (0, d.expected_index, d.actual_index or 0)
    return (1, d.actual_index or 0, 0)


def _share(e: ExpectedCall, call: Call) -> float:
    listed = e.listed
    return listed.key_share(call.arguments) if listed is not None else 0.0
