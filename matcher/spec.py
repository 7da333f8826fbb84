"""Expectations: parse and validate the JSON/YAML form (docs/matching.md) into frozen specs.

Every problem raises `InvalidExpectation` naming the path of the bad field and why,
e.g. `calls[2].arguments.amount: unknown operator $aprox`.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from .compiler import compile_spec
from .expected import ExpectedCall, Plan, TurnSpec
from .selector import Selector, glob_match, parse_selector
from .types import InvalidExpectation, enum_key, index_path, key_path
from .values import Spec, show

MODES = ("strict", "in_order", "unordered", "superset", "subset")
ARGUMENT_MODES = ("ignore", "partial", "exact")
SCOPES = ("conversation", "turn", "each_turn")
MODE_ALIASES = {
    "exact": "strict",
    "any_order": "unordered",
    "contains": "superset",
    "within": "subset",
}

TOP_FIELDS = (
    "id", "description", "suite", "selector", "scope", "turn", "match", "arguments", "calls",
    "turns", "allow_extra_turns", "forbid", "allow", "max_calls", "min_calls", "require_no_errors",
)  # fmt: skip
CALL_FIELDS = ("name", "arguments", "arguments_match", "weight", "error", "result")
TURN_FIELDS = ("match", "arguments", "calls")
ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"  # an expectation id, whole
_ID = re.compile(ID_PATTERN)


@dataclass(frozen=True, eq=False)
class Expectation:
    """A validated expectation (build it with `parse_expectation`)."""

    id: str | None
    description: str | None
    selector: Selector
    scope: str
    turn: int | None
    match: str
    arguments: str
    calls: tuple[ExpectedCall, ...] | None
    turns: tuple[TurnSpec, ...] | None
    allow_extra_turns: bool
    forbid: tuple[str, ...]
    allow: tuple[str, ...] | None
    max_calls: int | None
    min_calls: int | None
    require_no_errors: bool
    suite: str | None = None  # the suite that registered it (`tooltrail apply`); not scored
    plan: Plan | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "plan", None if self.calls is None else Plan(self.calls))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expectation) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(json.dumps(self.to_dict(), sort_keys=True, default=str))

    def to_dict(self) -> dict[str, Any]:
        """The normalised JSON form; `parse_expectation(e.to_dict())` gives `e` back."""
        out: dict[str, Any] = {}
        if self.id is not None:
            out["id"] = self.id
        if self.description is not None:
            out["description"] = self.description
        if self.suite is not None:
            out["suite"] = self.suite
        sel = self.selector.to_dict()
        if sel:
            out["selector"] = sel
        out["scope"] = self.scope
        if self.turn is not None:
            out["turn"] = self.turn
        out["match"] = self.match
        out["arguments"] = self.arguments
        if self.calls is not None:
            out["calls"] = [c.to_dict() for c in self.calls]
        if self.turns is not None:
            out["turns"] = [t.to_dict() for t in self.turns]
            out["allow_extra_turns"] = self.allow_extra_turns
        if self.forbid:
            out["forbid"] = list(self.forbid)
        if self.allow is not None:
            out["allow"] = list(self.allow)
        if self.max_calls is not None:
            out["max_calls"] = self.max_calls
        if self.min_calls is not None:
            out["min_calls"] = self.min_calls
        out["require_no_errors"] = self.require_no_errors
        return out


def _unknown(raw: Mapping[Any, Any], known: tuple[str, ...], path: str) -> None:
    for key in raw:
        if not isinstance(key, str):
            raise InvalidExpectation(path, f"keys must be strings, got {show(key)}")
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else ""
            raise InvalidExpectation(key_path(path, key), f"unknown field{hint}")


def _enum(raw: Any, path: str, allowed: tuple[str, ...], aliases: Mapping[str, str]) -> str:
    if isinstance(raw, str):
        key = enum_key(raw)
        key = aliases.get(key, key)
        if key in allowed:
            return key
    names = ", ".join(allowed) + (f" (or {', '.join(aliases)})" if aliases else "")
    raise InvalidExpectation(path, f"must be one of {names}, got {show(raw)}")


def _bool(raw: Any, path: str) -> bool:
    if not isinstance(raw, bool):
        raise InvalidExpectation(path, f"must be true or false, got {show(raw)}")
    return raw


def _count(raw: Any, path: str) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
        raise InvalidExpectation(path, f"must be a non-negative integer, got {show(raw)}")
    return raw


def _globs(raw: Any, path: str) -> tuple[str, ...]:
    if not isinstance(raw, list):
        raise InvalidExpectation(path, "must be a list of tool-name globs")
    for i, g in enumerate(raw):
        if not isinstance(g, str) or not g:
            raise InvalidExpectation(index_path(path, i), "must be a non-empty string")
    return tuple(raw)


class _Ctx:
    """What a call's validation needs from the rest of the expectation."""

    def __init__(self, forbid: tuple[str, ...], allow: tuple[str, ...] | None) -> None:
        self.forbid = forbid
        self.allow = allow


