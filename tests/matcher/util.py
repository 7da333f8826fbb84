"""Small builders shared by the matcher tests."""

from __future__ import annotations

from typing import Any

from tooltrail.matcher import Call, Result, Trajectory, parse_expectation, score


def call(name: str, step: int | None = None, error: bool | str | None = None,
         result: Any = None, **arguments: Any) -> Call:  # fmt: skip
    """`call("lookup", order_id=1)`."""
    return Call(name, arguments, result=result, error=error, step=step)


def calls(*items: str | Call) -> list[Call]:
    """`calls("a", "b", call("c", x=1))`: names become argument-less calls."""
    return [Call(c) if isinstance(c, str) else c for c in items]


def run(expectation: dict[str, Any], actual: list[Call] | Trajectory) -> Result:
    """Score and return the single result."""
    traj = actual if isinstance(actual, Trajectory) else Trajectory.from_calls(actual)
    results = score(parse_expectation(expectation), traj)
    assert len(results) == 1
    return results[0]


def names(*expected: str | dict[str, Any], **options: Any) -> dict[str, Any]:
    """An expectation listing calls (names or full call dicts)."""
    items = [{"name": e} if isinstance(e, str) else e for e in expected]
    return {"calls": items, **options}
