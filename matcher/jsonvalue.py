"""JSON values as the matcher sees them: equality, canonical keys, display, validation."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from .types import InvalidExpectation, index_path, key_path


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


_encode_str = json.encoder.encode_basestring

MISSING: Any = _Missing()
"""Stands for a key that is not present in the actual value."""

NUMBER = (int, float)


def is_number(v: Any) -> bool:
    """A JSON number: an int or float, never a boolean."""
    return isinstance(v, NUMBER) and not isinstance(v, bool)


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: numbers by value, booleans are not numbers, key order ignored."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or (isinstance(a, bool) and isinstance(b, bool) and a == b)
    if isinstance(a, NUMBER):
        return isinstance(b, NUMBER) and a == b
    if a is None:
        return b is None
    if isinstance(a, str):
        return isinstance(b, str) and a == b
    if isinstance(a, Mapping):
        if not isinstance(b, Mapping) or len(a) != len(b):
            return False
        for k, v in a.items():
            w = b.get(k, MISSING)
            if w is MISSING or not json_equal(v, w):
                return False
        return True
    if isinstance(a, (list, tuple)):
        if not isinstance(b, (list, tuple)) or len(a) != len(b):
            return False
        return all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def canon_scalar(v: Any) -> tuple[str, Any] | None:
    """A hashable key under which JSON-equal scalars collide (None for containers)."""
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, NUMBER):
        return ("n", v)
    if isinstance(v, str):
        return ("s", v)
    if v is None:
        return ("z", None)
    return None


def show(v: Any, limit: int = 60) -> str:
    """A short JSON rendering of a value for sentences."""
    if v is MISSING:
        return "missing"
    if type(v) is str:  # what json.dumps(v, ensure_ascii=False) does, without its overhead
        text = _encode_str(v)
        return text if len(text) <= limit else text[: limit - 1] + "…"
    try:
        text = json.dumps(v, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        text = repr(v)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_json(raw: Any, path: str) -> None:
    """Reject values that JSON cannot carry (YAML dates, NaN, non-string keys)."""
    if raw is None or isinstance(raw, (bool, int, str)):
        return
    if isinstance(raw, float):
        if not math.isfinite(raw):
            raise InvalidExpectation(path, "numbers must be finite")
        return
    if isinstance(raw, (list, tuple)):
        for i, x in enumerate(raw):
            check_json(x, index_path(path, i))
        return
    if isinstance(raw, Mapping):
        for k, x in raw.items():
            if not isinstance(k, str):
                raise InvalidExpectation(path, f"keys must be strings, got {show(k)}")
            check_json(x, key_path(path, k))
        return
    raise InvalidExpectation(path, f"not a JSON value ({type(raw).__name__}); quote it")
