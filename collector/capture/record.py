"""Recording an uninstrumented agent's tool calls as GenAI-convention spans.

For agents whose framework exports no spans: the calls travel the normal OTLP path (any
exporter, any TracerProvider) and are extracted like those of an instrumented agent. Needs only
`opentelemetry-api` at import; the application sets up the SDK and its exporter.

    with agent_turn("conversation-42", agent="support") as turn:
        with turn.tool("lookup_order", {"order_id": 42}, call_id="call_1") as call:
            call.result = lookup_order(42)          # an exception marks the call failed
        turn.call("send_email", {"to": "a@example.com"}, result="sent")  # already done

One `agent_turn` is one turn (an `invoke_agent` root span carrying `gen_ai.conversation.id`);
each tool call is an `execute_tool` child span with `gen_ai.tool.name`, `gen_ai.tool.call.id`
(when given) and the JSON of its arguments and result (OTel GenAI semantic conventions).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

SCOPE = "tooltrail.capture.record"


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


class ToolCallSpan:
    """The call being timed by `Turn.tool`: set `result` (or `error`) before the block ends."""

    def __init__(self) -> None:
        self.result: Any = None
        self.error: str | None = None


class Turn:
    """The tool calls of one agent turn, each recorded as an `execute_tool` span."""

    def __init__(self, tracer: Any) -> None:
        self._tracer = tracer

    @contextmanager
    def tool(self, name: str, arguments: Mapping[str, Any] | None = None, *,
             call_id: str | None = None) -> Iterator[ToolCallSpan]:
        """Time one tool execution; an exception leaving the block fails the call (re-raised)."""
        if not name:
            raise ValueError("a tool call needs a name")
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                      "gen_ai.tool.call.arguments": json.dumps(dict(arguments or {}),
                                                               default=str)}
        if call_id:  # made-up ids could collide with given ones, and ids merge calls
            attributes["gen_ai.tool.call.id"] = call_id
        with self._tracer.start_as_current_span(
            f"execute_tool {name}", attributes=attributes, record_exception=False,
            set_status_on_exception=False,
        ) as span:
            call = ToolCallSpan()
            try:
                yield call
            except BaseException as exc:
                span.record_exception(exc)
                span.set_attribute("error.type", type(exc).__name__)
                span.set_status(Status(StatusCode.ERROR, str(exc)))
                raise
            if call.error:
                span.set_attribute("error.type", "tool_error")
                span.set_status(Status(StatusCode.ERROR, call.error))
            if call.result is not None:
                span.set_attribute("gen_ai.tool.call.result", _json(call.result))

    def call(self, name: str, arguments: Mapping[str, Any] | None = None, *,
             result: Any = None, error: str | None = None, call_id: str | None = None) -> None:
        """Record a call that already ran (its span has no meaningful duration)."""
        with self.tool(name, arguments, call_id=call_id) as call:
            call.result, call.error = result, error


@contextmanager
def agent_turn(conversation: str, *, agent: str = "agent",
               tracer_provider: Any = None) -> Iterator[Turn]:
    """One turn of `conversation` (the agent's `invoke_agent` span) recording its tool calls;
    spans go to `tracer_provider`, or the global one."""
    if not conversation:
        raise ValueError("a turn needs its conversation id")
    tracer = trace.get_tracer(SCOPE, tracer_provider=tracer_provider)
    with tracer.start_as_current_span(f"invoke_agent {agent}", attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent,
        "gen_ai.conversation.id": conversation,
    }):
        yield Turn(tracer)
