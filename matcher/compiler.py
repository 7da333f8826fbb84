"""`compile_spec`: the JSON form of a value spec (docs/matching.md, "Values") into `Spec` nodes.

Plain objects and lists become `values.ObjectSpec`/`ListSpec`, scalars `Literal`, and
objects of `$` keys the operators of `operators.OPERATORS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .jsonvalue import check_json, show
from .operators import compile_operators
from .types import InvalidExpectation, index_path, key_path
from .values import ListSpec, Literal, ObjectSpec, Spec


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
            return compile_operators(
                raw, path, lambda sub, sub_path: compile_spec(sub, sub_path, exact),
                in_object=in_object,
            )  # fmt: skip
        return ObjectSpec(
            {k: compile_spec(v, key_path(path, k), exact, in_object=True) for k, v in raw.items()},
            exact,
        )
    if isinstance(raw, (list, tuple)):
        return ListSpec([compile_spec(v, index_path(path, i), exact) for i, v in enumerate(raw)])
    check_json(raw, path)
    return Literal(raw)
