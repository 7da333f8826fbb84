"""Argument agreement: the optimal assignment of expected calls to actual calls by share."""

from __future__ import annotations

from collections.abc import Sequence

from .assign import optimal_assignment
from .expected import ExpectedCall
from .shares import SMALL, Shares


def best_agreement(
    rows: Sequence[ExpectedCall], cols: Sequence[int], shares: Shares, *, weighted: bool = True
) -> tuple[float, list[tuple[int, int]]]:
    """The optimal assignment of rows to the actual calls `cols` by (weighted)
    share: (total, pairs of positions in rows and cols)."""
    if not rows or not cols:
        return 0.0, []
    m = shares.matrix(rows, cols, weighted=weighted)
    pairs = optimal_assignment(m)
    return sum(m[i][j] for i, j in pairs), pairs


def best_total(
    rows: Sequence[ExpectedCall],
    cols: Sequence[int],
    paired: Sequence[int],
    shares: Shares,
    exact: bool,
) -> float:
    """The maximum of Σ weight × share over one-to-one assignments of rows to `cols`.

    `paired[i]` is the position in `cols` row i is compatibly paired with (-1: none);
    such a pair agrees on every listed key; `exact`: the rows' weighted shares are
    exact (`expected.exact_values`). The full assignment is skipped when keeping
    the compatible pairs is provably optimal: up to SMALL cells by an LP certificate
    (exact shares only, where every order of summing gives the same float), above it
    when the best assignment of the other rows to the other columns already gives each
    of them its best share anywhere.
    """
    if len(rows) * len(cols) <= SMALL:
        total = _certified_total(rows, cols, paired, shares) if exact else None
        return best_agreement(rows, cols, shares)[0] if total is None else total
    free_rows = [rows[i] for i, c in enumerate(paired) if c < 0]
    base = sum(e.weight for e, c in zip(rows, paired, strict=True) if c >= 0)
    if not free_rows:
        return float(base)
    used = {c for c in paired if c >= 0}
    free_cols = [a for k, a in enumerate(cols) if k not in used]
    # The bound: each free row's best share anywhere (shares are rationals of small
    # denominators: the bound is met exactly or missed by far more than the tolerance).
    bound = 0.0
    for row in shares.matrix(free_rows, cols):
        bound += max(row)
    value = best_agreement(free_rows, free_cols, shares)[0] if free_cols else 0.0
    if value >= bound - 1e-9:
        return base + value
    return best_agreement(rows, cols, shares)[0]


def _certified_total(
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
    for a, best in zip(col_calls, col_best, strict=True):
        if best < top:
            for e in held:
                if e.weight * get(e, a) > best:
                    return None
    return base + value
