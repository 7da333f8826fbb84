"""Decoding attribute values that carry JSON: strings, double-encoded strings, structured values."""

from __future__ import annotations

import json
from typing import Any

PLACEHOLDERS = frozenset({"", "unknown", "<not specified>", "none", "null"})


def decode(value: Any) -> tuple[Any, str | None]:
    """Return (decoded value, raw text if the text was not JSON).

    JSON strings are decoded, twice if they were double-encoded. A string that does not parse
    is returned as itself with its raw text kept. Structured values pass through unchanged.
    """
    if not isinstance(value, str):
        return value, None
    text = value.strip()
    looks_structured = text[:1] in ("{", "[")
    if not text or text[0] not in '{["0123456789-tfn':
        return value, None
    try:
        decoded = json.loads(text)
    except ValueError:
        return value, value if looks_structured else None
    if isinstance(decoded, str) and decoded.strip()[:1] in ("{", "["):
        try:
            return json.loads(decoded), None
        except ValueError:
            return decoded, decoded
    return decoded, None


def as_arguments(value: Any) -> tuple[Any, str | None]:
    """Decode tool-call arguments: missing or null is `{}`; a non-object string stays a string."""
    if value is None:
        return {}, None
    decoded, raw = decode(value)
    if decoded is None:
        return {}, None
    return decoded, raw


def unwrap_result(value: Any) -> tuple[Any, bool]:
    """Decode a tool result and strip known envelopes; returns (result, envelope says error)."""
    decoded, _ = decode(value)
    is_error = False
    if isinstance(decoded, dict):
        flag = decoded.get("isError", decoded.get("is_error"))
        is_error = flag is True
        if (
            "content" in decoded
            and isinstance(decoded["content"], list)
            and ("isError" in decoded or "structuredContent" in decoded or _is_mcp_content(decoded))
        ):
            if decoded.get("structuredContent") is not None:
                return decoded["structuredContent"], is_error
            texts = [
                str(part.get("text", ""))
                for part in decoded["content"]
                if isinstance(part, dict) and part.get("type") == "text"
            ]
            joined = "\n".join(texts)
            inner, _ = decode(joined)
            return inner, is_error
        if len(decoded) == 1:
            ((key, inner_value),) = decoded.items()
            if key in ("result", "output", "response"):
                inner, _ = decode(inner_value)
                return inner, is_error
    return decoded, is_error


def _is_mcp_content(value: dict[str, Any]) -> bool:
    parts = value["content"]
    return bool(parts) and all(isinstance(p, dict) and "type" in p for p in parts)


def clean_id(value: Any) -> str | None:
    """A call id, or None for the placeholders that mean "no id"."""
    if value is None:
        return None
    text = str(value).strip()
    return None if text.lower() in PLACEHOLDERS else text
