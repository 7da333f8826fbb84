"""Value specs compiled to one straight-line Python function each.

A spec tree's `matches` built from closures costs a Python call per node (an object
spec with three literal keys: four calls). Each spec class instead writes the test
it stands for as lines of source (`Spec.emit`); `Source.build` turns the lines into
one function. Keys, literal values and operator predicates are passed in as closure
variables, never spelled into the source (which holds only names, operators and small
integers), so specs of the same shape (the same nesting, literal types and operators)
share one compiled factory: compiling happens once per shape, and each further spec of
that shape costs one call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .jsonvalue import MISSING, is_number, json_equal

_GLOBALS: dict[str, Any] = {
    "MISSING": MISSING,
    "Mapping": Mapping,
    "is_number": is_number,
    "json_equal": json_equal,
}
_FACTORIES: dict[str, Callable[..., Callable[..., Any]]] = {}
_MAX_FACTORIES = 1024  # distinct shapes kept; the cache starts over beyond that
# Larger specs are not compiled (their owners fall back to walking the tree): compiling
# costs time per line, and the cache must stay small (1,024 × 64 short lines: no key
# or value of any size is ever part of a source).
MAX_LINES = 64


class TooLarge(Exception):
    """A spec whose test would take more than `MAX_LINES` lines."""


class Source:
    """The body of a function under construction: by default `matches(v)`, where each
    line returns False when the value fails one test and the function returns True
    after the last line."""

    __slots__ = ("consts", "lines", "names")

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.consts: list[Any] = []
        self.names = 0

    def const(self, value: Any) -> str:
        """The name under which the function sees `value`."""
        self.consts.append(value)
        return f"c{len(self.consts) - 1}"

    def var(self) -> str:
        """A fresh local variable name."""
        self.names += 1
        return f"x{self.names}"

    def fail_if(self, condition: str) -> None:
        """Return False when `condition` holds."""
        self.line(f"if {condition}: return False")

    def assign(self, name: str, expression: str) -> None:
        self.line(f"{name} = {expression}")

    def line(self, line: str) -> None:
        """One line of the body (indented further by leading spaces)."""
        if len(self.lines) == MAX_LINES:
            raise TooLarge
        self.lines.append(line)

    def build(self, params: str = "v", returns: str = "True") -> Callable[..., Any]:
        """The compiled function taking `params` and returning `returns` after the last
        line (its factory is shared by functions of the same source)."""
        consts = ", ".join(f"c{i}" for i in range(len(self.consts)))
        body = "".join(f"\n        {line}" for line in self.lines)
        text = (
            f"def make({consts}):\n    def f({params}):{body}\n        return {returns}\n"
            "    return f"
        )
        factory = _FACTORIES.get(text)
        if factory is None:
            scope: dict[str, Any] = {}
            exec(compile(text, "<matcher spec>", "exec"), dict(_GLOBALS), scope)
            factory = scope["make"]
            if len(_FACTORIES) >= _MAX_FACTORIES:
                _FACTORIES.clear()
            _FACTORIES[text] = factory
        return factory(*self.consts)
