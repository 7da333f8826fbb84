"""Compiled expected calls, and the per-list plan the scorer reuses on every evaluation."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .types import Call
from .values import ObjectSpec, Spec

ORDERED_MODES = frozenset({"strict", "in_order"})


def _always(_: Any) -> bool:
    return True


@dataclass(frozen=True, eq=False)
class ExpectedCall:
    """One expected call, compiled. `mode` is its effective arguments mode."""

    index: int
    path: str
    name: str
    mode: str
    weight: float = 1.0
    arguments: Spec | None = None
    arguments_match: str | None = None
    error: bool | Spec | None = None
    result: Spec | None = None
    # What compatibility checks: None when arguments are not checked.
    checked_arguments: Spec | None = field(default=None, repr=False)
    # A top-level key with a scalar literal value, to look candidates up by value.
    index_key: tuple[str, tuple[str, Any]] | None = field(default=None, repr=False)
    # The compatibility test for a call of this name: on the arguments alone when no
    # `error`/`result` spec is given (`args_only`), else on the whole call.
    check: Callable[[Any], bool] = field(default=_always, repr=False)
    args_only: bool = field(default=True, repr=False)
    # The object spec whose top-level keys `argument_score` counts, if any (fixed at parse
    # time: read on every evaluation that fails).
    listed: ObjectSpec | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        spec = self.checked_arguments
        if isinstance(spec, ObjectSpec):
            object.__setattr__(self, "index_key", spec.index_key())
            if spec.entries:
                object.__setattr__(self, "listed", spec)
        if self.error is None and self.result is None:
            object.__setattr__(self, "check", _always if spec is None else spec.matches)
        else:
            object.__setattr__(self, "check", self.compatible_same_name)
            object.__setattr__(self, "args_only", False)

    def compatible(self, call: Call) -> bool:
        """Name, arguments, error and result specs all hold (docs/matching.md, "Expected calls")."""
        return call.name == self.name and self.compatible_same_name(call)

    def compatible_same_name(self, call: Call) -> bool:
        """`compatible` for a call already known to have this name."""
        spec = self.checked_arguments
        if spec is not None and not spec.matches(call.arguments):
            return False
        err = self.error
        if err is not None:
            if isinstance(err, bool):
                if call.failed is not err:
                    return False
            elif not call.failed or not err.matches(error_text(call)):
                return False
        return self.result is None or self.result.matches(call.result)

    def to_dict(self) -> dict[str, Any]:
        """The normalised JSON form."""
        out: dict[str, Any] = {"name": self.name}
        if self.arguments is not None:
            out["arguments"] = self.arguments.to_json()
        if self.arguments_match is not None:
            out["arguments_match"] = self.arguments_match
        if self.weight != 1:
            out["weight"] = self.weight
        if self.error is not None:
            out["error"] = self.error if isinstance(self.error, bool) else self.error.to_json()
        if self.result is not None:
            out["result"] = self.result.to_json()
        return out


def exact_values(rows: Sequence[ExpectedCall]) -> bool:
    """True when every weight × share of these rows, and every sum of them, is exact:
    key counts are powers of two and weights multiples of 1/1024 below 2**16."""
    for e in rows:
        listed = e.listed
        n = len(listed.entries) if listed is not None else 1
        w = float(e.weight)
        if n & (n - 1) or n > 1024 or w > 2**16 or not (w * 1024).is_integer():
            return False
    return True


def error_text(call: Call) -> str:
    """The error message of a call ("" when it has none)."""
    return call.error if isinstance(call.error, str) else ""


class Plan:
    """What scoring needs from a list of expected calls, computed once at parse time."""

    __slots__ = (
        "calls", "checks", "listed", "order", "per_name", "total_weight", "weights",
    )  # fmt: skip

    def __init__(self, calls: tuple[ExpectedCall, ...]) -> None:
        self.calls = calls
        self.weights = tuple(e.weight for e in calls)
        self.total_weight = float(sum(self.weights))
        # Adding vertices by decreasing weight gives a maximum-weight matching.
        uniform = all(w == 1 for w in self.weights)
        self.order = None if uniform else sorted(range(len(calls)), key=lambda j: -calls[j].weight)
        self.per_name: dict[str, tuple[int, float]] = {}
        listed: dict[str, list[ExpectedCall]] = {}
        for e in calls:
            count, weight = self.per_name.get(e.name, (0, 0.0))
            self.per_name[e.name] = (count + 1, weight + e.weight)
            if e.listed is not None:
                listed.setdefault(e.name, []).append(e)
        # dup_of[j]: the first expected call that accepts exactly the calls j accepts.
        first: dict[str, int] = {}
        dup_of = []
        for j, e in enumerate(calls):
            body = e.to_dict()
            body.pop("weight", None)
            key = json.dumps([e.mode, body], sort_keys=True, default=str)
            dup_of.append(first.setdefault(key, j))
        # What `modes.compatibility` reads of each expected call: the first identical
        # call, name, check, whether the check takes the arguments alone, and the key
        # and scalar value to look candidates up by (None: no such key).
        self.checks = tuple(
            (dup_of[j], e.name, e.check, e.args_only,
             *((e.index_key[0], e.index_key[1][1]) if e.index_key else (None, None)))
            for j, e in enumerate(calls)
        )  # fmt: skip
        # argument_score: per tool name, the calls listing keys, their weight, and
        # whether their weighted shares add up exactly (see `exact_values`).
        self.listed = tuple(
            (name, tuple(rows), float(sum(e.weight for e in rows)), exact_values(rows))
            for name, rows in listed.items()
        )


@dataclass(frozen=True, eq=False)
class TurnSpec:
    """The expected calls of one turn of a per-turn expectation."""

    match: str
    arguments: str
    calls: tuple[ExpectedCall, ...]
    match_given: str | None = None
    arguments_given: str | None = None
    plan: Plan = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "plan", Plan(self.calls))

    def to_dict(self) -> dict[str, Any]:
        """The normalised JSON form."""
        out: dict[str, Any] = {}
        if self.match_given is not None:
            out["match"] = self.match_given
        if self.arguments_given is not None:
            out["arguments"] = self.arguments_given
        out["calls"] = [c.to_dict() for c in self.calls]
        return out
