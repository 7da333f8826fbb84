"""Argument shares of one evaluation, each computed once, and a cheap proof of optimality.

`argument_score` needs the optimal assignment of a tool's expected calls to its actual
calls. When most expected calls are compatibly paired (a typical failure: one call
missing, one argument wrong), the optimum is usually "keep the compatible pairs, assign
the rest among the leftover calls". `certified_total` proves that with an LP dual
certificate computed from the unpaired rows alone, so the full share matrix and the
cubic assignment are skipped. It is used only for exact (dyadic) shares and weights,
where every optimal assignment sums to the same float whatever its order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .assign import optimal_assignment
from .expected import UNCOMPILED, ExpectedCall
from .types import Call
from .values import MISSING, ShareItems


class Shares:
    """The share of an expected call's listed keys an actual call meets, memoised."""

    __slots__ = ("calls", "memo", "verdicts")

    def __init__(self, calls: Sequence[Call]) -> None:
        self.calls = calls
        self.memo: dict[tuple[int, int], float] = {}
        # (key, `Spec.fingerprint`, actual index) -> a non-literal spec's verdict there
        self.verdicts: dict[tuple[str, str, int], bool] = {}

    def get(self, e: ExpectedCall, a: int) -> float:
        """`e.listed.key_share(calls[a].arguments)` (0.0 when `e` lists no keys)."""
        key = (e.index, a)
        s = self.memo.get(key)
        if s is None:
            fn = e.share_fn
            if fn is UNCOMPILED:
                fn = e.compile_share()
            v = self.calls[a].arguments
            if fn is not None and (type(v) is dict or isinstance(v, Mapping)):
                s = fn(v, a, self.verdicts)
            else:
                items = e.share_items
                s = self._share(e, items, a) if items is not None else 0.0
            self.memo[key] = s
        return s

    def beats(self, e: ExpectedCall, a: int, value: float) -> bool:
        """`e.weight * self.get(e, a) > value`, deciding as soon as the keys already
        missed settle it (the bound w × (n − missed) / n only falls)."""
        s = self.memo.get((e.index, a))
        if s is not None:
            return e.weight * s > value
        items = e.share_items
        v = self.calls[a].arguments
        if items is None or (type(v) is not dict and not isinstance(v, Mapping)):
            return e.weight * self.get(e, a) > value
        n = len(items)
        w = e.weight
        if w * 1.0 <= value:
            return False
        left = n  # keys that may still match
        for key, match, absent, fp in items:
            if absent:
                ok = key not in v
            else:
                x = v.get(key, MISSING)
                ok = x is not MISSING and (
                    bool(match(x)) if fp is None else self._verdict(key, fp, a, match, x)
                )
            if not ok:
                left -= 1
                if w * (left / n) <= value:
                    return False
        return w * (left / n) > value

    def closest(self, rows: Sequence[ExpectedCall], a: int) -> int:
        """The index of the first of `rows` whose share on actual call a is largest."""
        get = self.get
        best, top = 0, get(rows[0], a)
        for i in range(1, len(rows)):
            s = get(rows[i], a)
            if s > top:
                best, top = i, s
        return best

    def _verdict(self, key: str, fp: str, a: int, match: Callable[[Any], bool], x: Any) -> bool:
        vk = (key, fp, a)
        ok = self.verdicts.get(vk)
        if ok is None:
            ok = self.verdicts[vk] = bool(match(x))
        return ok

    def _share(self, e: ExpectedCall, items: ShareItems, a: int) -> float:
        """`e.listed.key_share` on call a, each non-literal spec judged once per value
        (for specs too large to compile, and arguments that are no object)."""
        v = self.calls[a].arguments
        if type(v) is not dict and not isinstance(v, Mapping):
            return e.listed.key_share(v) if e.listed is not None else 0.0
        hits = 0
        for key, match, absent, fp in items:
            if absent:
                hits += key not in v
                continue
            x = v.get(key, MISSING)
            if x is MISSING:
                continue
            hits += match(x) if fp is None else self._verdict(key, fp, a, match, x)
        return hits / len(items)

    def matrix(
        self, rows: Sequence[ExpectedCall], cols: Sequence[int], *, weighted: bool = True
    ) -> list[list[float]]:
        """[i][k]: (weight of row i ×) its share on actual call cols[k]."""
        get = self.get
        out = []
        for e in rows:  # loops: cheaper than nested comprehensions for a few calls
            w = e.weight if weighted else 1.0
            row = []
            for a in cols:
                row.append(w * get(e, a))
            out.append(row)
        return out


