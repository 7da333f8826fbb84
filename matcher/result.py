"""Results: the verdict of one expectation on one scope instance, and its differences."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

if TYPE_CHECKING:
    from .explain import Frame

_T = TypeVar("_T")

# Every kind of difference (docs/matching.md, "Differences"); the API documents this list.
DifferenceKind = Literal[
    "missing", "unexpected", "argument", "order", "count", "forbidden", "not_allowed",
    "budget", "error", "result", "turn_missing", "turn_extra",
]  # fmt: skip


@dataclass(frozen=True)
class Difference:
    """One structured difference between the expectation and what happened.

    Indices count from 0 (`expected_index` into the expected calls of the turn or
    conversation, `actual_index` into the actual calls in scope); `path` is the
    field path in the expectation (`calls[1].arguments.amount`).
    """

    kind: DifferenceKind
    message: str
    expected_index: int | None = None
    actual_index: int | None = None
    turn: int | None = None
    path: str | None = None
    expected: Any = None
    actual: Any = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form with every key of the API."""
        return {
            "kind": self.kind,
            "expected_index": self.expected_index,
            "actual_index": self.actual_index,
            "turn": self.turn,
            "path": self.path,
            "expected": self.expected,
            "actual": self.actual,
            "message": self.message,
        }


_new_object = object.__new__
_set = object.__setattr__


def new_difference(
    kind: DifferenceKind,
    message: str,
    expected_index: int | None,
    actual_index: int | None,
    turn: int | None,
    path: str | None,
    expected: Any,
    actual: Any,
) -> Difference:
    """`Difference(...)` with every field given, without the frozen `__init__`'s
    per-field `object.__setattr__` calls (the same instance state)."""
    d = _new_object(Difference)
    _set(d, "__dict__", {
        "kind": kind, "message": message, "expected_index": expected_index,
        "actual_index": actual_index, "turn": turn, "path": path, "expected": expected,
        "actual": actual,
    })  # fmt: skip
    return d


def build(cls: type[_T], state: dict[str, Any]) -> _T:
    """A frozen dataclass instance from every field by name (in field order), without
    the frozen `__init__`'s per-field `object.__setattr__` calls."""
    obj = _new_object(cls)
    _set(obj, "__dict__", state)
    return obj


@dataclass(frozen=True)
class Counts:
    """Raw pair counts of one result, summed by `micro_summary`."""

    paired_actual: int
    total_actual: int
    paired_expected_weight: float
    total_expected_weight: float
    tools: tuple[tuple[str, int, int, float, float], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, with a per-tool breakdown."""
        return {
            "paired_actual": self.paired_actual,
            "total_actual": self.total_actual,
            "paired_expected_weight": self.paired_expected_weight,
            "total_expected_weight": self.total_expected_weight,
            "tools": {
                name: {
                    "paired_actual": pa,
                    "total_actual": ta,
                    "paired_expected_weight": pw,
                    "total_expected_weight": tw,
                }
                for name, pa, ta, pw, tw in self.tools
            },
        }


@dataclass(frozen=True)
class Result:
    """The verdict of one expectation on one scope instance (conversation or turn)."""

    scope: dict[str, Any]
    passed: bool
    score: float
    precision: float
    recall: float
    f1: float
    argument_score: float
    order_score: float | None
    reason: str
    differences: tuple[Difference, ...]
    counts: Counts
    # per evaluated list of expected calls, the matching the scores count (match_l: expected
    # index -> actual index or -1) and the frame that locates its calls; read through `pairs`
    matched: tuple[tuple[Sequence[int], Frame], ...] = field(default=(), compare=False, repr=False)

    @property
    def pairs(self) -> tuple[tuple[int, int, int | None], ...]:
        """The one-to-one pairing the scores count: (expected_index, actual_index, turn),
        indexed as in `Difference` (turn: the actual call's, else the scope's)."""
        out = []
        for match_l, frame in self.matched:
            turns = frame.call_turns
            for j, a in enumerate(match_l):
                if a >= 0:
                    out.append((j, a, turns[a] if turns is not None else frame.turn))
        return tuple(out)

    @property
    def paired_actual(self) -> int:
        return self.counts.paired_actual

    @property
    def total_actual(self) -> int:
        return self.counts.total_actual

    @property
    def paired_expected_weight(self) -> float:
        return self.counts.paired_expected_weight

    @property
    def total_expected_weight(self) -> float:
        return self.counts.total_expected_weight

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: the API result minus expectation/conversation/scored_at."""
        return {
            "scope": dict(self.scope),
            "passed": self.passed,
            "score": self.score,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "argument_score": self.argument_score,
            "order_score": self.order_score,
            "reason": self.reason,
            "differences": [d.to_dict() for d in self.differences],
            "counts": self.counts.to_dict(),
            "pairs": [
                {"expected_index": j, "actual_index": a, "turn": t} for j, a, t in self.pairs
            ],
        }
