"""Trajectories from JSON (the `/score` body): validation with field paths, decoding.

`{"calls": [...]}` is one turn; `{"turns": [{"calls": [...]}, ...]}` is several.
Each call is `{name, arguments?, result?, error?, call_id?, step?}`. Arguments that
arrive as JSON text (OpenAI-style tool calls, maybe double-encoded) are decoded when
they decode to an object; otherwise the text is kept, as the collector does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .jsonvalue import show
from .types import Call, InvalidTrajectory, Trajectory, index_path

_CALL_FIELDS = ("name", "arguments", "result", "error", "call_id", "step")


def decode_json_text(value: Any, kinds: tuple[type, ...] = (dict, list)) -> Any:
    """Decode JSON text (twice if double-encoded) when it gives one of `kinds`; else
    return the value unchanged."""
    current = value
    for _ in range(2):
        if not isinstance(current, str):
            break
        try:
            current = json.loads(current)
        except ValueError:
            return value
    return current if isinstance(current, kinds) else value


def call_from_json(raw: Any, path: str) -> Call:
    """Validate and build one call."""
    if not isinstance(raw, Mapping):
        raise InvalidTrajectory(path, "must be an object with a `name`")
    for key in raw:
        if key not in _CALL_FIELDS:
            raise InvalidTrajectory(
                f"{path}.{key}", f"unknown field (expected {', '.join(_CALL_FIELDS)})"
            )
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidTrajectory(f"{path}.name", "must be a non-empty tool name")
    error = raw.get("error")
    if error is not None and not isinstance(error, (bool, str)):
        raise InvalidTrajectory(
            f"{path}.error", f"must be a boolean or a message, got {show(error)}"
        )
    step = raw.get("step")
    if step is not None and (isinstance(step, bool) or not isinstance(step, int)):
        raise InvalidTrajectory(f"{path}.step", f"must be an integer, got {show(step)}")
    call_id = raw.get("call_id")
    if call_id is not None and not isinstance(call_id, str):
        raise InvalidTrajectory(f"{path}.call_id", f"must be a string, got {show(call_id)}")
    arguments = raw.get("arguments")
    arguments = {} if arguments is None else decode_json_text(arguments, (dict,))
    result = decode_json_text(raw.get("result"))
    return Call(name, arguments, result=result, error=error, call_id=call_id, step=step)


def _calls(raw: Any, path: str) -> list[Call]:
    if not isinstance(raw, list):
        raise InvalidTrajectory(path, "must be a list of calls")
    return [call_from_json(c, index_path(path, i)) for i, c in enumerate(raw)]


def trajectory_from_json(data: Mapping[str, Any]) -> Trajectory:
    """A trajectory from `{"calls": [...]}` or `{"turns": [{"calls": [...]}, ...]}`
    (other keys of `data`, such as `expectation`, are ignored). Raises
    `InvalidTrajectory` naming the bad field (`calls[2].step`)."""
    if "calls" in data and "turns" in data:
        raise InvalidTrajectory("turns", "give either `calls` or `turns`, not both")
    if "turns" in data:
        turns = data["turns"]
        if not isinstance(turns, list):
            raise InvalidTrajectory("turns", "must be a list of turns")
        out = []
        for t, turn in enumerate(turns):
            if not isinstance(turn, Mapping):
                raise InvalidTrajectory(f"turns[{t}]", "must be an object with `calls`")
            for key in turn:
                if key != "calls":
                    raise InvalidTrajectory(f"turns[{t}].{key}", "unknown field (expected calls)")
            out.append(_calls(turn.get("calls", []), f"turns[{t}].calls"))
        return Trajectory(out)
    if "calls" not in data:
        raise InvalidTrajectory("calls", "required (or `turns`)")
    return Trajectory.from_calls(_calls(data["calls"], "calls"))