def small_total(rows: Sequence[ExpectedCall], cols: Sequence[int], shares: Shares) -> float:
    """The optimal assignment's Σ weight × share (as `agreement.best_agreement`)."""
    m = shares.matrix(rows, cols)
    return sum(m[i][j] for i, j in optimal_assignment(m))


def certified_total(
    rows: Sequence[ExpectedCall], cols: Sequence[int], paired: Sequence[int], shares: Shares
) -> float | None:
    """The optimal Σ weight × share when keeping the paired rows on their columns is
    provably optimal, else None. Exact (dyadic) values only.

    `paired[i]`: the position in `cols` row i is compatibly paired with (-1: none); such
    a pair scores the row's full weight. Primal: paired rows on their columns, free rows
    optimally on the free columns (value V). Dual (u_i + v_j ≥ value_ij, u, v ≥ 0):
    free rows and free columns take a dual of the small problem whose sum is V; paired
    row p takes w_p − δ and its column δ, δ the largest excess of a free row on a paired
    column. Feasible with sum base + V ⇒ optimal.
    """
    free = []
    held = []
    used = set()
    top = 0.0  # the largest weight
    for i, c in enumerate(paired):
        e = rows[i]
        if e.weight > top:
            top = e.weight
        if c < 0:
            free.append(i)
        else:
            held.append(e)
            used.add(c)
    if not used:
        return None
    col_calls = [a for k, a in enumerate(cols) if k not in used]
    quick = _column_bound(rows, top, held, free, col_calls, shares)
    if quick is not None:
        return quick
    free_cols = [k for k in range(len(cols)) if k not in used]
    val = {i: shares.matrix([rows[i]], cols)[0] for i in free}
    sub = [[val[i][k] for k in free_cols] for i in free]
    value = sum(sub[i][j] for i, j in optimal_assignment(sub)) if free_cols else 0.0
    min_paired = min(rows[i].weight for i, c in enumerate(paired) if c >= 0)
    row_u = [max([0.0, *row]) for row in sub]
    col_v = [max([0.0, *(row[k] for row in sub)]) for k in range(len(free_cols))]
    for u, v in ((row_u, [0.0] * len(free_cols)), ([0.0] * len(free), col_v)):
        if sum(u) + sum(v) != value:
            continue
        delta = max([0.0, *(val[i][k] - u[f] for f, i in enumerate(free) for k in used)])
        if delta > min_paired:
            continue
        if all(
            e.weight - delta + v[q] >= e.weight * shares.get(e, cols[k])
            for q, k in enumerate(free_cols)
            if delta > v[q]
            for e, c in zip(rows, paired, strict=True)
            if c >= 0
        ):
            base = sum(e.weight for e, c in zip(rows, paired, strict=True) if c >= 0)
            return base + value
    return None


def _column_bound(
    rows: Sequence[ExpectedCall],
    top: float,
    held: Sequence[ExpectedCall],
    free: Sequence[int],
    col_calls: Sequence[int],
    shares: Shares,
) -> float | None:
    """The cheap case of `certified_total`: no assignment beats Σ over columns of the
    best value any row can get there. A used column is bounded by the largest weight
    (`top`); a free column (`col_calls`: the actual calls of the free columns) by its
    best value over every row. When keeping the `held` (paired) rows and assigning the
    free rows optimally on the free columns reaches that bound, it is optimal (values
    exact, so the comparison is exact)."""
    base = 0.0
    for e in held:
        base += e.weight
    if base != top * len(held):
        return None
    get = shares.get
    if len(col_calls) == 1:  # the usual failure (one call missing or wrong): no assignment
        a = col_calls[0]
        value = 0.0
        for i in free:
            e = rows[i]
            v = e.weight * get(e, a)
            if v > value:
                value = v
        col_best = [value]
    else:
        sub = shares.matrix([rows[i] for i in free], col_calls)
        value = sum([sub[i][j] for i, j in optimal_assignment(sub)]) if col_calls else 0.0
        # Exact values: the bound equals base + value iff each free column's best over
        # the free rows adds up to value and no held row does better on a free column.
        col_best = []
        for q in range(len(col_calls)):
            best = 0.0
            for row in sub:
                if row[q] > best:
                    best = row[q]
            col_best.append(best)
        if sum(col_best) != value:
            return None
    beats = shares.beats
    for a, best in zip(col_calls, col_best, strict=True):
        if best < top:
            for e in held:
                if beats(e, a, best):
                    return None
    return base + value
