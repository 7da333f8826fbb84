"""Decoding attribute values that carry JSON: strings, double-encoded strings, structured values,
and the envelopes producers wrap tool results in."""

from __future__ import annotations

import json
import math
from typing import Any

PLACEHOLDERS = frozenset({"", "unknown", "<not specified>", "none", "null", "n/a"})
REDACTED = frozenset({"__REDACTED__", "[REDACTED]", "<redacted>", "REDACTED"})
WRAPPER_KEYS = ("result", "output", "response")
MAX_UNWRAP = 4  # envelopes nested deeper than this are left as they are


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
    inner = decoded.strip()[:1] if isinstance(decoded, str) else ""
    if inner in ("{", "[", '"'):  # double-encoded
        try:
            return json.loads(decoded), None
        except ValueError:
            return decoded, decoded if inner != '"' else None
    return decoded, None


def as_arguments(value: Any) -> tuple[Any, str | None]:
    """Decode tool-call arguments: missing or null is `{}`; a non-object string stays a string."""
    if value is None:
        return {}, None
    decoded, raw = decode(value)
    if decoded is None:
        return {}, None
    return decoded, raw


def is_placeholder(value: Any) -> bool:
    """True for values that stand for "nothing here" (`""`, `"N/A"`, `"<not specified>"`)."""
    return isinstance(value, str) and value.strip().lower() in PLACEHOLDERS


def is_redacted(value: Any) -> bool:
    """True for redaction markers (content capture off): kept as they came, never scored."""
    return isinstance(value, str) and value.strip() in REDACTED


def unknown_arguments(value: Any) -> bool:
    """True when arguments tell nothing: missing, `{}`, or a redaction placeholder."""
    return value is None or value == {} or is_placeholder(value) or is_redacted(value)


def unwrap_result(value: Any) -> tuple[Any, bool]:
    """Decode a tool result and strip known envelopes; returns (result, envelope says error).

    Envelopes: MCP `{content: [{type: text, text}], structuredContent?, isError?}`, LangChain's
    serialized ToolMessage `{type: tool, data: {content, status}}`, Bedrock/Strands content
    blocks `[{"text": ...}]`, and single-key `{result|output|response}` wrappers (ADK).
    Placeholders (`"<not specified>"`) become None.
    """
    current, _ = decode(value)
    is_error = False
    for _ in range(MAX_UNWRAP):
        inner, error = _unwrap_once(current)
        is_error = is_error or error
        if inner is current:
            break
        current = inner
    if isinstance(current, str) and current.strip().lower() in PLACEHOLDERS - {""}:
        return None, is_error
    return current, is_error


def _unwrap_once(value: Any) -> tuple[Any, bool]:
    """Strip one envelope, or return `value` itself (the same object) when there is none."""
    if isinstance(value, list) and value and all(_is_content_block(b) for b in value):
        return _join_blocks(value), False
    if not isinstance(value, dict):
        return value, False
    flag = value.get("isError", value.get("is_error"))
    is_error = flag is True
    content = value.get("content")
    if isinstance(content, list) and (
        "isError" in value or "structuredContent" in value or _all_typed(content)
    ):
        if value.get("structuredContent") is not None:
            return value["structuredContent"], is_error
        texts = [
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        ]
        return decode("\n".join(texts))[0], is_error
    message = langchain_tool_message(value)
    if message is not None:
        return decode(message.get("content"))[0], message.get("status") == "error"
    if len(value) == 1:
        ((key, inner),) = value.items()
        if key in WRAPPER_KEYS:
            return decode(inner)[0], is_error
    return value, is_error


def langchain_tool_message(value: Any) -> dict[str, Any] | None:
    """The `data` of a serialized LangChain ToolMessage (`{"type": "tool", "data": {...}}`)."""
    if isinstance(value, dict) and value.get("type") == "tool":
        data = value.get("data")
        if isinstance(data, dict) and "content" in data:
            return data
    return None


def _all_typed(parts: list[Any]) -> bool:
    return bool(parts) and all(isinstance(p, dict) and "type" in p for p in parts)


def _is_content_block(block: Any) -> bool:
    """A Bedrock-style content block: `{"text": str}` or `{"json": value}`."""
    return isinstance(block, dict) and len(block) == 1 and (
        isinstance(block.get("text"), str) or "json" in block
    )


def _join_blocks(blocks: list[dict[str, Any]]) -> Any:
    if len(blocks) == 1 and "json" in blocks[0]:
        return blocks[0]["json"]
    text = "\n".join(str(b.get("text", "")) for b in blocks if "text" in b)
    return decode(text)[0]


def clean_id(value: Any) -> str | None:
    """A call id, or None for the placeholders that mean "no id"."""
    if value is None:
        return None
    text = str(value).strip()
    return None if text.lower() in PLACEHOLDERS or text in REDACTED else text


def canonical(value: Any) -> str:
    """A stable text form of a JSON value, for comparing arguments (key order, 1 == 1.0)."""
    return json.dumps(_normal(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _normal(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return int(value)
    if isinstance(value, dict):
        return {str(k): _normal(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normal(v) for v in value]
    return value
