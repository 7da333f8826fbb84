"""Value specs: literals, nested objects and lists, compiled once and matched fast.

A spec is compiled from its JSON form (docs/matching.md, "Argument modes" and "Values") by
`compiler.compile_spec` into a tree of `Spec` nodes; the `$` operators are
`operators.OPERATORS`. Every node has a fast `matches(value)` predicate, a
`mismatch(value)` explanation used only for failures, a human `describe()` and
`to_json()` (the normalised JSON form, which parses back to the same spec under the
same arguments mode).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from .jsonvalue import (
    MISSING,
    NUMBER,
    canon_scalar,
    check_json,
    is_number,
    json_equal,
    show,
)

__all__ = [
    "ABSENT",
    "MISSING",
    "AbsentSpec",
    "AnySpec",
    "ListSpec",
    "Literal",
    "Mismatch",
    "ObjectSpec",
    "Spec",
    "canon_scalar",
    "check_json",
    "is_number",
    "json_equal",
    "show",
]


class Mismatch(NamedTuple):
    """Where a value first differs from its spec: relative path, actual, expectation."""

    path: tuple[str | int, ...]
    actual: Any  # MISSING when the key is absent
    expected: str  # a description, or ABSENT for a key that should not be there
    spec: Any  # the JSON form of the failing spec


# `Mismatch(...)` without the generated `__new__`'s Python frame (sentences of failures)
_tuple_new = tuple.__new__

ABSENT = "\0absent"
"""`Mismatch.expected` for a key that is present but must not be."""


class Spec:
    """A compiled value spec."""

    __slots__ = ("matches",)
    matches: Callable[[Any], bool]

    def describe(self) -> str:
        """What a matching value looks like, for `…, expected <describe>.`"""
        return show(self.to_json())

    def to_json(self) -> Any:
        """The normalised JSON form."""
        raise NotImplementedError

    def mismatch(self, value: Any) -> Mismatch | None:
        """The first difference, or None when the value matches."""
        if self.matches(value):
            return None
        return _tuple_new(Mismatch, ((), value, self.describe(), self.to_json()))


class Literal(Spec):
    """A JSON value matched by JSON equality (`explicit` when written `$literal`)."""

    __slots__ = ("_describe", "explicit", "value")

    def __init__(self, value: Any, explicit: bool = False) -> None:
        self.value = value
        self.explicit = explicit
        self._describe: str | None = None
        if isinstance(value, bool):
            self.matches = lambda v: v is value
        elif isinstance(value, NUMBER):
            self.matches = lambda v: (
                v == value and isinstance(v, NUMBER) and not isinstance(v, bool)
            )
        elif isinstance(value, str):
            self.matches = lambda v: v == value and isinstance(v, str)
        elif value is None:
            self.matches = lambda v: v is None
        else:
            self.matches = lambda v: json_equal(value, v)

    def to_json(self) -> Any:
        return {"$literal": self.value} if self.explicit else self.value

    def describe(self) -> str:
        if self._describe is None:  # computed once: sentences of failures reuse it
            self._describe = show(self.value)
        return self._describe


class AnySpec(Spec):
    """`{$any: true}`: any value (the key must be present)."""

    __slots__ = ()

    def __init__(self) -> None:
        self.matches = lambda v: True

    def to_json(self) -> Any:
        return {"$any": True}

    def describe(self) -> str:
        return "any value"


class AbsentSpec(Spec):
    """`{$absent: true}`: the key must not be present (checked by `ObjectSpec`)."""

    __slots__ = ()

    def __init__(self) -> None:
        self.matches = lambda v: v is MISSING

    def to_json(self) -> Any:
        return {"$absent": True}

    def describe(self) -> str:
        return "it to be absent"


class ObjectSpec(Spec):
    """An object: listed keys must match; `exact` also requires no other keys."""

    __slots__ = ("_parts", "entries", "exact")

    def __init__(self, entries: dict[str, Spec], exact: bool) -> None:
        self.entries = entries
        self.exact = exact
        # The listed keys by test, each tested where it costs least: string and number
        # literals inline (no call), other specs by their predicate, `$any` by presence,
        # `$absent` by absence. Every listed key is in exactly one of the five.
        strs, nums, calls, required, absent = [], [], [], [], []
        for k, spec in entries.items():
            if isinstance(spec, Literal) and isinstance(spec.value, str):
                strs.append((k, spec.value))
            elif isinstance(spec, Literal) and is_number(spec.value):
                nums.append((k, spec.value))
            elif isinstance(spec, AnySpec):
                required.append(k)
            elif isinstance(spec, AbsentSpec):
                absent.append(k)
            else:
                calls.append((k, spec.matches))
        self._parts = (tuple(strs), tuple(nums), tuple(calls), tuple(required), tuple(absent))
        self.matches = self._matcher()

    def _matcher(self) -> Callable[[Any], bool]:
        strs, nums, calls, required, absent = self._parts
        n_present = len(strs) + len(nums) + len(calls) + len(required)
        exact = self.exact

        def matches(v: Any) -> bool:
            if type(v) is not dict and not isinstance(v, Mapping):
                return False
            get = v.get
            for key, value in strs:  # `Literal.matches`, inline
                x = get(key, MISSING)
                if not (x == value and (type(x) is str or isinstance(x, str))):
                    return False
            for key, value in nums:
                x = get(key, MISSING)
                if not (x == value and (type(x) is int or type(x) is float or is_number(x))):
                    return False
            for key, match in calls:
                x = get(key, MISSING)
                if x is MISSING or not match(x):
                    return False
            for key in required:
                if key not in v:
                    return False
            for key in absent:
                if key in v:
                    return False
            return not exact or len(v) == n_present

        return matches

    def to_json(self) -> Any:
        return {k: s.to_json() for k, s in self.entries.items()}

    def key_hits(self, v: Any) -> int:
        """How many of the listed keys `v` meets (`$absent` keys by being absent); 0
        when `v` is no object. The argument share is this over `len(entries)`
        (`shares.Shares` is its one cache)."""
        if type(v) is not dict and not isinstance(v, Mapping):
            return 0
        strs, nums, calls, required, absent = self._parts
        get = v.get
        hits = 0
        for key, value in strs:
            x = get(key, MISSING)
            if x == value and (type(x) is str or isinstance(x, str)):
                hits += 1
        for key, value in nums:
            x = get(key, MISSING)
            if x == value and (type(x) is int or type(x) is float or is_number(x)):
                hits += 1
        for key, match in calls:
            x = get(key, MISSING)
            if x is not MISSING and match(x):
                hits += 1
        for key in required:
            hits += key in v
        for key in absent:
            hits += key not in v
        return hits

    def index_key(self) -> tuple[str, tuple[str, Any]] | None:
        """A key whose spec is a scalar literal: candidates can be looked up by value."""
        for key, spec in self.entries.items():
            if isinstance(spec, Literal):
                canon = canon_scalar(spec.value)
                if canon is not None:
                    return key, canon
        return None

    def mismatch(self, value: Any) -> Mismatch | None:
        if type(value) is not dict and not isinstance(value, Mapping):
            return Mismatch((), value, "an object", self.to_json())
        for key, spec in self.entries.items():
            x = value.get(key, MISSING)
            if isinstance(spec, AbsentSpec):
                if x is not MISSING:
                    return Mismatch((key,), x, ABSENT, spec.to_json())
                continue
            if x is MISSING:
                return Mismatch((key,), MISSING, spec.describe(), spec.to_json())
            sub = spec.mismatch(x)
            if sub is not None:
                path = (key, *sub.path) if sub.path else (key,)
                return _tuple_new(Mismatch, (path, sub.actual, sub.expected, sub.spec))
        if self.exact:
            for key, x in value.items():
                if key not in self.entries:
                    return Mismatch((key,), x, ABSENT, None)
        return None


class ListSpec(Spec):
    """A list of the same length whose elements match element by element."""

    __slots__ = ("items",)

    def __init__(self, items: list[Spec]) -> None:
        self.items = items
        matchers = tuple(s.matches for s in items)
        n = len(matchers)

        def matches(v: Any) -> bool:
            if not isinstance(v, (list, tuple)) or len(v) != n:
                return False
            for m, x in zip(matchers, v, strict=True):  # noqa: SIM110 - cheaper than all()
                if not m(x):
                    return False
            return True

        self.matches = matches

    def to_json(self) -> Any:
        return [s.to_json() for s in self.items]

    def mismatch(self, value: Any) -> Mismatch | None:
        if not isinstance(value, (list, tuple)) or len(value) != len(self.items):
            return Mismatch((), value, self.describe(), self.to_json())
        for i, (spec, x) in enumerate(zip(self.items, value, strict=True)):
            sub = spec.mismatch(x)
            if sub is not None:
                return Mismatch((i, *sub.path), sub.actual, sub.expected, sub.spec)
        return None
