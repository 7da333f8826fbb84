"""Pairing algorithms: maximum (weighted) bipartite matching and optimal assignment.

Everything here is polynomial: augmenting paths (Kuhn, with a greedy start) for
matchings, the Hungarian method (SciPy's `linear_sum_assignment`, or a small
pure-Python version for tiny problems) for assignments.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from itertools import permutations
from math import perm
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # NumPy is imported where it is used: else every process pays its memory
    import numpy as np
    from numpy.typing import NDArray

_BRUTE_FORCE = 24  # assignments up to this many candidate pairings are enumerated


def max_matching(
    adj: Sequence[Sequence[int]],
    n_right: int,
    order: Sequence[int] | None = None,
    start: Sequence[tuple[int, int]] = (),
) -> list[int]:
    """A maximum matching of left vertices to right vertices.

    `adj[i]` lists the right vertices left vertex `i` may pair with (left vertices
    with identical neighbourhoods may share one list object). Left vertices are
    added in `order` (default: index order); a vertex once matched stays matched,
    so adding them by decreasing weight yields a maximum-weight matching for
    weights on the left side (the matchable sets form a matroid). `start`: (left,
    right) pairs of a matching to grow from (for unweighted matchings: it need not
    follow `order`). Returns `match_left` (-1 where unmatched).
    """
    n_left = len(adj)
    match_l = [-1] * n_left
    match_r = [-1] * n_right
    for i, r in start:
        match_l[i] = r
        match_r[r] = i
    seq = range(n_left) if order is None else order
    # Greedy start: pair with a free neighbour directly. Right vertices matched here
    # stay matched, so a shared list is scanned once from where it was left.
    pending = []
    resume: dict[int, int] = {}
    for i in seq:
        if match_l[i] >= 0:
            continue
        row = adj[i]
        key = id(row)
        p = resume.get(key, 0)
        size = len(row)
        while p < size and match_r[row[p]] >= 0:
            p += 1
        if p < size:
            r = row[p]
            match_r[r] = i
            match_l[i] = r
            p += 1
        elif size:
            pending.append(i)
        resume[key] = p
    if not pending:
        return match_l
    stamp = [0] * n_right
    for mark, root in enumerate(pending, 1):
        augment(root, adj, match_l, match_r, stamp, mark)
    return match_l


def augment(
    root: int,
    adj: Sequence[Sequence[int]],
    match_l: list[int],
    match_r: list[int],
    stamp: list[int],
    mark: int,
) -> bool:
    """Find an augmenting path from the free left vertex `root` and flip it.

    Iterative DFS; right vertices whose `stamp` equals `mark` are not revisited.
    """
    stack: list[tuple[int, int]] = [(root, 0)]
    found = -1
    while stack:
        u, pos = stack[-1]
        nbrs = adj[u]
        advanced = False
        while pos < len(nbrs):
            r = nbrs[pos]
            pos += 1
            if stamp[r] == mark:
                continue
            stamp[r] = mark
            stack[-1] = (u, pos)
            if match_r[r] < 0:
                found = r
            else:
                stack.append((match_r[r], 0))
                advanced = True
            break
        if found >= 0:
            break
        if not advanced:
            stack.pop()
    if found < 0:
        return False
    # Flip the path: each vertex on the stack takes its successor's partner.
    r = found
    for k in range(len(stack) - 1, -1, -1):
        u = stack[k][0]
        match_r[r] = u
        match_l[u], r = r, match_l[u]
    return True


def has_perfect_matching(adj: Sequence[Sequence[int]], n_right: int) -> bool:
    """True when every left vertex can be paired with a distinct right vertex."""
    if len(adj) > n_right:
        return False
    return all(r >= 0 for r in max_matching(adj, n_right))


def optimal_assignment(
    scores: Sequence[Sequence[float]] | NDArray[np.float64],
) -> list[tuple[int, int]]:
    """Pairs (row, col) maximising the total score (rows or cols may stay unpaired).

    Deterministic for a given input.
    """
    n = len(scores)
    m = len(scores[0]) if n else 0
    if n == 0 or m == 0:
        return []
    if n == 1 or m == 1:  # the first largest score (as max by (score, -index))
        cells = [float(x) for x in scores[0]] if n == 1 else [float(r[0]) for r in scores]
        best = 0
        top = cells[0]
        for k in range(1, len(cells)):
            if cells[k] > top:
                best, top = k, cells[k]
        return [(0, best)] if n == 1 else [(best, 0)]
    if perm(max(n, m), min(n, m)) <= _BRUTE_FORCE:
        return _tiny_assignment(scores, n, m)
    # imported on first use: SciPy's optimize package costs memory in every process that
    # imports the matcher, and most trajectories never need it
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(np.asarray(scores, dtype=float), maximize=True)
    return [(int(i), int(j)) for i, j in zip(rows, cols, strict=True)]


def _tiny_assignment(
    scores: Sequence[Sequence[float]] | NDArray[np.float64], n: int, m: int
) -> list[tuple[int, int]]:
    """Exhaustive search, cheaper than SciPy's call overhead for a handful of calls."""
    best: tuple[float, ...] = ()
    best_total = -1.0
    if n == 2 and m == 2:  # the commonest shape: two permutations, the first on ties
        a, b = scores[0], scores[1]
        if float(a[1]) + float(b[0]) > float(a[0]) + float(b[1]):
            return [(0, 1), (1, 0)]
        return [(0, 0), (1, 1)]
    if n == 2 or m == 2:  # the common shape, unrolled (same order, same comparisons)
        a, b = scores[0], scores[1]
        if n == 2:
            for j, k in permutations(range(m), 2):
                total = float(a[j]) + float(b[k])
                if total > best_total:
                    best_total, best = total, (j, k)
            return [(0, int(best[0])), (1, int(best[1]))] if best else []
        for i, h in permutations(range(n), 2):
            total = float(scores[i][0]) + float(scores[h][1])
            if total > best_total:
                best_total, best = total, (i, h)
        return sorted([(int(best[0]), 0), (int(best[1]), 1)]) if best else []
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


