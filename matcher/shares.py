"""Argument shares: how many of an expected call's listed keys an actual call meets.

`ObjectSpec.key_hits` is the one definition; `Shares` is its one cache for an
evaluation (explanations and the argument score read the same cells), and `matrix`
the one place a share becomes a number.
"""

from __future__ import annotations

from collections.abc import Sequence

from .expected import ExpectedCall
from .types import Call

SMALL = 64  # the matrices up to this many cells, and the larger ones, round differently


class Shares:
    """The listed keys of an expected call that each actual call meets, memoised."""

    __slots__ = ("calls", "memo")

    def __init__(self, calls: Sequence[Call]) -> None:
        self.calls = calls
        self.memo: dict[tuple[int, int], int] = {}  # (expected index, actual index) -> hits

    def hits(self, e: ExpectedCall, a: int) -> int:
        """`e.listed.key_hits(calls[a].arguments)` (0 when `e` lists no keys)."""
        key = (e.index, a)
        h = self.memo.get(key)
        if h is None:
            listed = e.listed
            h = self.memo[key] = 0 if listed is None else listed.key_hits(self.calls[a].arguments)
        return h

    def get(self, e: ExpectedCall, a: int) -> float:
        """The share of `e`'s listed keys actual call a meets (0.0 when it lists none)."""
        listed = e.listed
        return 0.0 if listed is None else self.hits(e, a) / len(listed.entries)

    def closest(self, rows: Sequence[ExpectedCall], a: int) -> int:
        """The index of the first of `rows` whose share on actual call a is largest."""
        get = self.get
        best, top = 0, get(rows[0], a)
        for i in range(1, len(rows)):
            s = get(rows[i], a)
            if s > top:
                best, top = i, s
        return best

    def matrix(
        self, rows: Sequence[ExpectedCall], cols: Sequence[int], *, weighted: bool = True
    ) -> list[list[float]]:
        """[i][k]: (weight of row i ×) its share on actual call cols[k].

        Up to SMALL cells a cell is w × (hits / n), above w / n × hits: the two
        roundings the matcher has always used (they differ in the last bit, and so
        may break ties differently), kept so that verdicts never change."""
        small = len(rows) * len(cols) <= SMALL
        hits = self.hits
        out = []
        for e in rows:  # loops: cheaper than nested comprehensions for a few calls
            listed = e.listed
            if listed is None:
                out.append([0.0] * len(cols))
                continue
            n = len(listed.entries)
            w = e.weight if weighted else 1.0
            row = []
            if small:
                for a in cols:
                    row.append(w * (hits(e, a) / n))
            else:
                scale = w / n
                for a in cols:
                    row.append(hits(e, a) * scale)
            out.append(row)
        return out
