"""Argument agreement: the share of each expected call's listed keys an actual call meets.

Built column-wise so that a literal key costs one dictionary lookup per expected call
and an operator shared by many expected calls is evaluated once per actual call:
`argument_score` stays fast when hundreds of calls of one tool are compared.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .assign import optimal_assignment
from .expected import ExpectedCall
from .values import ABSENT_TEST, LITERAL_TEST, canon_scalar

if TYPE_CHECKING:  # NumPy is imported on first use (above SMALL cells): it costs memory
    import numpy as np
    from numpy.typing import NDArray

SMALL = 64  # up to this many cells, plain Python is faster than numpy


def share_matrix(
    rows: Sequence[ExpectedCall], col_args: Sequence[Any], *, weighted: bool = True
) -> NDArray[np.float64]:
    """[i, j]: (weight of row i ×) the share of row i's listed keys column j meets."""
    import numpy as np

    n = len(col_args)
    m = np.zeros((len(rows), n))
    maps = [a if isinstance(a, Mapping) else None for a in col_args]
    buckets: dict[str, dict[Any, list[int]]] = {}
    vectors: dict[tuple[str, Any], NDArray[np.float64]] = {}
    for i, e in enumerate(rows):
        listed = e.listed
        if listed is None:
            continue
        tests = listed.key_tests()
        row = m[i]
        for key, kind, payload in tests:
            if kind == LITERAL_TEST:
                hit = vectors.get((key, payload))
                if hit is None:
                    b = buckets.get(key)
                    if b is None:
                        b = buckets[key] = _buckets(maps, key)
                    hit = np.zeros(n)
                    hit[b.get(payload, [])] = 1.0
                    vectors[(key, payload)] = hit
                row += hit
                continue
            vec = vectors.get((key, payload[0]))
            if vec is None:
                if kind == ABSENT_TEST:
                    vec = np.array([a is not None and key not in a for a in maps], dtype=float)
                else:
                    match = payload[1]
                    vec = np.array(
                        [a is not None and key in a and bool(match(a[key])) for a in maps],
                        dtype=float,
                    )
                vectors[(key, payload[0])] = vec
            row += vec
        row *= (e.weight if weighted else 1.0) / len(tests)
    return m


def _buckets(maps: Sequence[Mapping[str, Any] | None], key: str) -> dict[Any, list[int]]:
    out: dict[Any, list[int]] = {}
    for j, a in enumerate(maps):
        if a is not None and key in a:
            c = canon_scalar(a[key])
            if c is not None:
                out.setdefault(c, []).append(j)
    return out


def best_agreement(
    rows: Sequence[ExpectedCall], col_args: Sequence[Any], *, weighted: bool = True
) -> tuple[float, list[tuple[int, int]]]:
    """The optimal assignment of rows to columns by agreement: (total, pairs)."""
    if not rows or not col_args:
        return 0.0, []
    if len(rows) * len(col_args) <= SMALL:
        small = [[(e.weight if weighted else 1.0) * _share(e, a) for a in col_args] for e in rows]
        pairs = optimal_assignment(small)
        return sum(small[i][j] for i, j in pairs), pairs
    m = share_matrix(rows, col_args, weighted=weighted)
    pairs = optimal_assignment(m)
    return float(sum(m[i, j] for i, j in pairs)), pairs


def _share(e: ExpectedCall, args: Any) -> float:
    listed = e.listed
    return listed.key_share(args) if listed is not None else 0.0


def best_total(
    rows: Sequence[ExpectedCall], col_args: Sequence[Any], paired: Sequence[int]
) -> float:
    """The maximum of Σ weight × share over one-to-one assignments of rows to columns.

    `paired[i]` is the column row i is compatibly paired with (-1: none); such a pair
    agrees on every listed key. When the best assignment of the other rows to the
    other columns already gives each of them its best share anywhere, it is optimal
    and the full assignment (cubic) is skipped.
    """
    free_rows = [rows[i] for i, c in enumerate(paired) if c < 0]
    base = sum(e.weight for e, c in zip(rows, paired, strict=True) if c >= 0)
    if not free_rows or not col_args:
        return float(base)
    if len(rows) * len(col_args) <= SMALL:
        return best_agreement(rows, col_args)[0]
    used = {c for c in paired if c >= 0}
    free_cols = [a for j, a in enumerate(col_args) if j not in used]
    bound = float(share_matrix(free_rows, col_args).max(axis=1).sum())
    value = best_agreement(free_rows, free_cols)[0] if free_cols else 0.0
    if value >= bound - 1e-9:
        return base + value
    return best_agreement(rows, col_args)[0]
