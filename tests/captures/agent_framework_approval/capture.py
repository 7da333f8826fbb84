"""Capture: Microsoft Agent Framework function approvals (human in the loop), native telemetry.

`@tool(approval_mode="always_require")`, as the framework's tool-approval docs show: the run
that asks completes with `result.user_input_requests` (a `function_approval_request` content)
instead of running the tool; the user's decision goes back as
`request.to_function_approval_response(approved=...)` in a user `Message` of the next
`agent.run` on the same session. Client, telemetry switches and conversation id as
`agent_framework` (a scripted `BaseChatClient` with the framework's own layers;
ENABLE_INSTRUMENTATION / ENABLE_SENSITIVE_DATA; `AgentSession(service_session_id=...)`).

  turn 1: delete_account(alice) requested, waits      turn 2: approved → executed
  turn 3: delete_account(bob) requested, waits        turn 4: rejected
  turn 5: delete_account(carol) requested, waits — no answer ever comes
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
provider, exporter = _common.setup_tracing("tooltrail-capture-agent-framework-approval")

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

CONV_ID = "conv-agent-framework-approval-0001"


@tool(approval_mode="always_require")
def delete_account(login: str) -> str:
    """Delete a user's account (needs the user's approval)."""
    return f"deleted {login}"


def delete(login):
    return [_common.call("delete_account", {"login": login}, f"call_del_{login}")]


SCRIPT = [
    delete("alice"), [_common.text("alice's account is deleted.")],
    delete("bob"), [_common.text("I did not delete bob's account.")],
    delete("carol"),
]


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
    agent = Agent(client=client, name="account_assistant",
                  instructions="Manage accounts. Use tools.", tools=[delete_account])
    session = AgentSession(service_session_id=CONV_ID)

    async def ask(prompt):
        result = await agent.run(prompt, session=session)
        (request,) = result.user_input_requests
        return request

    async def answer(request, approved):
        result = await agent.run(Message(role="user", contents=[
            request.to_function_approval_response(approved=approved)]), session=session)
        assert not result.user_input_requests
        print("turn output:", result.text.strip())

    await answer(await ask("Delete alice's account."), True)
    await answer(await ask("Delete bob's account."), False)
    await ask("Delete carol's account.")
    return client


client = asyncio.run(main())
assert client.n == len(SCRIPT), (client.n, len(SCRIPT))
provider.force_flush()


def req(login, status):
    # requested_in_turn: false = executed (or refused) in the run after the model's request
    return {"name": "delete_account", "arguments": {"login": login}, "error": status == "rejected",
            "step": 0, "call_id": f"call_del_{login}", "status": status,
            "requested_in_turn": status == "pending"}


expected = {
    "framework": "agent-framework",
    "library_versions": _common.versions("agent-framework-core", "opentelemetry-sdk"),
    "conversation_id": CONV_ID,
    "turns": [
        {"calls": [req("alice", "pending")]},
        {"calls": [req("alice", "ok")]},
        {"calls": [req("bob", "pending")]},
        {"calls": [req("bob", "rejected")]},
        {"calls": [req("carol", "pending")]},
    ],
    "notes": (
        "@tool(approval_mode='always_require'); the asking run ends with user_input_requests, "
        "the answer is to_function_approval_response(approved) in the next run on the same "
        "AgentSession(service_session_id=...). The last request is never answered."
    ),
}
_common.write_otlp(HERE, exporter.get_finished_spans())
_common.write_expected(HERE, expected)
print("spans:", len(exporter.get_finished_spans()))
