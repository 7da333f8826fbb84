"""The `$` operators of value specs (docs/matching.md, "Values"), as a registry.

`OPERATORS` maps each operator to the function that compiles it: `(raw, path, sub)`,
`raw` the whole operator object (`$approx` reads its `$tol`/`$rel` there), `path` its
field path, `sub(raw, path)` the compiler of a nested spec (`compiler.compile_spec`
under the same arguments mode, so this module does not import the compiler). Adding
an operator is one function and one entry; `MODIFIERS` and `STANDALONE` say how an
operator combines with the others in one object.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import re2

from .assign import has_perfect_matching
from .jsonvalue import check_json, is_number, json_equal, show
from .types import InvalidExpectation, enum_key, index_path, key_path
from .values import AbsentSpec, AnySpec, Literal, Spec

SubSpec = Callable[[Any, str], Spec]
Operator = Callable[[Mapping[str, Any], str, SubSpec], Spec]

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


def norm_fold(s: str) -> str:
    """BFCL string folding: Unicode lower-case, drop spaces and `,./-_*^`."""
    return s.lower().translate(_NORM_DROP)


class Op(Spec):
    """One operator: a predicate with its JSON operand(s) and a description."""

    __slots__ = ("_json", "_text")

    def __init__(self, pred: Callable[[Any], bool], as_json: dict[str, Any], text: str) -> None:
        self.matches = pred
        self._json = as_json
        self._text = text

    def to_json(self) -> Any:
        return self._json

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

    def describe(self) -> str:
        return " and ".join(p.describe() for p in self.parts)


def _number(raw: Mapping[str, Any], op: str, path: str, *, positive: bool = False) -> float:
    x = raw[op]
    if not is_number(x) or not math.isfinite(x):
        raise InvalidExpectation(path, f"{op} must be a number, got {show(x)}")
    if positive and x < 0:
        raise InvalidExpectation(path, f"{op} must not be negative")
    return x  # type: ignore[no-any-return]


def _specs(raw: Mapping[str, Any], op: str, path: str, sub: SubSpec) -> list[Spec]:
    """The operand of `op`, a list of nested specs."""
    return [sub(x, index_path(key_path(path, op), i)) for i, x in enumerate(raw[op])]


def _flag(op: str, spec: Spec) -> Operator:
    def compile_flag(raw: Mapping[str, Any], path: str, sub: SubSpec) -> Spec:
        if raw[op] is not True:
            raise InvalidExpectation(path, f"{op} must be true")
        return spec

    return compile_flag


def _literal(raw: Mapping[str, Any], path: str, sub: SubSpec) -> Spec:
    check_json(raw["$literal"], key_path(path, "$literal"))
    return Literal(raw["$literal"], explicit=True)


def _approx(raw: Mapping[str, Any], path: str, sub: SubSpec) -> Spec:
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
        parts.append(f"±{show(tol)}")
    if rel is not None:
        as_json["$rel"] = rel
        parts.append(f"±{rel * 100:.6g}%")
    if not parts:
        return Op(lambda v: is_number(v) and v == x, as_json, show(x))
    return Op(pred, as_json, f"≈{show(x)} " + " or ".join(parts))


def _in(raw: Mapping[str, Any], path: str, sub: SubSpec) -> Spec:
    arg = raw["$in"]
    if not isinstance(arg, (list, tuple)):
        raise InvalidExpectation(path, "$in must be a list of values")
    check_json(arg, key_path(path, "$in"))
    options = list(arg)

    def one_of(v: Any) -> bool:
        for o in options:  # noqa: SIM110 - a loop: `any()` over a generator costs more
            if json_equal(o, v):
                return True
        return False

    return Op(one_of, {"$in": options}, f"one of {show(options)}")


def _regex(raw: Mapping[str, Any], path: str, sub: SubSpec) -> Spec:
    pattern = raw["$regex"]
    if not isinstance(pattern, str):
        raise InvalidExpectation(path, f"$regex must be a string, got {show(pattern)}")
    try:
        text = re2.compile(pattern, options=_RE2_OPTIONS)
    except re2.error as e:
        why = e.args[0].decode() if e.args and isinstance(e.args[0], bytes) else str(e)
        raise InvalidExpectation(path, f"$regex does not compile (RE2 syntax): {why}") from None
    pred = _fullmatcher(text, re2.compile(pattern.encode(), options=_RE2_OPTIONS))
    return Op(pred, {"$regex": pattern}, f"a string matching /{pattern}/")


def _fullmatcher(text: Any, compiled: Any) -> Callable[[Any], bool]:
    """`compiled.fullmatch(v) is not None` for strings, through google-re2's private
    low-level `Match` when it is there and agrees with the public API on probes (the
    wrapper builds a match object per call; the report of issue 12 quotes the gain),
    else the public API on UTF-8 bytes."""
    full = compiled.fullmatch

    def slow(v: Any) -> bool:
        # bytes encoded with `surrogatepass`: a lone surrogate is no error, as in `fast`
        return isinstance(v, str) and full(v.encode("utf-8", "surrogatepass")) is not None

    low = getattr(getattr(text, "_regexp", None), "Match", None)
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


def _contains(raw: Mapping[str, Any], path: str, sub: SubSpec) -> Spec:
    arg = raw["$contains"]
    inner = sub(arg, key_path(path, "$contains"))
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
        else f"a list containing {inner.describe()}"
    )
    return Op(contains, {"$contains": inner.to_json()}, what)


def _compare(op: str, test: Callable[[Any, Any], bool], sym: str) -> Operator:
    def compile_compare(raw: Mapping[str, Any], path: str, sub: SubSpec) -> Spec:
        x = _number(raw, op, path)
        return Op(lambda v: is_number(v) and test(v, x), {op: x}, f"{sym} {show(x)}")

    return compile_compare


def _type(raw: Mapping[str, Any], path: str, sub: SubSpec) -> Spec:
    arg = raw["$type"]
    if not isinstance(arg, str) or enum_key(arg) not in _TYPES:
        raise InvalidExpectation(path, f"$type must be one of {', '.join(_TYPES)}, got {show(arg)}")
    name = enum_key(arg)
    pred, text = _TYPES[name]
    return Op(pred, {"$type": name}, text)


def _norm(raw: Mapping[str, Any], path: str, sub: SubSpec) -> Spec:
    arg = raw["$norm"]
    if not isinstance(arg, str):
        raise InvalidExpectation(path, f"$norm must be a string, got {show(arg)}")
    folded = norm_fold(arg)
    return Op(
        lambda v: isinstance(v, str) and norm_fold(v) == folded,
        {"$norm": arg},
        f"{show(arg)} (ignoring case, spaces and punctuation)",
    )


def _unordered(raw: Mapping[str, Any], path: str, sub: SubSpec) -> Spec:
    if not isinstance(raw["$unordered"], (list, tuple)):
        raise InvalidExpectation(path, "$unordered must be a list of specs")
    items = _specs(raw, "$unordered", path, sub)

    def pred(v: Any) -> bool:
        if not isinstance(v, (list, tuple)) or len(v) != len(items):
            return False
        adj = [[j for j, x in enumerate(v) if s.matches(x)] for s in items]
        return has_perfect_matching(adj, len(v))

    as_json = [s.to_json() for s in items]
    return Op(pred, {"$unordered": as_json}, f"{show(as_json)} in any order")


def _not(raw: Mapping[str, Any], path: str, sub: SubSpec) -> Spec:
    inner = sub(raw["$not"], key_path(path, "$not"))
    neg = inner.matches
    return Op(lambda v: not neg(v), {"$not": inner.to_json()}, f"not {inner.describe()}")


def _all(raw: Mapping[str, Any], path: str, sub: SubSpec) -> Spec:
    arg = raw["$all"]
    if not isinstance(arg, (list, tuple)) or not arg:
        raise InvalidExpectation(path, "$all must be a non-empty list of specs")
    parts = _specs(raw, "$all", path, sub)
    preds = tuple(p.matches for p in parts)
    return Op(
        lambda v: all(p(v) for p in preds),
        {"$all": [p.to_json() for p in parts]},
        " and ".join(p.describe() for p in parts),
    )


OPERATORS: dict[str, Operator] = {
    "$any": _flag("$any", AnySpec()),
    "$absent": _flag("$absent", AbsentSpec()),
    "$in": _in,
    "$regex": _regex,
    "$contains": _contains,
    "$approx": _approx,
    "$type": _type,
    "$norm": _norm,
    "$unordered": _unordered,
    "$not": _not,
    "$all": _all,
    "$literal": _literal,
    "$gt": _compare("$gt", lambda v, x: v > x, ">"),
    "$gte": _compare("$gte", lambda v, x: v >= x, "≥"),
    "$lt": _compare("$lt", lambda v, x: v < x, "<"),
    "$lte": _compare("$lte", lambda v, x: v <= x, "≤"),
}
MODIFIERS = {"$tol": "$approx", "$rel": "$approx"}  # read by the operator they modify
STANDALONE = ("$any", "$absent", "$literal")  # never combined with another operator
KNOWN = frozenset(OPERATORS) | frozenset(MODIFIERS)


def compile_operators(raw: Mapping[str, Any], path: str, sub: SubSpec, *, in_object: bool) -> Spec:
    """Compile an object whose keys are all operators (ANDed)."""
    for op in raw:
        if op not in KNOWN:
            raise InvalidExpectation(path, f"unknown operator {op}")
    for op in STANDALONE:
        if op in raw and len(raw) > 1:
            other = next(k for k in raw if k != op)
            raise InvalidExpectation(path, f"{op} must stand alone (found {other} with it)")
    for op, owner in MODIFIERS.items():
        if op in raw and owner not in raw:
            raise InvalidExpectation(path, f"{op} is only allowed with {owner}")
    if "$absent" in raw and not in_object:
        raise InvalidExpectation(path, "$absent is only allowed as the value of a key")
    parts = [OPERATORS[op](raw, path, sub) for op in raw if op not in MODIFIERS]
    return parts[0] if len(parts) == 1 else AllOf(parts)
