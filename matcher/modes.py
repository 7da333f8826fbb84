"""One list of expected calls against one list of actual calls: verdict, pairings, scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from . import explain
from .agreement import best_total
from .assign import in_order_greedy, lcs_chain, max_matching
from .differences import Differences, diff_order
from .expected import ORDERED_MODES, Plan
from .explain import Frame
from .result import Difference
from .shares import Shares
from .types import Call, name_index
from .values import MISSING

_INDEX_MIN = 3  # look candidates up by argument value above this many same-name calls


class Unit:
    """The outcome of one evaluation; units add up into a result (a plain slotted
    class: one is made per evaluation)."""

    __slots__ = (
        "arg_den", "arg_num", "diffs", "lcs", "matched", "n_expected", "paired_actual",
        "paired_weight", "tools", "total_weight",
    )  # fmt: skip

    def __init__(self, n_expected: int = 0, total_weight: float = 0.0) -> None:
        self.diffs: list[Difference] = []
        self.paired_actual = 0
        self.paired_weight = 0.0
        self.total_weight = total_weight
        self.arg_num = 0.0  # weighted sum of argument shares
        self.arg_den = 0.0  # weight of the calls that list argument keys
        self.lcs = 0
        self.n_expected = n_expected
        self.tools: dict[str, list[float]] = {}
        # the pairing the scores count, kept as found (match_l, frame): `Result.pairs` reads it
        # only when asked, so scoring pays one assignment for it
        self.matched: tuple[Sequence[int], Frame] | None = None


def _candidates(
    args: Sequence[Any],
    same_name: Sequence[int],
    name: str,
    key: str,
    value: Any,
    index: dict[tuple[str, str], dict[Any, list[int]]],
) -> Sequence[int]:
    """Actual calls that may be compatible: same name, and a value equal (`==`) to the
    indexed key's scalar literal. Python's equality admits more than JSON's (`True == 1`,
    never less): the caller's `check` still decides."""
    buckets = index.get((name, key))
    if buckets is None:
        buckets = {}
        for i in same_name:
            a = args[i]
            if type(a) is dict or isinstance(a, Mapping):
                x = a.get(key, MISSING)
                if x is not MISSING:
                    try:
                        bucket = buckets.get(x)
                    except TypeError:  # unhashable: a container, never equal to a scalar
                        continue
                    if bucket is None:
                        buckets[x] = [i]
                    else:
                        bucket.append(i)
        index[(name, key)] = buckets
    return buckets.get(value, ())


def compatibility(
    calls: Sequence[Call],
    plan: Plan,
    by_name: dict[str, list[int]],
    compat: list[list[int]] | None = None,
) -> list[list[int]]:
    """adj[j]: the actual calls (ascending) compatible with expected call j.

    Identical expected calls share one list (computed once). `compat`, if given (one
    empty list per actual call), receives the other direction: compat[a] lists the
    expected calls (ascending) compatible with actual call a."""
    index: dict[tuple[str, str], dict[Any, list[int]]] = {}
    args = [c.arguments for c in calls]
    adj: list[list[int]] = []
    for j, (first, name, check, args_only, key, value) in enumerate(plan.checks):
        if first != j:
            row = adj[first]
            adj.append(row)
            if compat is not None:
                for i in row:
                    compat[i].append(j)
            continue
        same: Sequence[int] | None = by_name.get(name)
        if not same:
            adj.append([])
            continue
        if key is not None and len(same) > _INDEX_MIN:
            same = _candidates(args, same, name, key, value, index)
        values: Sequence[Any] = args if args_only else calls
        row = []  # a plain loop: cheaper than a comprehension for a few same-name calls
        for i in same:
            if check(values[i]):
                row.append(i)
                if compat is not None:
                    compat[i].append(j)
        adj.append(row)
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
    """Score the plan's expected calls against `calls` in `mode` (docs/matching.md, "Modes")."""
    expected = plan.calls
    n, m = len(calls), len(expected)
    if by_name is None:
        by_name = name_index(calls)
    unit = Unit(n_expected=m, total_weight=plan.total_weight)
    chain: list[tuple[int, int]] = []
    if mode in ORDERED_MODES:
        compat: list[list[int]] = [[] for _ in range(n)]
        adj = compatibility(calls, plan, by_name, compat)
        # The leftmost embedding of every expected call, when none lacks a compatible
        # call (else it cannot exist); otherwise a longest chain.
        greedy = in_order_greedy(compat, m) if all(adj) else None
        chain = greedy or lcs_chain(compat, blocks)
        unit.lcs = len(chain)
    else:
        adj = compatibility(calls, plan, by_name)
    # The chain is a matching. It is a maximum one (of maximum weight too) when it pairs
    # every expected call, or, unweighted, when no expected call it leaves out has a
    # compatible call (no augmenting path starts there). Else: grow it, unweighted, or
    # match by decreasing weight.
    match_l = [-1] * m
    for j, a in chain:
        match_l[j] = a
    if len(chain) < m and (plan.order is not None or not chain or _augmentable(adj, match_l)):
        start = chain if plan.order is None else ()
        match_l = max_matching(adj, n, plan.order, start)
    short = _tally(unit, plan, by_name, match_l)
    unit.matched = (match_l, frame)
    shares = Shares(calls)
    if n or m:
        ctx = Differences(calls, expected, frame, by_name, adj, shares, plan.per_name)
        unit.diffs = _differences(ctx, mode, chain, blocks, match_l, path)
    _argument_score(unit, calls, plan, by_name, match_l, shares, short)
    return unit


