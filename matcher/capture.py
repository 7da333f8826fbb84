"""Turn a recorded trajectory into an expectation (a golden, regression-test trajectory)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .types import Call, Trajectory


def _escape(value: Any) -> Any:
    """A value spec that matches `value` literally (objects with `$` keys via `$literal`)."""
    if isinstance(value, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in value):
            return {"$literal": value}
        return {k: _escape(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_escape(v) for v in value]
    return value


def _expected(call: Call) -> dict[str, Any]:
    args = call.arguments
    if isinstance(args, Mapping) and not any(str(k).startswith("$") for k in args):
        return {"name": call.name, "arguments": _escape(args)}
    return {"name": call.name, "arguments": {"$literal": args}}  # matched as a whole


def expectation_from_calls(
    calls: Iterable[Call], *, match: str = "strict", arguments: str = "exact", **extra: Any
) -> dict[str, Any]:
    """The JSON form of an expectation that `calls` (one list) satisfies in every mode."""
    return {"match": match, "arguments": arguments, "calls": [_expected(c) for c in calls],
            **extra}  # fmt: skip


def expectation_from_trajectory(
    trajectory: Trajectory,
    *,
    per_turn: bool = False,
    match: str = "strict",
    arguments: str = "exact",
    **extra: Any,
) -> dict[str, Any]:
    """The JSON form of an expectation the trajectory satisfies: its calls as one list,
    or (`per_turn`) one entry per turn."""
    if not per_turn:
        return expectation_from_calls(trajectory.calls, match=match, arguments=arguments, **extra)
    turns: Sequence[Sequence[Call]] = trajectory.turns
    return {
        "match": match,
        "arguments": arguments,
        "turns": [{"calls": [_expected(c) for c in turn]} for turn in turns],
        **extra,
    }