def _call(raw: Any, index: int, path: str, default_mode: str, ctx: _Ctx) -> ExpectedCall:
    if not isinstance(raw, Mapping):
        raise InvalidExpectation(path, "must be an object with a `name`")
    _unknown(raw, CALL_FIELDS, path)
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidExpectation(key_path(path, "name"), "must be a non-empty tool name")
    for i, g in enumerate(ctx.forbid):
        if glob_match(g, name):
            raise InvalidExpectation(
                key_path(path, "name"), f"`{name}` is forbidden by forbid[{i}] `{g}`"
            )
    if ctx.allow is not None and not any(glob_match(g, name) for g in ctx.allow):
        raise InvalidExpectation(key_path(path, "name"), f"`{name}` is not in `allow`")
    given_mode = None
    if "arguments_match" in raw:
        given_mode = _enum(raw["arguments_match"], key_path(path, "arguments_match"),
                           ARGUMENT_MODES, {})  # fmt: skip
    mode = given_mode or default_mode
    args: Spec | None = None
    if "arguments" in raw and raw["arguments"] is not None:
        arg_path = key_path(path, "arguments")
        if not isinstance(raw["arguments"], Mapping):
            raise InvalidExpectation(arg_path, f"must be an object, got {show(raw['arguments'])}")
        args = compile_spec(raw["arguments"], arg_path, mode == "exact")
    weight = raw.get("weight", 1)
    if (
        isinstance(weight, bool)
        or not isinstance(weight, (int, float))
        or not (math.isfinite(weight) and weight > 0)
    ):
        raise InvalidExpectation(
            key_path(path, "weight"), f"must be a number > 0, got {show(weight)}"
        )
    error: bool | Spec | None = None
    if raw.get("error") is not None:
        error = raw["error"]
        if not isinstance(error, bool):
            error = compile_spec(error, key_path(path, "error"), False)
    result = None
    if "result" in raw:
        result = compile_spec(raw["result"], key_path(path, "result"), False)
    return ExpectedCall(
        index=index, path=path, name=name, mode=mode, weight=weight, arguments=args,
        arguments_match=given_mode, error=error, result=result,
        checked_arguments=None if mode == "ignore" else args,
    )  # fmt: skip


def _calls(raw: Any, path: str, mode: str, ctx: _Ctx) -> tuple[ExpectedCall, ...]:
    if not isinstance(raw, list):
        raise InvalidExpectation(path, "must be a list of calls")
    return tuple(_call(c, i, index_path(path, i), mode, ctx) for i, c in enumerate(raw))


def _turns(raw: Any, match: str, arguments: str, ctx: _Ctx) -> tuple[TurnSpec, ...]:
    if not isinstance(raw, list):
        raise InvalidExpectation("turns", "must be a list of turns")
    out = []
    for t, item in enumerate(raw):
        path = f"turns[{t}]"
        if not isinstance(item, Mapping):
            raise InvalidExpectation(path, "must be an object with `calls`")
        _unknown(item, TURN_FIELDS, path)
        m = a = None
        if item.get("match") is not None:
            m = _enum(item["match"], f"{path}.match", MODES, MODE_ALIASES)
        if item.get("arguments") is not None:
            a = _enum(item["arguments"], f"{path}.arguments", ARGUMENT_MODES, {})
        calls = _calls(item.get("calls", []), f"{path}.calls", a or arguments, ctx)
        out.append(TurnSpec(m or match, a or arguments, calls, m, a))
    return tuple(out)


def parse_expectation(data: Mapping[str, Any], *, require_id: bool = False) -> Expectation:
    """Validate the JSON form of an expectation; raises `InvalidExpectation`."""
    try:
        return _parse(data, require_id)
    except RecursionError:
        raise InvalidExpectation("", "nested too deeply") from None


