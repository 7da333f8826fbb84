"""OpenAI-format chat messages (agentevals trajectories) → turns of tool calls, and a Batch.

A trajectory is a list of messages `{role, content?, tool_calls?, tool_call_id?}`; an assistant
message's `tool_calls` (`{id, type: function, function: {name, arguments}}`, arguments a JSON
string) are the calls the model made together (one step); a `tool` message answers the call
whose id it names. Every `user` message after the first starts a new turn.

As a `check` input the calls become the Batch extraction would make for one agent run per
turn: each turn a trace, the calls of one assistant message overlapping in time (so
reconciliation gives them one step, as it does for one model response).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tooltrail.collector.extract import ExtractOptions, is_plumbing
from tooltrail.collector.extract.decoding import as_arguments
from tooltrail.collector.model import KEY_FROM_ROOT, Batch, ToolCall, TraceInfo

CONVENTION = "openai.messages"
TICK_NS = 1_000


class BadMessages(ValueError):
    """Not a list of OpenAI-format messages; the message names the item at fault."""


@dataclass(slots=True)
class MessageCall:
    name: str
    arguments: Any
    arguments_raw: str | None
    call_id: str | None
    step: int
    result: Any = None
    error: str | None = None


@dataclass(slots=True)
class MessageTurn:
    calls: list[MessageCall] = field(default_factory=list)


def load_messages(data: bytes | str) -> list[Any]:
    """Messages from a JSON list, `{"messages": [...]}`, or JSON Lines of messages."""
    try:
        value = json.loads(data)
    except ValueError:
        value = []
        lines = data.splitlines() if isinstance(data, str) else data.decode().splitlines()
        for number, line in enumerate(lines, 1):
            if line.strip():
                try:
                    value.append(json.loads(line))
                except ValueError as exc:
                    raise BadMessages(f"line {number}: not JSON: {exc}") from exc
    if isinstance(value, Mapping):
        value = value.get("messages")
    if not isinstance(value, list):
        raise BadMessages("OpenAI messages must be a list (or an object with `messages`)")
    return value


def message_turns(messages: Sequence[Any], *, keep_plumbing: bool = False,
                  where: str = "messages") -> list[MessageTurn]:
    """The calls of a trajectory, grouped in turns (a user message opens the next turn)."""
    turns = [MessageTurn()]
    by_id: dict[str, MessageCall] = {}
    step = 0
    seen_user = False
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise BadMessages(f"{where}[{i}]: a message must be an object with a `role`")
        role = message["role"]
        if role == "user":
            if seen_user and (turns[-1].calls or step):
                turns.append(MessageTurn())
                step = 0
            seen_user = True
        elif role == "assistant":
            calls = message.get("tool_calls") or []
            if not isinstance(calls, list):
                raise BadMessages(f"{where}[{i}].tool_calls: must be a list")
            added = False
            for j, call in enumerate(calls):
                made = _call(call, step, f"{where}[{i}].tool_calls[{j}]")
                if not keep_plumbing and is_plumbing(made.name):
                    continue
                turns[-1].calls.append(made)
                added = True
                if made.call_id:
                    by_id[made.call_id] = made
            step += added
        elif role == "tool":
            answered = by_id.get(str(message.get("tool_call_id") or ""))
            if answered is not None:
                content = message.get("content")
                answered.result, _ = as_arguments(content) if isinstance(content, str) else (
                    content, None)
                if isinstance(content, str) and content.startswith("[tool error]"):
                    answered.error = content
    return turns


def _call(call: Any, step: int, where: str) -> MessageCall:
    if not isinstance(call, Mapping):
        raise BadMessages(f"{where}: a tool call must be an object")
    inner = call.get("function")
    function: Mapping[str, Any] = inner if isinstance(inner, Mapping) else call
    name = function.get("name")
    if not isinstance(name, str) or not name.strip():
        raise BadMessages(f"{where}.function.name: required")
    arguments, raw = as_arguments(function.get("arguments"))
    call_id = call.get("id")
    return MessageCall(name.strip(), arguments, raw, str(call_id) if call_id else None, step)


def _hex(seed: str, size: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:size]


def batch_from_messages(messages: Sequence[Any], key: str,
                        options: ExtractOptions | None = None) -> Batch:
    """One conversation `key`, one trace per turn, calls as executed tool calls."""
    options = options or ExtractOptions()
    turns = message_turns(messages, keep_plumbing=options.keep_plumbing)
    calls: list[ToolCall] = []
    traces: list[TraceInfo] = []
    clock = TICK_NS
    for t, turn in enumerate(turns):
        trace_id = _hex(f"{key}\0{t}", 32)
        root = _hex(f"{key}\0{t}\0root", 16)
        start = clock
        for c, call in enumerate(turn.calls):
            begin = start + (call.step + 1) * 2 * TICK_NS  # one step's calls overlap in time
            calls.append(ToolCall(
                trace_id=trace_id, span_id=_hex(f"{key}\0{t}\0{c}", 16), parent_span_id=root,
                name=call.name, call_id=call.call_id, arguments=call.arguments,
                arguments_raw=call.arguments_raw, result=call.result, error=call.error,
                status="error" if call.error else "ok", start_ns=begin,
                end_ns=begin + TICK_NS, convention=CONVENTION,
            ))
            clock = max(clock, begin + TICK_NS)
        clock += 2 * TICK_NS
        traces.append(TraceInfo(
            trace_id=trace_id, turn_key=trace_id, conversation_key=key, key_rank=KEY_FROM_ROOT,
            service=None, agents=frozenset(), start_ns=start, end_ns=clock,
            has_agent_root=True,
        ))
        clock += TICK_NS
    return Batch(tuple(calls), tuple(traces), span_count=len(calls) + len(traces))


def expected_turns(messages: Sequence[Any], where: str = "reference") -> list[list[dict[str, Any]]]:
    """A reference trajectory's calls as expectation calls (`{name, arguments}`), per turn."""
    return [
        [{"name": c.name, "arguments": c.arguments} for c in turn.calls]
        for turn in message_turns(messages, keep_plumbing=True, where=where)
    ]