# A chain node: what one step added, and the chain before it. A single-call step adds
# one (expected, actual) pair, kept as is; a larger step a tuple of pairs.
Node = tuple[tuple[int, int] | tuple[tuple[int, int], ...], "Node | None"]


def in_order_greedy(compat: Sequence[Sequence[int]], m: int) -> list[tuple[int, int]] | None:
    """The (expected, actual) pairs of the leftmost embedding of all `m` expected calls
    as a subsequence of the actual calls in their recorded order, or None."""
    j = 0
    pairs = []
    for a, row in enumerate(compat):
        if j < m and j in row:
            pairs.append((j, a))
            j += 1
    return pairs if j == m else None


def lcs_chain(
    compat: Sequence[Sequence[int]], blocks: Sequence[tuple[int, int]]
) -> list[tuple[int, int]]:
    """A longest common subsequence of actual calls and expected calls.

    `compat[a]` lists (ascending) the expected indices actual call `a` is compatible
    with; `blocks` are the half-open index ranges of steps, within which actual
    calls may be reordered freely (never across). Returns the (expected, actual)
    pairs of one longest chain, by expected index. Sparse patience sorting:
    O(r log n) for single-call steps, r the number of compatible pairs.
    """
    tails: list[int] = []  # tails[k]: least last expected index of a chain of length k+1
    nodes: list[Node] = []
    for start, end in blocks:
        if end - start == 1:
            for j in reversed(compat[start]):
                k = bisect_left(tails, j)
                if k == len(tails):
                    tails.append(j)
                    nodes.append(((j, start), nodes[k - 1] if k else None))
                elif j < tails[k]:
                    tails[k] = j
                    nodes[k] = ((j, start), nodes[k - 1] if k else None)
            continue
        _block(compat, start, end, tails, nodes)
    out: list[tuple[int, int]] = []
    cur = nodes[-1] if nodes else None
    while cur is not None:
        added = cur[0]
        if type(added[0]) is int:
            out.append(added)
        else:
            out.extend(added)  # type: ignore[arg-type]
        cur = cur[1]
    out.sort()
    return out


def _block(
    compat: Sequence[Sequence[int]], start: int, end: int, tails: list[int], nodes: list[Node]
) -> None:
    """Extend chains by a step of several calls, which may take any order."""
    nbrs: dict[int, list[int]] = {}
    for a in range(start, end):
        for j in compat[a]:
            nbrs.setdefault(j, []).append(a - start)
    cs = sorted(nbrs)
    adj = [nbrs[j] for j in cs]  # left vertex p is expected call cs[p]
    size = end - start
    best: dict[int, tuple[int, Node]] = {}
    last_k = -1
    stamp = [0] * size
    mark = 0
    for p, first in enumerate(cs):
        k = bisect_left(tails, first)  # chains of length k end before `first`
        if k == last_k:
            continue  # the window starting earlier with the same k dominates
        last_k = k
        prev = nodes[k - 1] if k else None
        match_l = [-1] * len(cs)
        match_r = [-1] * size
        got = 0
        for q in range(p, len(cs)):
            mark += 1
            if augment(q, adj, match_l, match_r, stamp, mark):
                got += 1
                j = cs[q]
                length = k + got
                if length not in best or j < best[length][0]:
                    pairs = tuple(
                        sorted((cs[u], start + a) for a, u in enumerate(match_r) if u >= 0)
                    )
                    best[length] = (j, (pairs, prev))
                if got == size:
                    break
    for length in sorted(best):
        j, node = best[length]
        if length > len(tails):
            tails.append(j)
            nodes.append(node)
        elif j < tails[length - 1]:
            tails[length - 1] = j
            nodes[length - 1] = node
