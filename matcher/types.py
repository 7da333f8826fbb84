"""Frozen domain types of the matcher: calls, trajectories, results and errors."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

_IDENT = re.compile(r"[A-Za-z0-9_$\-]+")


def key_path(prefix: str, key: str) -> str:
    """Append an object key to a field path: `a.b`, or `a["x.y"]` for awkward keys."""
    # An ASCII identifier (`order_id`) is always plain: skip the regex for the usual key.
    if (key.isascii() and key.isidentifier()) or _IDENT.fullmatch(key):
        return f"{prefix}.{key}" if prefix else key
    return f"{prefix}[{json.dumps(key, ensure_ascii=False)}]"


def index_path(prefix: str, index: int) -> str:
    """Append a list index to a field path: `calls[2]`."""
    return f"{prefix}[{index}]"


class InvalidExpectation(ValueError):
    """An expectation that cannot be used; `path` names the bad field ("" for the whole)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


class InvalidTrajectory(ValueError):
    """A trajectory that cannot be scored (bad call fields, decreasing steps)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


def _empty_arguments() -> Any:
    return {}


@dataclass(frozen=True, eq=True)
class Call:
    """One tool call as scored: `arguments` is the decoded JSON (None becomes `{}`).

    `error` is `True`, a message, or `None`/`False`; the call *failed* when it is
    `True` or a non-empty message. `step` groups parallel calls within a turn.
    """

    name: str
    arguments: Any = field(default_factory=_empty_arguments)
    result: Any = None
    error: bool | str | None = None
    call_id: str | None = None
    step: int | None = None

    def __post_init__(self) -> None:
        if self.arguments is None:
            object.__setattr__(self, "arguments", {})

    @property
    def failed(self) -> bool:
        """True when the call reported an error."""
        e = self.error
        return e is True or (isinstance(e, str) and e != "")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (only the fields that are set)."""
        out: dict[str, Any] = {"name": self.name, "arguments": self.arguments}
        if self.result is not None:
            out["result"] = self.result
        if self.error is not None and self.error is not False:
            out["error"] = self.error
        if self.call_id is not None:
            out["call_id"] = self.call_id
        if self.step is not None:
            out["step"] = self.step
        return out


def _check_turn(calls: Sequence[Any], prefix: str) -> tuple[Call, ...]:
    out = tuple(calls)
    last_step: int | None = None  # the step of the previous call (None: own step)
    top: int | None = None  # the highest step seen so far
    for i, call in enumerate(out):
        path = index_path(prefix, i)
        if not isinstance(call, Call):
            raise InvalidTrajectory(path, "must be a Call")
        if not isinstance(call.name, str) or not call.name:
            raise InvalidTrajectory(f"{path}.name", "must be a non-empty string")
        if call.error is not None and not isinstance(call.error, (bool, str)):
            raise InvalidTrajectory(f"{path}.error", "must be a boolean or a message")
        step = call.step
        if step is None:
            last_step = None
            continue
        if isinstance(step, bool) or not isinstance(step, int):
            raise InvalidTrajectory(f"{path}.step", "must be an integer")
        if step != last_step and top is not None and step <= top:
            why = (
                f"step {step} after step {top}"
                if step < top
                else f"the calls of step {step} are not consecutive"
            )
            raise InvalidTrajectory(
                f"{path}.step", f"steps must not decrease along the list ({why})"
            )
        top = step if top is None else max(top, step)
        last_step = step
    return out


@dataclass(frozen=True, eq=True)
class Trajectory:
    """The tool calls of one conversation, grouped in turns, each in execution order.

    Steps must not decrease within a turn (else `InvalidTrajectory`); calls that
    share a step are parallel calls and may be reordered when matching.
    """

    turns: Sequence[Sequence[Call]]
    single_turn: bool = field(default=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.turns, (str, bytes)) or not isinstance(self.turns, Iterable):
            raise InvalidTrajectory("turns", "must be a list of turns")
        turns = []
        for t, calls in enumerate(self.turns):
            prefix = "calls" if self.single_turn else f"turns[{t}].calls"
            if isinstance(calls, (str, bytes)) or not isinstance(calls, Iterable):
                raise InvalidTrajectory(f"turns[{t}]", "must be a list of calls")
            turns.append(_check_turn(list(calls), prefix))
        object.__setattr__(self, "turns", tuple(turns))

    @classmethod
    def from_calls(cls, calls: Iterable[Call]) -> Trajectory:
        """A one-turn trajectory."""
        return cls((tuple(calls),), single_turn=True)

    @cached_property
    def calls(self) -> tuple[Call, ...]:
        """Every call of the conversation, turn after turn."""
        return tuple(c for turn in self.turns for c in turn)

    @cached_property
    def call_turns(self) -> tuple[int, ...]:
        """The turn index of each call of `calls`."""
        return tuple(t for t, turn in enumerate(self.turns) for _ in turn)

    @cached_property
    def name_positions(self) -> dict[str, list[int]]:
        """The positions in `calls` of each tool name (cached: read-only by contract)."""
        return name_index(self.calls)

    @cached_property
    def blocks(self) -> tuple[tuple[int, int], ...]:
        """The steps of `calls` as index ranges; a step never spans two turns."""
        out: list[tuple[int, int]] = []
        offset = 0
        for turn in self.turns:
            out.extend(step_blocks(turn, offset))
            offset += len(turn)
        return tuple(out)

    @cached_property
    def turn_blocks(self) -> tuple[tuple[tuple[int, int], ...], ...]:
        """The steps of each turn as index ranges within the turn."""
        return tuple(tuple(step_blocks(turn)) for turn in self.turns)


def enum_key(value: str) -> str:
    """Normalise an enum value: case-insensitive, `-`, `_` and space are the same."""
    return value.strip().lower().replace("-", "_").replace(" ", "_")


def step_blocks(calls: Sequence[Call], offset: int = 0) -> list[tuple[int, int]]:
    """Half-open index ranges of the steps of one turn (a call without a step is alone)."""
    out: list[tuple[int, int]] = []
    start = 0
    n = len(calls)
    for i in range(1, n + 1):
        if i == n or calls[i].step is None or calls[i].step != calls[start].step:
            out.append((start + offset, i + offset))
            start = i
    return out


def name_index(calls: Sequence[Call]) -> dict[str, list[int]]:
    """The positions of the calls of each tool name."""
    by_name: dict[str, list[int]] = {}
    for i, c in enumerate(calls):
        lst = by_name.get(c.name)
        if lst is None:
            by_name[c.name] = [i]
        else:
            lst.append(i)
    return by_name