def _augmentable(adj: Sequence[Sequence[int]], match_l: Sequence[int]) -> bool:
    """True when an unpaired expected call has a compatible call."""
    for j, r in enumerate(match_l):  # noqa: SIM110 - a loop: any() over a generator costs more
        if r < 0 and adj[j]:
            return True
    return False


def _tally(
    unit: Unit, plan: Plan, by_name: dict[str, list[int]], match_l: Sequence[int]
) -> set[str]:
    """Pair counts, overall and per tool ([paired actual, total actual, paired weight,
    total weight]); returns the tools with an unpaired expected call that lists keys."""
    tools = {name: [0, len(idx), 0.0, 0.0] for name, idx in by_name.items()}
    for name, (_, weight) in plan.per_name.items():
        t = tools.get(name)
        if t is None:
            tools[name] = [0, 0, 0.0, weight]
        else:
            t[3] = weight
    expected = plan.calls
    short = set()
    paired_actual = 0
    paired_weight = 0.0
    for j, r in enumerate(match_l):
        e = expected[j]
        if r >= 0:
            w = e.weight
            t = tools[e.name]
            t[0] += 1
            t[2] += w
            paired_actual += 1
            paired_weight += w
        elif e.listed is not None:
            short.add(e.name)
    unit.paired_actual = paired_actual
    unit.paired_weight = paired_weight
    unit.tools = tools
    return short


def _differences(
    ctx: Differences,
    mode: str,
    chain: list[tuple[int, int]],
    blocks: Sequence[tuple[int, int]],
    match_l: Sequence[int],
    path: str,
) -> list[Difference]:
    """What the mode found wrong (empty when it passes)."""
    n, m = len(ctx.calls), len(ctx.expected)
    if mode in ORDERED_MODES:
        if len(chain) < m or (mode == "strict" and n != m):
            ctx.ordered_diffs(chain, blocks, strict=mode == "strict")
    elif mode == "subset":
        covered = set().union(*ctx.adj) if ctx.adj else set()
        if len(covered) < n:
            ctx.subset_diffs(covered)
    elif sum(r >= 0 for r in match_l) < m or (mode == "unordered" and n != m):
        ctx.pairing_diffs(match_l, unordered=mode == "unordered")
    diffs = sorted(ctx.diffs, key=diff_order)
    if diffs and mode in ("strict", "unordered") and n != m:
        diffs.append(explain.count(ctx.frame, m, n, path))
    return diffs


def _argument_score(
    unit: Unit,
    calls: Sequence[Call],
    plan: Plan,
    by_name: dict[str, list[int]],
    match_l: Sequence[int],
    shares: Shares,
    short: set[str],
) -> None:
    """Optimal assignment of argument agreement within each tool name. `short`: the
    tools with an unpaired expected call that lists keys; the others score their
    maximum."""
    for name, rows, den, exact in plan.listed:
        unit.arg_den += den
        if name not in short:
            unit.arg_num += den  # compatible pairs agree on every listed key: the maximum
            continue
        cols = by_name.get(name)
        if not cols:
            continue
        position = {a: k for k, a in enumerate(cols)}
        paired = [position.get(match_l[e.index], -1) for e in rows]
        unit.arg_num += best_total(rows, cols, paired, shares, exact)