def _parse(data: Mapping[str, Any], require_id: bool) -> Expectation:
    if not isinstance(data, Mapping):
        raise InvalidExpectation("", "an expectation must be an object")
    _unknown(data, TOP_FIELDS, "")
    ident = data.get("id")
    if ident is None:
        if require_id:
            raise InvalidExpectation("id", "required")
    elif not isinstance(ident, str) or not _ID.fullmatch(ident):
        raise InvalidExpectation(
            "id", f"must be a slug (letters, digits, `.`, `_`, `-`; at most 128), got {show(ident)}"
        )
    desc = data.get("description")
    if desc is not None and not isinstance(desc, str):
        raise InvalidExpectation("description", "must be a string")
    suite = data.get("suite")
    if suite is not None and (not isinstance(suite, str) or not _ID.fullmatch(suite)):
        raise InvalidExpectation("suite", f"must be a suite name (a slug), got {show(suite)}")
    selector = parse_selector(data.get("selector"))
    scope = _enum(data.get("scope", "conversation"), "scope", SCOPES, {})
    turn = data.get("turn")
    if scope == "turn":
        if isinstance(turn, bool) or not isinstance(turn, int):
            raise InvalidExpectation(
                "turn", "required with scope turn: an integer (-1 is the last)"
            )
    elif turn is not None:
        raise InvalidExpectation("turn", "only allowed with scope turn")
    match = _enum(data.get("match", "in_order"), "match", MODES, MODE_ALIASES)
    arguments = _enum(data.get("arguments", "partial"), "arguments", ARGUMENT_MODES, {})
    forbid = _globs(data["forbid"], "forbid") if data.get("forbid") is not None else ()
    allow = _globs(data["allow"], "allow") if data.get("allow") is not None else None
    ctx = _Ctx(forbid, allow)
    calls = turns = None
    if data.get("calls") is not None and data.get("turns") is not None:
        raise InvalidExpectation("turns", "give either `calls` or `turns`, not both")
    if data.get("calls") is not None:
        calls = _calls(data["calls"], "calls", arguments, ctx)
    if data.get("turns") is not None:
        if scope != "conversation":
            raise InvalidExpectation("turns", "per-turn expectations need scope conversation")
        turns = _turns(data["turns"], match, arguments, ctx)
    extra = data.get("allow_extra_turns")
    if extra is not None:
        _bool(extra, "allow_extra_turns")
        if turns is None:
            raise InvalidExpectation("allow_extra_turns", "only allowed with `turns`")
    max_calls = _count(data.get("max_calls"), "max_calls")
    min_calls = _count(data.get("min_calls"), "min_calls")
    if max_calls is not None and min_calls is not None and min_calls > max_calls:
        raise InvalidExpectation("min_calls", f"{min_calls} is more than max_calls {max_calls}")
    if max_calls is not None:
        _check_budget(max_calls, match, calls, turns)
    no_errors = data.get("require_no_errors")
    return Expectation(
        id=ident, description=desc, selector=selector, scope=scope, turn=turn, match=match,
        arguments=arguments, calls=calls, turns=turns, allow_extra_turns=bool(extra),
        forbid=forbid, allow=allow, max_calls=max_calls, min_calls=min_calls,
        require_no_errors=False if no_errors is None else _bool(no_errors, "require_no_errors"),
        suite=suite,
    )  # fmt: skip


def _check_budget(
    max_calls: int, match: str, calls: tuple[ExpectedCall, ...] | None,
    turns: tuple[TurnSpec, ...] | None,
) -> None:  # fmt: skip
    """Reject a budget that no trajectory could meet together with the calls."""
    if calls is not None:
        needed = len(calls) if match != "subset" else 0
    else:
        needed = sum(len(t.calls) for t in turns or () if t.match != "subset")
    if needed > max_calls:
        raise InvalidExpectation(
            "max_calls", f"{max_calls} is fewer than the {needed} calls the expectation requires"
        )


def load_text(text: str | bytes) -> Any:
    """The value of a JSON or YAML document; raises `InvalidExpectation` naming the line."""
    try:
        return json.loads(text)
    except RecursionError:
        raise InvalidExpectation("", "nested too deeply") from None
    except ValueError:
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
            problem = getattr(e, "problem", None) or str(e)
            raise InvalidExpectation("", f"not valid JSON or YAML{where}: {problem}") from None
        except RecursionError:
            raise InvalidExpectation("", "nested too deeply") from None


def parse_expectation_text(text: str, *, require_id: bool = False) -> Expectation:
    """Parse an expectation written as JSON or YAML."""
    data = load_text(text)
    return parse_expectation(data, require_id=require_id)
