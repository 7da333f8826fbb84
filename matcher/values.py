"""Value specs: literals, nested objects and lists, compiled once and matched fast.

A spec is compiled from its JSON form (docs/matching.md, "Argument modes" and "Values") into
a tree of `Spec` nodes. Every node has a fast `matches(value)` predicate, a
`mismatch(value)` explanation used only for failures, a human `describe()` and
`to_json()` (the normalised JSON form, which parses back to the same spec under the
same arguments mode). `fingerprint()` identifies the verdict itself: `to_json()` does
not record whether object specs are exact, so it is no cache key for verdicts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from .codegen import Source, TooLarge
from .jsonvalue import (
    MISSING,
    NUMBER,
    canon_scalar,
    check_json,
    is_number,
    json_equal,
    show,
)
from .types import InvalidExpectation, index_path, key_path

__all__ = [
    "ABSENT",
    "MISSING",
    "AbsentSpec",
    "AnySpec",
    "ListSpec",
    "Literal",
    "Mismatch",
    "ObjectSpec",
    "ShareItems",
    "Spec",
    "canon_scalar",
    "check_json",
    "compile_spec",
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

LITERAL_TEST, ABSENT_TEST, SPEC_TEST = "literal", "absent", "spec"

# Per listed key: (key, matches, is `$absent`, fingerprint); see `ObjectSpec.share_items`.
ShareItems = tuple[tuple[str, Callable[[Any], bool], bool, str | None], ...]

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

    def verdict_json(self) -> Any:
        """`to_json()` plus what it leaves out that changes `matches`: the exactness of
        every object spec inside (see `ObjectSpec.verdict_json`). Equal forms match
        the same values."""
        return self.to_json()

    def fingerprint(self) -> str:
        """The text of `verdict_json()`: a cache key for this spec's verdicts, shared
        by equal specs (of any expected call) and by nothing else."""
        return json.dumps(self.verdict_json(), sort_keys=True, default=str)

    def mismatch(self, value: Any) -> Mismatch | None:
        """The first difference, or None when the value matches."""
        if self.matches(value):
            return None
        return _tuple_new(Mismatch, ((), value, self.describe(), self.to_json()))

    def emit(self, x: str, src: Source) -> None:
        """Write the test of this spec on the local variable `x` (see `codegen`): by
        default, a call of `matches`."""
        src.fail_if(f"not {src.const(self.matches)}({x})")


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

    def condition(self, x: str, src: Source) -> str:
        """A Python expression, true when the variable `x` matches (see `codegen`)."""
        value = self.value
        if isinstance(value, bool):
            return f"{x} is {value!r}"
        if isinstance(value, NUMBER):
            c = src.const(value)
            return f"({x} == {c} and (type({x}) is int or type({x}) is float or is_number({x})))"
        if isinstance(value, str):
            c = src.const(value)
            return f"({x} == {c} and (type({x}) is str or isinstance({x}, str)))"
        if value is None:
            return f"{x} is None"
        return f"json_equal({src.const(value)}, {x})"

    def emit(self, x: str, src: Source) -> None:
        src.fail_if(f"not ({self.condition(x, src)})")

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

    def emit(self, x: str, src: Source) -> None:
        pass  # any value (an object spec checks that the key is present)

    def describe(self) -> str:
        return "any value"


class AbsentSpec(Spec):
    """`{$absent: true}`: the key must not be present (checked by `ObjectSpec`)."""

    __slots__ = ()

    def __init__(self) -> None:
        self.matches = lambda v: v is MISSING

    def to_json(self) -> Any:
        return {"$absent": True}

    def emit(self, x: str, src: Source) -> None:
        src.fail_if(f"{x} is not MISSING")

    def describe(self) -> str:
        return "it to be absent"


class ObjectSpec(Spec):
    """An object: listed keys must match; `exact` also requires no other keys."""

    __slots__ = ("_items", "_share_items", "_tests", "entries", "exact")

    def __init__(self, entries: dict[str, Spec], exact: bool) -> None:
        self.entries = entries
        self.exact = exact
        self._tests: tuple[tuple[str, str, Any], ...] | None = None
        self._share_items: ShareItems | None = None
        self._items = tuple((k, s.matches, isinstance(s, AbsentSpec)) for k, s in entries.items())
        self.matches = compiled(self) or self._walk()

    def _checks(self) -> list[tuple[str, Spec]]:
        """The keys that must be present, cheap discriminating literals first."""
        return sorted(
            ((k, s) for k, s in self.entries.items() if not isinstance(s, AbsentSpec)),
            key=lambda ks: not isinstance(ks[1], Literal),
        )

    def _walk(self) -> Callable[[Any], bool]:
        """`matches` for a spec too large to compile: the same tests, key by key."""
        present = tuple((k, s.matches) for k, s in self._checks())
        absent = tuple(k for k, s in self.entries.items() if isinstance(s, AbsentSpec))
        n_present = len(present)
        exact = self.exact

        def matches(v: Any) -> bool:
            if not isinstance(v, dict) and not isinstance(v, Mapping):
                return False
            get = v.get
            for key, match in present:
                x = get(key, MISSING)
                if x is MISSING or not match(x):
                    return False
            for key in absent:
                if key in v:
                    return False
            return not exact or len(v) == n_present

        return matches

    def emit(self, x: str, src: Source) -> None:
        src.fail_if(f"type({x}) is not dict and not isinstance({x}, Mapping)")
        checks = self._checks()
        for key, spec in checks:
            y = src.var()
            src.assign(y, f"{x}.get({src.const(key)}, MISSING)")
            src.fail_if(f"{y} is MISSING")
            spec.emit(y, src)
        for key, spec in self.entries.items():
            if isinstance(spec, AbsentSpec):
                src.fail_if(f"{src.const(key)} in {x}")
        if self.exact:
            src.fail_if(f"len({x}) != {len(checks)}")

    def to_json(self) -> Any:
        return {k: s.to_json() for k, s in self.entries.items()}

    def verdict_json(self) -> Any:
        # `$object`/`$exact` are no operators: no other spec has this form.
        return {"$object": {k: s.verdict_json() for k, s in self.entries.items()},
                "$exact": self.exact}  # fmt: skip

    def key_share(self, v: Any) -> float:
        """The share of the listed keys that match (for `argument_score`)."""
        if not self.entries:
            return 1.0
        if not isinstance(v, Mapping):
            return 0.0
        hits = 0
        for key, match, absent in self._items:
            if absent:
                hits += key not in v
            else:
                x = v.get(key, MISSING)
                hits += x is not MISSING and match(x)
        return hits / len(self._items)

    def share_function(self) -> Callable[[Any, int, dict[Any, bool]], float] | None:
        """`key_share` compiled for a dict `v`, as `f(v, a, verdicts)`: each non-literal
        spec's verdict is kept in `verdicts` under (key, fingerprint, a), as
        `shares.Shares` does, so expected calls that repeat a spec share it on call a.
        None for a spec too large to compile or without keys."""
        items = self.share_items()
        if not items:
            return None
        src = Source()
        try:
            src.line("h = 0")
            for (key, match, absent, fp), spec in zip(items, self.entries.values(), strict=True):
                if absent:
                    src.line(f"if {src.const(key)} not in v: h += 1")
                    continue
                k = src.const(key)
                src.line(f"x = v.get({k}, MISSING)")
                if fp is None:  # a literal
                    assert isinstance(spec, Literal)
                    src.line(f"if x is not MISSING and {spec.condition('x', src)}: h += 1")
                    continue
                src.line("if x is not MISSING:")
                src.line(f"    k = ({k}, {src.const(fp)}, a)")
                src.line("    ok = verdicts.get(k)")
                src.line(f"    if ok is None: ok = verdicts[k] = bool({src.const(match)}(x))")
                src.line("    if ok: h += 1")
        except TooLarge:
            return None
        return src.build("v, a, verdicts", f"h / {len(items)}")

    def share_items(self) -> ShareItems:
        """Per listed key: (key, matches, is `$absent`, fingerprint). The fingerprint
        (`Spec.fingerprint`, None for a literal) lets callers share a non-literal
        spec's verdict on one value between expected calls that repeat it."""
        if self._share_items is None:
            self._share_items = tuple(
                (
                    key,
                    spec.matches,
                    isinstance(spec, AbsentSpec),
                    None if isinstance(spec, (Literal, AbsentSpec)) else spec.fingerprint(),
                )
                for key, spec in self.entries.items()
            )
        return self._share_items

    def key_tests(self) -> tuple[tuple[str, str, Any], ...]:
        """Per listed key: (key, LITERAL_TEST, canonical value) for a scalar literal,
        (key, ABSENT_TEST, ("", None)), or (key, SPEC_TEST, (fingerprint, matches))."""
        if self._tests is None:
            tests: list[tuple[str, str, Any]] = []
            for key, spec in self.entries.items():
                canon = canon_scalar(spec.value) if isinstance(spec, Literal) else None
                if canon is not None:
                    tests.append((key, LITERAL_TEST, canon))
                elif isinstance(spec, AbsentSpec):
                    tests.append((key, ABSENT_TEST, ("", None)))
                else:
                    tests.append((key, SPEC_TEST, (spec.fingerprint(), spec.matches)))
            self._tests = tuple(tests)
        return self._tests

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
        self.matches = compiled(self) or self._walk()

    def _walk(self) -> Callable[[Any], bool]:
        """`matches` for a spec too large to compile: element by element."""
        matchers = tuple(s.matches for s in self.items)
        n = len(matchers)

        def matches(v: Any) -> bool:
            if not isinstance(v, (list, tuple)) or len(v) != n:
                return False
            return all(m(x) for m, x in zip(matchers, v, strict=True))

        return matches

    def emit(self, x: str, src: Source) -> None:
        src.fail_if(f"type({x}) is not list and not isinstance({x}, (list, tuple)) "
                    f"or len({x}) != {len(self.items)}")  # fmt: skip
        for i, spec in enumerate(self.items):
            y = src.var()
            src.assign(y, f"{x}[{i}]")
            spec.emit(y, src)

    def to_json(self) -> Any:
        return [s.to_json() for s in self.items]

    def verdict_json(self) -> Any:
        return [s.verdict_json() for s in self.items]

    def mismatch(self, value: Any) -> Mismatch | None:
        if not isinstance(value, (list, tuple)) or len(value) != len(self.items):
            return Mismatch((), value, self.describe(), self.to_json())
        for i, (spec, x) in enumerate(zip(self.items, value, strict=True)):
            sub = spec.mismatch(x)
            if sub is not None:
                return Mismatch((i, *sub.path), sub.actual, sub.expected, sub.spec)
        return None


