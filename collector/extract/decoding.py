"""Decoding attribute values that carry JSON: strings, double-encoded strings, structured values,
and the envelopes producers wrap tool results in.

Values JSON or the store cannot hold as sent are converted the one way docs/values.md states,
and each conversion is noted (`note`) so that extraction reports it: the counts reach
partial_success and /metrics (`tooltrail_ingest_lossy_values_total{kind}`).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from tooltrail.collector.model import UNREAD

# Kinds of lossy conversion (docs/values.md): a label value of the metric each.
NON_FINITE = "non_finite"  # NaN / ±Infinity, or a number past a double's range → a string
BIG_INT = "big_int"  # an integer outside 64 bits → its decimal string
DUPLICATE_KEY = "duplicate_key"  # a JSON object or attribute list repeating a key: last kept
TOO_DEEP = "too_deep"  # nesting past the limit: JSON kept as text, deeper values cut
INVALID_TEXT = "invalid_text"  # NUL or a lone surrogate (no store holds them) → U+FFFD
MAX_JSON_DEPTH = 64  # JSON text nested deeper is kept as text (the store keeps 64 levels)
INT_RANGE = (-(2**63), 2**64)  # what orjson and the store's JSON hold exactly
_STRUCTURE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')  # strings, then brackets
_NOTES: contextvars.ContextVar[tuple[Counter[str], set[tuple[str, str]]] | None] = (
    contextvars.ContextVar("tooltrail_lossy", default=None))


@contextlib.contextmanager
def noting() -> Iterator[Counter[str]]:
    """Collect the conversions noted inside the block: kind → count, filled on leaving."""
    once: Counter[str] = Counter()
    texts: set[tuple[str, str]] = set()
    token = _NOTES.set((once, texts))
    counts: Counter[str] = Counter()
    try:
        yield counts
    finally:
        _NOTES.reset(token)
        counts.update(once)
        counts.update(kind for kind, _ in texts)


def note(kind: str, text: str | None = None) -> None:
    """Record one conversion (a no-op outside `noting`). A conversion of JSON `text` counts
    once per text, however often extraction decodes that text."""
    notes = _NOTES.get()
    if notes is None:
        return
    if text is None:
        notes[0][kind] += 1
    else:
        notes[1].add((kind, text))


def non_finite(value: float) -> Any:
    """A double JSON cannot hold, as the string proto3's JSON mapping writes it."""
    if math.isfinite(value):
        return value
    note(NON_FINITE)
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _too_deep(text: str) -> bool:
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return False
    depth = 0
    for match in _STRUCTURE.finditer(text):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return True
        elif token in ("]", "}"):
            depth -= 1
    return False


def _constant(name: str) -> str:
    note(NON_FINITE, _SOURCE.get())
    return name  # "NaN", "Infinity", "-Infinity": as proto3's JSON mapping writes them


def _float(literal: str) -> Any:
    value = float(literal)
    if math.isfinite(value):
        return value
    note(NON_FINITE, _SOURCE.get())
    return literal  # past a double's range (1e400): its literal text


def _int(literal: str) -> Any:
    value = int(literal)
    if INT_RANGE[0] <= value < INT_RANGE[1]:
        return value
    note(BIG_INT, _SOURCE.get())
    return literal


def _object(items: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(items)
    if len(out) != len(items):
        note(DUPLICATE_KEY, _SOURCE.get())
    return out


_SOURCE: contextvars.ContextVar[str] = contextvars.ContextVar("tooltrail_json_source", default="")
_DECODER = json.JSONDecoder(parse_float=_float, parse_int=_int, parse_constant=_constant,
                            object_pairs_hook=_object)


def pure_decode_json(text: str) -> Any:
    """The JSON value of `text` with the conversions of docs/values.md noted (the hooks
    above); ValueError when it is not JSON."""
    token = _SOURCE.set(text)
    try:
        return _DECODER.decode(text)
    finally:
        _SOURCE.reset(token)


# `pure_decode_json`, the reference, or its compiled equal (`collector.extract._wire.loads`),
# chosen with the walk (`collector.extract.otlp`)
decode_json: Callable[[str], Any] = pure_decode_json


def _loads(text: str) -> Any:
    """json.loads with the conversions of docs/values.md; ValueError when not JSON."""
    if _too_deep(text):
        note(TOO_DEEP, text)
        raise ValueError(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    value = decode_json(text)
    # A JSON escape can make a NUL or a lone surrogate that no store holds (a raw one in an
    # attribute value is replaced before it gets here): such strings take U+FFFD, as text does.
    if "\\u" in text and _ESCAPED_INVALID.search(text):
        cleaned = _valid_text(value)
        if cleaned != value:
            note(INVALID_TEXT, text)  # once per JSON text, as its other conversions
        value = cleaned
    return value


_ESCAPED_INVALID = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")
_INVALID = re.compile("[\x00\ud800-\udfff]")


def _valid_text(value: Any) -> Any:
    """`value` with NUL and lone surrogates in its strings (keys too) replaced by U+FFFD."""
    if isinstance(value, str):
        return _INVALID.sub("\ufffd", value) if _INVALID.search(value) else value
    if isinstance(value, list):
        return [_valid_text(v) for v in value]
    if isinstance(value, dict):
        return {_valid_text(k): _valid_text(v) for k, v in value.items()}
    return value


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
        decoded = _loads(text)
    except ValueError:
        return value, value if looks_structured else None
    inner = decoded.strip()[:1] if isinstance(decoded, str) else ""
    if inner in ("{", "[", '"'):  # double-encoded
        try:
            return _loads(decoded), None
        except ValueError:
            return decoded, decoded if inner != '"' else None
    return decoded, None


def as_arguments(value: Any) -> tuple[Any, str | None]:
    """Decode tool-call arguments: missing (None) is `{}`; JSON `null` stays null (None); a
    non-object string stays a string."""
    if value is None:
        return {}, None
    return decode(value)


def is_placeholder(value: Any) -> bool:
    """True for values that stand for "nothing here" (`""`, `"N/A"`, `"<not specified>"`)."""
    return isinstance(value, str) and value.strip().lower() in PLACEHOLDERS


def is_redacted(value: Any) -> bool:
    """True for redaction markers (content capture off): kept as they came, never scored."""
    return isinstance(value, str) and value.strip() in REDACTED


class ArgumentsUnread(Exception):
    """Arguments read as `UNREAD` were asked for: read them and reconcile again."""


def unknown_arguments(value: Any) -> bool:
    """True when arguments tell nothing: missing, `{}`, or a redaction placeholder."""
    if value is UNREAD:
        raise ArgumentsUnread
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
    if value is UNREAD:
        raise ArgumentsUnread
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
