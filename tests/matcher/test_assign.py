"""Pairing algorithms against brute force."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tooltrail.matcher.assign import (
    has_perfect_matching,
    lcs_chain,
    max_matching,
    optimal_assignment,
)

FAST = settings(max_examples=150, deadline=None, derandomize=True, database=None)


def _brute_matching(adj: list[list[int]]) -> int:
    best = 0
    for choice in itertools.product(*[[-1, *row] for row in adj]):
        used = [c for c in choice if c >= 0]
        if len(used) == len(set(used)):
            best = max(best, len(used))
    return best


graphs = st.integers(0, 5).flatmap(
    lambda n_right: st.lists(
        st.lists(st.integers(0, max(n_right - 1, 0)), max_size=n_right, unique=True).map(sorted),
        max_size=5,
    ).map(lambda adj: (adj if n_right else [[] for _ in adj], n_right))
)


@FAST
@given(graph=graphs)
def test_max_matching_is_maximum(graph: tuple[list[list[int]], int]) -> None:
    adj, n_right = graph
    match = max_matching(adj, n_right)
    used = [r for r in match if r >= 0]
    assert len(used) == len(set(used))
    assert all(r in adj[i] for i, r in enumerate(match) if r >= 0)
    assert len(used) == _brute_matching(adj)


def test_max_matching_shared_rows_and_long_paths() -> None:
    row = list(range(1000))
    adj = [row] * 1000  # identical expected calls share one list
    assert sorted(max_matching(adj, 1000)) == list(range(1000))
    # a chain that forces augmenting paths of length n
    n = 2000
    chain = [[i, i + 1] if i + 1 < n else [i] for i in range(n)]
    chain = [sorted(r, reverse=True) for r in chain]
    assert all(r >= 0 for r in max_matching(chain, n, order=list(range(n - 1, -1, -1))))
    assert has_perfect_matching([[0], [0, 1]], 2)
    assert not has_perfect_matching([[0], [0]], 2)


@FAST
@given(seed=st.integers(0, 10**6), n=st.integers(1, 5), m=st.integers(1, 5))
def test_optimal_assignment_is_optimal(seed: int, n: int, m: int) -> None:
    rng = random.Random(seed)
    scores = [[rng.choice([0, 0.25, 0.5, 1.0, 2.0]) for _ in range(m)] for _ in range(n)]
    pairs = optimal_assignment(scores)
    assert len({i for i, _ in pairs}) == len(pairs) == len({j for _, j in pairs})
    got = sum(scores[i][j] for i, j in pairs)
    best = max(
        sum(scores[i][j] for i, j in zip(rows, cols, strict=True))
        for k in [min(n, m)]
        for rows in itertools.permutations(range(n), k)
        for cols in itertools.combinations(range(m), k)
    )
    assert got == pytest.approx(best)


def _brute_lcs(compat: list[list[int]], blocks: list[tuple[int, int]], m: int) -> int:
    best = 0
    orders = itertools.product(*(itertools.permutations(range(s, t)) for s, t in blocks))
    for combo in orders:
        seq = [a for block in combo for a in block]
        dp = [[0] * (m + 1) for _ in range(len(seq) + 1)]
        for i, a in enumerate(seq):
            for j in range(m):
                dp[i + 1][j + 1] = max(dp[i][j + 1], dp[i + 1][j], dp[i][j] + (j in compat[a]))
        best = max(best, dp[len(seq)][m])
    return best


@FAST
@given(
    sizes=st.lists(st.integers(1, 3), max_size=4),
    m=st.integers(0, 5),
    data=st.data(),
)
def test_lcs_chain_with_steps(sizes: list[int], m: int, data: st.DataObject) -> None:
    blocks, start = [], 0
    for s in sizes:
        blocks.append((start, start + s))
        start += s
    compat = [
        sorted(data.draw(st.lists(st.integers(0, m - 1), unique=True, max_size=m))) if m else []
        for _ in range(start)
    ]
    chain = lcs_chain(compat, blocks)
    assert len(chain) == _brute_lcs(compat, blocks, m)
    # the chain is valid: compatible, one-to-one, increasing across steps
    assert len({e for e, _ in chain}) == len({a for _, a in chain}) == len(chain)
    assert all(e in compat[a] for e, a in chain)
    block_of = {a: b for b, (s, t) in enumerate(blocks) for a in range(s, t)}
    ordered = sorted(chain)
    for (_, a1), (_, a2) in itertools.pairwise(ordered):
        assert block_of[a1] <= block_of[a2]


def _reference_tiny(scores: list[list[float]], n: int, m: int) -> list[tuple[int, int]]:
    """The generic exhaustive search, as before the unrolled two-row/column case."""
    from itertools import permutations

    best: tuple[int, ...] = ()
    best_total = -1.0
    if n <= m:
        for cols in permutations(range(m), n):
            total = sum(float(scores[i][j]) for i, j in enumerate(cols))
            if total > best_total:
                best_total, best = total, cols
        return [(i, int(j)) for i, j in enumerate(best)]
    for rows in permutations(range(n), m):
        total = sum(float(scores[i][j]) for j, i in enumerate(rows))
        if total > best_total:
            best_total, best = total, rows
    return sorted((int(i), j) for j, i in enumerate(best))


@pytest.mark.parametrize("shape", [(2, 2), (2, 3), (3, 2), (2, 4), (4, 2)])
def test_tiny_assignment_two_rows_or_columns_keeps_ties(shape: tuple[int, int]) -> None:
    from tooltrail.matcher.assign import _tiny_assignment

    rng = random.Random(sum(shape))
    n, m = shape
    for _ in range(300):
        scores = [[rng.choice([0.0, 0.5, 1.0, 0.25]) for _ in range(m)] for _ in range(n)]
        assert _tiny_assignment(scores, n, m) == _reference_tiny(scores, n, m)


def test_one_row_or_column_takes_the_first_best() -> None:
    rng = random.Random(3)
    for _ in range(300):
        k = rng.randrange(1, 7)
        cells = [rng.choice([0.0, 0.25, 0.5, 1.0]) for _ in range(k)]
        first = max(range(k), key=lambda j: (cells[j], -j))
        assert optimal_assignment([cells]) == [(0, first)]
        assert optimal_assignment([[c] for c in cells]) == [(first, 0)]
