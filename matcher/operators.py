"""The `$` operators of value specs (docs/matching.md, "Values")."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import re2

from .assign import has_perfect_matching
from .types import InvalidExpectation, enum_key, index_path, key_path
from .values import (
    AbsentSpec,
    AnySpec,
    Literal,
    Spec,
    check_json,
    compile_spec,
    is_number,
    json_equal,
    show,
)

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False
_RE2_OPTIONS.never_capture = True  # a yes/no full match needs no groups
_ANCHOR_BOTH = getattr(getattr(re2, "_Anchor", None), "ANCHOR_BOTH", None)

_TYPES = {
    "string": (lambda v: isinstance(v, str), "a string"),
    "number": (is_number, "a number"),
    "integer": (
        lambda v: is_number(v) and (isinstance(v, int) or float(v).is_integer()),
        "an integer",
    ),
    "boolean": (lambda v: isinstance(v, bool), "a boolean"),
    "object": (lambda v: isinstance(v, Mapping), "an object"),
    "array": (lambda v: isinstance(v, (list, tuple)), "an array"),
    "null": (lambda v: v is None, "null"),
}
_NORM_DROP = str.maketrans("", "", " ,./-_*^")
_COMPARE: dict[str, tuple[Callable[[Any, Any], bool], str]] = {
    "$gt": (lambda v, x: v > x, ">"),
    "$gte": (lambda v, x: v >= x, "≥"),
    "$lt": (lambda v, x: v < x, "<"),
    "$lte": (lambda v, x: v <= x, "≤"),
}
_STANDALONE = ("$any", "$absent", "$literal")
KNOWN = frozenset(
    {"$any", "$absent", "$in", "$regex", "$contains", "$approx", "$tol", "$rel", "$type"}
    | {"$norm", "$unordered", "$not", "$all", "$literal"}
    | set(_COMPARE)
)


def norm_fold(s: str) -> str:
    """BFCL string folding: Unicode lower-case, drop spaces and `,./-_*^`."""
    return s.lower().translate(_NORM_DROP)


class Op(Spec):
    """One operator: a predicate with its JSON operand(s) and a description.

    `verdict`: the `verdict_json` form when it differs from `as_json` (an operand
    that is itself a spec, e.g. `$contains: {…}`, whose object specs may be exact)."""

    __slots__ = ("_json", "_text", "_verdict")

    def __init__(
        self,
        pred: Callable[[Any], bool],
        as_json: dict[str, Any],
        text: str,
        verdict: dict[str, Any] | None = None,
    ) -> None:
        self.matches = pred
        self._json = as_json
        self._text = text
        self._verdict = verdict

    def to_json(self) -> Any:
        return self._json

    def verdict_json(self) -> Any:
        return self._json if self._verdict is None else self._verdict

    def describe(self) -> str:
        return self._text


class AllOf(Spec):
    """Several operators in one object, ANDed."""

    __slots__ = ("parts",)

    def __init__(self, parts: list[Spec]) -> None:
        self.parts = parts
        preds = tuple(p.matches for p in parts)
        self.matches = lambda v: all(p(v) for p in preds)

    def to_json(self) -> Any:
        out: dict[str, Any] = {}
        for p in self.parts:
            out.update(p.to_json())
        return out

    def verdict_json(self) -> Any:
        out: dict[str, Any] = {}
        for p in self.parts:
            out.update(p.verdict_json())
        return out

    def describe(self) -> str:
        return " and ".join(p.describe() for p in self.parts)


def _number(raw: Mapping[str, Any], op: str, path: str, *, positive: bool = False) -> float:
    x = raw[op]
    if not is_number(x) or not math.isfinite(x):
        raise InvalidExpectation(path, f"{op} must be a number, got {show(x)}")
    if positive and x < 0:
        raise InvalidExpectation(path, f"{op} must not be negative")
    return x  # type: ignore[no-any-return]


def _fmt(x: float) -> str:
    return show(x)


def _approx(raw: Mapping[str, Any], path: str) -> Spec:
    x = _number(raw, "$approx", path)
    tol = _number(raw, "$tol", path, positive=True) if "$tol" in raw else None
    rel = _number(raw, "$rel", path, positive=True) if "$rel" in raw else None
    bound = max(tol if tol is not None else 0.0, (rel if rel is not None else 0.0) * abs(x))
    slack = 1e-12 * max(1.0, abs(x))  # 20.00 is within ±0.01 of 19.99 despite rounding

    def pred(v: Any) -> bool:
        return is_number(v) and abs(v - x) <= bound + slack

    as_json: dict[str, Any] = {"$approx": x}
    parts = []
    if tol is not None:
        as_json["$tol"] = tol
        parts.append(f"±{_fmt(tol)}")
    if rel is not None:
        as_json["$rel"] = rel
        parts.append(f"±{rel * 100:.6g}%")
    if not parts:
        return Op(lambda v: is_number(v) and v == x, as_json, _fmt(x))
    return Op(pred, as_json, f"≈{_fmt(x)} " + " or ".join(parts))


def _regex(pattern: Any, path: str) -> Spec:
    if not isinstance(pattern, str):
        raise InvalidExpectation(path, f"$regex must be a string, got {show(pattern)}")
    try:
        compiled = re2.compile(pattern, options=_RE2_OPTIONS)
    except re2.error as e:
        why = e.args[0].decode() if e.args and isinstance(e.args[0], bytes) else str(e)
        raise InvalidExpectation(path, f"$regex does not compile (RE2 syntax): {why}") from None
    return Op(_fullmatcher(compiled), {"$regex": pattern}, f"a string matching /{pattern}/")


def _fullmatcher(compiled: Any) -> Callable[[Any], bool]:
    """`compiled.fullmatch(v) is not None` for strings, through google-re2's low-level
    `Match` when available (faster than the wrapper, which builds match objects: README,
    "Measured")."""
    full = compiled.fullmatch

    def slow(v: Any) -> bool:
        return isinstance(v, str) and full(v) is not None

    low = getattr(getattr(compiled, "_regexp", None), "Match", None)
    if low is None or _ANCHOR_BOTH is None:
        return slow
    anchor = _ANCHOR_BOTH

    def fast(v: Any) -> bool:
        if not isinstance(v, str):
            return False
        b = v.encode("utf-8", "surrogatepass")
        return bool(low(anchor, b, 0, len(b))[0][0] != -1)

    try:  # trust the fast path only if it agrees with the public API
        probes = ("", "a", "ab", "é", "x" * 3)
        if all(fast(p) == slow(p) for p in probes):
            return fast
    except Exception:
        pass
    return slow


def _one(op: str, arg: Any, path: str, exact: bool) -> Spec:
    """Compile one operator (not `$approx`, handled with its modifiers)."""
    sub = key_path(path, op)
    if op in ("$any", "$absent"):
        if arg is not True:
            raise InvalidExpectation(path, f"{op} must be true")
        return AnySpec() if op == "$any" else AbsentSpec()
    if op == "$literal":
        check_json(arg, sub)
        return Literal(arg, explicit=True)
    if op == "$in":
        if not isinstance(arg, (list, tuple)):
            raise InvalidExpectation(path, "$in must be a list of values")
        check_json(arg, sub)
        options = list(arg)

        def one_of(v: Any) -> bool:
            for o in options:  # noqa: SIM110 - a loop: `any()` over a generator costs more
                if json_equal(o, v):
                    return True
            return False

        return Op(
            one_of,
            {"$in": options},
            f"one of {show(options)}",
        )
    if op == "$regex":
        return _regex(arg, path)
    if op == "$contains":
        inner = compile_spec(arg, sub, exact)
        text = arg if isinstance(arg, str) else None
        element = inner.matches

        def contains(v: Any) -> bool:
            if isinstance(v, str):
                return text is not None and text in v
            if isinstance(v, (list, tuple)):
                for x in v:  # a loop: `any()` over a generator costs more for short lists
                    if element(x):
                        return True
            return False

        what = (
            f"something containing {show(text)}"
            if text is not None
            else (f"a list containing {inner.describe()}")
        )
        return Op(
            contains, {"$contains": inner.to_json()}, what, {"$contains": inner.verdict_json()}
        )
    if op in _COMPARE:
        x = _number({op: arg}, op, path)
        cmp, sym = _COMPARE[op]
        return Op(lambda v: is_number(v) and cmp(v, x), {op: x}, f"{sym} {_fmt(x)}")
    if op == "$type":
        if not isinstance(arg, str) or enum_key(arg) not in _TYPES:
            raise InvalidExpectation(
                path, f"$type must be one of {', '.join(_TYPES)}, got {show(arg)}"
            )
        name = enum_key(arg)
        pred, text = _TYPES[name]
        return Op(pred, {"$type": name}, text)
    if op == "$norm":
        if not isinstance(arg, str):
            raise InvalidExpectation(path, f"$norm must be a string, got {show(arg)}")
        folded = norm_fold(arg)
        return Op(
            lambda v: isinstance(v, str) and norm_fold(v) == folded,
            {"$norm": arg},
            f"{show(arg)} (ignoring case, spaces and punctuation)",
        )
    if op == "$unordered":
        if not isinstance(arg, (list, tuple)):
            raise InvalidExpectation(path, "$unordered must be a list of specs")
        items = [compile_spec(x, index_path(sub, i), exact) for i, x in enumerate(arg)]
        return Op(
            lambda v: _unordered(items, v),
            {"$unordered": [s.to_json() for s in items]},
            f"{show([s.to_json() for s in items])} in any order",
            {"$unordered": [s.verdict_json() for s in items]},
        )
    if op == "$not":
        inner = compile_spec(arg, sub, exact)
        neg = inner.matches
        return Op(
            lambda v: not neg(v),
            {"$not": inner.to_json()},
            f"not {inner.describe()}",
            {"$not": inner.verdict_json()},
        )
    # $all
    if not isinstance(arg, (list, tuple)) or not arg:
        raise InvalidExpectation(path, "$all must be a non-empty list of specs")
    parts = [compile_spec(x, index_path(sub, i), exact) for i, x in enumerate(arg)]
    preds = tuple(p.matches for p in parts)
    return Op(
        lambda v: all(p(v) for p in preds),
        {"$all": [p.to_json() for p in parts]},
        " and ".join(p.describe() for p in parts),
        {"$all": [p.verdict_json() for p in parts]},
    )


def _unordered(items: list[Spec], v: Any) -> bool:
    if not isinstance(v, (list, tuple)) or len(v) != len(items):
        return False
    adj = [[j for j, x in enumerate(v) if s.matches(x)] for s in items]
    return has_perfect_matching(adj, len(v))


def compile_operators(raw: Mapping[str, Any], path: str, exact: bool, *, in_object: bool) -> Spec:
    """Compile an object whose keys are all operators (ANDed)."""
    for op in raw:
        if op not in KNOWN:
            raise InvalidExpectation(path, f"unknown operator {op}")
    for op in _STANDALONE:
        if op in raw and len(raw) > 1:
            other = next(k for k in raw if k != op)
            raise InvalidExpectation(path, f"{op} must stand alone (found {other} with it)")
    for op in ("$tol", "$rel"):
        if op in raw and "$approx" not in raw:
            raise InvalidExpectation(path, f"{op} is only allowed with $approx")
    if "$absent" in raw and not in_object:
        raise InvalidExpectation(path, "$absent is only allowed as the value of a key")
    parts: list[Spec] = []
    for op, arg in raw.items():
        if op in ("$tol", "$rel"):
            continue
        parts.append(_approx(raw, path) if op == "$approx" else _one(op, arg, path, exact))
    return parts[0] if len(parts) == 1 else AllOf(parts)
