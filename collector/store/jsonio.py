"""JSON for the store: fast (orjson), total (never raises on hostile values), size-capped."""

from __future__ import annotations

import json
from typing import Any

import orjson

MAX_DEPTH = 64  # nesting kept when a value has to be cleaned
MAX_STRING = 4096  # per string, when an oversized mapping is cut down
MAX_KEYS = 128  # per mapping, when an oversized mapping is cut down


def dumps(value: Any) -> str:
    """JSON text of `value`; values JSON cannot hold (lone surrogates, huge ints, deep nesting,
    NaN) are cleaned instead of failing the write."""
    try:
        return orjson.dumps(value).decode()
    except (orjson.JSONEncodeError, TypeError):
        return orjson.dumps(clean(value, 0)).decode()


def loads(text: str | bytes) -> Any:
    """A JSON column's value. What `dumps` wrote, orjson reads back as it was; rows an earlier
    build wrote on SQLite with the standard library's encoder may hold NaN or Infinity, which
    only its decoder accepts."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def clean(value: Any, depth: int) -> Any:
    """`value` with strings made valid UTF-8, big ints as text, nesting cut at MAX_DEPTH."""
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode()
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**64 else str(value)
    if depth >= MAX_DEPTH:
        return "…[nested too deep]"
    if isinstance(value, dict):
        return {clean(str(k), depth): clean(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v, depth + 1) for v in value]
    return clean(str(value), depth)


def _shrink(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_STRING:
        return value[:MAX_STRING] + f"…[truncated {len(value) - MAX_STRING} chars]"
    if isinstance(value, dict):
        items = list(value.items())[:MAX_KEYS]
        return {k: _shrink(v) for k, v in items}
    if isinstance(value, list):
        return [_shrink(v) for v in value[:MAX_KEYS]]
    return value


def capped_json(value: Any, limit: int) -> tuple[str, int]:
    """(JSON text no longer than about `limit`, 1 if the value had to be cut else 0)."""
    text = dumps(value)
    if len(text) <= limit:
        return text, 0
    smaller = dumps(_shrink(value))
    if len(smaller) <= limit:
        return smaller, 1
    return dumps(f"{text[: limit // 2]}…[truncated {len(text)} bytes of JSON]"), 1