def compiled(spec: Spec) -> Callable[[Any], bool] | None:
    """`spec`'s test as one compiled function (`codegen`); None for a large spec."""
    src = Source()
    try:
        spec.emit("v", src)
    except TooLarge:
        return None
    return src.build()


def compile_spec(raw: Any, path: str, exact: bool, *, in_object: bool = False) -> Spec:
    """Compile the JSON form of a value spec; `in_object` allows `$absent`."""
    if isinstance(raw, Mapping):
        keys = list(raw)
        for k in keys:
            if not isinstance(k, str):
                raise InvalidExpectation(path, f"keys must be strings, got {show(k)}")
        ops = [k for k in keys if k.startswith("$")]
        if ops and len(ops) != len(keys):
            plain = next(k for k in keys if not k.startswith("$"))
            raise InvalidExpectation(
                path,
                f"mixes operators ({ops[0]}) and plain keys ({plain}); "
                "write a key that starts with $ with $literal",
            )
        if ops:
            from .operators import compile_operators

            return compile_operators(raw, path, exact, in_object=in_object)
        return ObjectSpec(
            {k: compile_spec(v, key_path(path, k), exact, in_object=True) for k, v in raw.items()},
            exact,
        )
    if isinstance(raw, (list, tuple)):
        return ListSpec([compile_spec(v, index_path(path, i), exact) for i, v in enumerate(raw)])
    check_json(raw, path)
    return Literal(raw)
