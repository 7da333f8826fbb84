"""The differences of one evaluation, mode by mode, with their sentences."""

from __future__ import annotations

from collections.abc import Sequence

from . import explain
from .agreement import best_agreement
from .expected import ExpectedCall
from .explain import Frame
from .result import Difference
from .shares import Shares
from .types import Call


class Differences:
    """Builds the differences of one evaluation (docs/matching.md, "Differences")."""

    def __init__(
        self,
        calls: Sequence[Call],
        expected: Sequence[ExpectedCall],
        frame: Frame,
        by_name: dict[str, list[int]],
        adj: list[list[int]],
        shares: Shares,
        per_name: dict[str, tuple[int, float]] | None = None,
    ) -> None:
        self.calls = calls
        self.per_name = per_name  # name -> (expected calls, their weight), if known
        self.expected = expected
        self.frame = frame
        self.by_name = by_name
        self.adj = adj
        self.shares = shares
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
                for i, k in self._agreement([self.expected[j] for j in rows], free):
                    paired[rows[i]] = free[k]
            if self.per_name is not None:
                n_expected = self.per_name[name][0]
            else:
                n_expected = sum(1 for e in self.expected if e.name == name)
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

    def _agreement(self, rows: list[ExpectedCall], free: list[int]) -> list[tuple[int, int]]:
        """Rows paired with free calls by the optimal assignment of (unweighted) shares."""
        return best_agreement(rows, free, self.shares, weighted=False)[1]

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
        block_of: dict[int, int] = {}  # filled on first use: most failures are not out of order
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
            if not block_of:
                for b, (s, t) in enumerate(blocks):
                    for x in range(s, t):
                        block_of[x] = b
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
            if rows:  # the first row agreeing most with the call
                best = rows[self.shares.closest(rows, a)]
                detail = explain.mismatch(self.frame, best, a, call)
            self.diffs.append(explain.unexpected(self.frame, a, call, detail))


def diff_order(d: Difference) -> tuple[int, int, int]:
    """By expected index, then by actual position."""
    if d.expected_index is not None:
        return (0, d.expected_index, d.actual_index or 0)
    return (1, d.actual_index or 0, 0)
