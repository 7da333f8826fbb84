"""Capture: Microsoft Agent Framework (agent-framework-core) native OpenTelemetry, offline.

A scripted chat client: `BaseChatClient` composed with the framework's own layers
(`FunctionInvocationLayer`, `ChatMiddlewareLayer`, `ChatTelemetryLayer`) exactly as its
provider clients are, so the real function-invocation loop and the real telemetry run; only
`_inner_get_response` is scripted. Telemetry is switched on with the documented environment
variables ENABLE_INSTRUMENTATION / ENABLE_SENSITIVE_DATA (content capture).

Conversation: Agent Framework sets `gen_ai.conversation.id` from the session's
`service_session_id` (a service-managed thread id); an `AgentSession(service_session_id=...)`
shared by the three turns gives it. Because such a session is "service-stored", the framework
sends only the new messages to the client; the scripted client does not need the history.
"""
from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import _common  # noqa: E402

os.environ.setdefault("ENABLE_INSTRUMENTATION", "true")
os.environ.setdefault("ENABLE_SENSITIVE_DATA", "true")

OUT = Path(os.environ.get("CAPTURE_OUT", HERE))
SERVICE = os.environ.get("CAPTURE_SERVICE", "tooltrail-capture-agent-framework")
provider, exporter = _common.setup_tracing(SERVICE)

from agent_framework import (  # noqa: E402
    Agent,
    AgentSession,
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    Message,
    tool,
)
from agent_framework.observability import ChatTelemetryLayer  # noqa: E402

CONV_ID = "conv-agent-framework-0001"


@tool
def get_weather(city: str) -> dict:
    """Current weather for a city."""
    return {"city": city, "temp_c": {"Paris": 18, "London": 14, "Berlin": 11}.get(city, 20)}


@tool
def get_time(city: str) -> str:
    """Local time in a city."""
    return f"12:00 in {city}"


@tool
def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
    """Convert money between currencies."""
    raise RuntimeError(f"FX service unavailable for {from_currency}->{to_currency}")


TURNS, SCRIPT = _common.TURNS, _common.SCRIPT


class ScriptedChatClient(
    FunctionInvocationLayer[Any],
    ChatMiddlewareLayer[Any],
    ChatTelemetryLayer[Any],
    BaseChatClient[Any],
):
    """Returns the scripted model responses, one per call, in order."""

    OTEL_PROVIDER_NAME = "scripted"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.model_id = "scripted-model"
        self.n = 0

    def _inner_get_response(self, *, messages, stream, options, **kwargs):
        assert not stream
        blocks = SCRIPT[self.n]
        self.n += 1

        async def respond() -> ChatResponse:
            contents = [
                Content.from_function_call(b[3], b[1], arguments=json.dumps(b[2])) if b[0] == "tool"
                else Content.from_text(b[1])
                for b in blocks
            ]
            return ChatResponse(
                messages=[Message(role="assistant", contents=contents)],
                response_id=f"resp_{self.n}",
                model=self.model_id,
                finish_reason="tool_calls" if blocks[0][0] == "tool" else "stop",
            )

        return respond()


async def main() -> ScriptedChatClient:
    client = ScriptedChatClient()
    agent = Agent(
        client=client,
        name="travel_assistant",
        instructions="Help with travel questions. Use tools.",
        tools=[get_weather, get_time, convert_currency],
    )
    session = AgentSession(service_session_id=CONV_ID)
    for prompt, _ in TURNS:
        result = await agent.run(prompt, session=session)
        print("turn output:", result.text.strip())
    return client


client = asyncio.run(main())
assert client.n == len(SCRIPT), (client.n, len(SCRIPT))
provider.force_flush()

expected = {
    "framework": "agent-framework",
    "library_versions": _common.versions("agent-framework-core", "opentelemetry-sdk"),
    "conversation_id": CONV_ID,
    "turns": _common.expected_turns(),
    "notes": (
        "Scripted BaseChatClient composed with FunctionInvocationLayer, ChatMiddlewareLayer and "
        "ChatTelemetryLayer (as the provider clients are). Telemetry via ENABLE_INSTRUMENTATION / "
        "ENABLE_SENSITIVE_DATA. Conversation id = AgentSession(service_session_id=...). Turn = one "
        "agent.run(...). Turn 1 step 0 = two function_call contents in one response. convert_currency "
        "raises; the framework returns the error to the model as a function result and the turn continues."
    ),
}
_common.write_otlp(OUT, exporter.get_finished_spans())
_common.write_expected(OUT, expected)
print("spans:", len(exporter.get_finished_spans()))
