"""JSON bodies of the capture routes, decoded with the strings the store can hold.

OTLP strings lose their NUL characters where spans are read (`extract.otlp.clean_text`):
PostgreSQL text and JSON cannot hold them, so a write that carries one fails whole. The same
rule for JSON bodies, applied once at decoding, to keys and values alike.
"""

from __future__ import annotations

import json
from typing import Any

from tooltrail.collector.extract.otlp import clean_text


def loads(text: str | bytes) -> Any:
    """`json.loads`, with NUL characters in strings replaced (raises ValueError as it does)."""
    value = json.loads(text)
    # in JSON text a NUL can only be the escape \u0000: the common case skips the walk
    escaped = "\\u0000" in text if isinstance(text, str) else b"\\u0000" in text
    return _clean(value) if escaped else value


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value
