"""Explicit tool calls of one turn (ArkSim's `AgentResponse.tool_calls`) → a Batch.

Body: `{"calls": [{"id"?, "name", "arguments"?, "result"?, "error"?}], "agent"?, "service"?,
"attributes"?}`. Field rules as ArkSim's tool-call schema: `name` is required, a non-empty
string; `id` defaults to `""` (no id); `arguments` must be a JSON object (default `{}`); a
non-string `result` or `error` is JSON-serialised; `source` is not the caller's to set.
A body that breaks a rule is refused whole (`BadCall`, naming the field).

The calls are stored in the positional turn of their conversation (`merge.position_key`),
which readers join to the stored turn at that position. Each call's span id is a digest of its
content and its occurrence in the body, so the same body sent twice stores nothing new.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import orjson

from tooltrail.collector.capture.merge import position_key
from tooltrail.collector.errors import InvalidPayload
from tooltrail.collector.model import KEY_FROM_ROOT, Batch, ToolCall, TraceInfo
from tooltrail.collector.projects import DEFAULT_PROJECT

SOURCE = "explicit"
CALL_KEYS = frozenset({"id", "name", "arguments", "result", "error"})
BODY_KEYS = frozenset({"calls", "agent", "service", "attributes"})
MAX_INDEX = 2**31 - 1
TICK_NS = 1_000  # calls of one body are spaced this far apart: one step each, in body order
MAX_ATTRIBUTES = 64


class BadCall(InvalidPayload):
    """A body that breaks a field rule; `field` names it (`calls[2].name`)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def as_text(value: Any) -> str | None:
    """ArkSim's rule for `result` and `error`: strings as they are, anything else as JSON."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def check_call(value: Any, where: str) -> dict[str, Any]:
    """One call entry by the field rules: {"id", "name", "arguments", "result", "error"}."""
    if not isinstance(value, dict):
        raise BadCall(where, "must be a JSON object")
    for key in value:
        if key == "source":
            raise BadCall(f"{where}.source", "is set by tooltrail (provenance), not by the caller")
        if key not in CALL_KEYS:
            raise BadCall(f"{where}.{key}", "unknown field (id, name, arguments, result, error)")
    name = value.get("name")
    if not isinstance(name, str) or not name.strip():
        raise BadCall(f"{where}.name", "required, a non-empty string")
    call_id = value.get("id")
    if call_id is not None and not isinstance(call_id, str):
        raise BadCall(f"{where}.id", "must be a string")
    arguments = value.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        raise BadCall(f"{where}.arguments", "must be a JSON object")
    return {"id": call_id or "", "name": name, "arguments": arguments or {},
            "result": as_text(value.get("result")), "error": as_text(value.get("error"))}


def _optional_text(body: Mapping[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise BadCall(key, "must be a non-empty string")
    return value


def _attributes(body: Mapping[str, Any]) -> dict[str, Any]:
    value = body.get("attributes")
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadCall("attributes", "must be a JSON object")
    if len(value) > MAX_ATTRIBUTES:
        raise BadCall("attributes", f"at most {MAX_ATTRIBUTES} attributes")
    for key, item in value.items():
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise BadCall(f"attributes.{key}", "must be a string, number or boolean")
    return dict(value)


def content_digest(value: Any) -> str:
    """A stable digest of a JSON value (sorted keys): what makes a resend store nothing new."""
    try:
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # integers past 64 bits
        text = json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(text).hexdigest()


def check_index(index: str) -> int:
    """A turn index from a path: a zero-based integer."""
    if not index.isdigit() or int(index) > MAX_INDEX:
        raise BadCall("index", "must be a zero-based integer turn index")
    return int(index)


def explicit_batch(conversation: str, index: int, body: Any, now_ns: int,
                   project: str = DEFAULT_PROJECT) -> Batch:
    """The Batch of one explicit capture to `conversation` of `project` (`now_ns`: when it
    arrived)."""
    if not conversation.strip():
        raise BadCall("key", "the conversation key must not be empty")
    if not isinstance(body, dict):
        raise BadCall("body", "must be a JSON object")
    for key in body:
        if key not in BODY_KEYS:
            raise BadCall(key, "unknown field (calls, agent, service, attributes)")
    raw = body.get("calls")
    if not isinstance(raw, list):
        raise BadCall("calls", "required, a JSON array of calls")
    calls = [check_call(c, f"calls[{i}]") for i, c in enumerate(raw)]
    agent = _optional_text(body, "agent")
    service = _optional_text(body, "service")
    attributes = _attributes(body)
    turn = position_key(conversation, index, project)
    seen: dict[str, int] = {}
    out = []
    for i, c in enumerate(calls):
        digest = content_digest([c["id"], c["name"], c["arguments"], c["result"], c["error"]])
        n = seen[digest] = seen.get(digest, -1) + 1
        start = now_ns + i * TICK_NS
        out.append(ToolCall(
            trace_id=turn, span_id=f"explicit:{digest[:32]}#{n}", parent_span_id=None,
            name=c["name"], call_id=c["id"] or None, arguments=c["arguments"],
            arguments_raw=None, result=c["result"], error=c["error"] or None,
            status="error" if c["error"] else "ok", start_ns=start, end_ns=start + 1,
            convention=SOURCE, source=SOURCE,
        ))
    info = TraceInfo(
        trace_id=turn, turn_key=turn, conversation_key=conversation, key_rank=KEY_FROM_ROOT,
        service=service, agents=frozenset({agent} if agent else ()), start_ns=now_ns,
        end_ns=now_ns + max(len(out), 1) * TICK_NS, has_agent_root=False, attributes=attributes,
        project=project,
    )
    return Batch(tuple(out), (info,), span_count=len(out))
