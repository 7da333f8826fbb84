"""Capture: Google ADK tool confirmation (human in the loop), default telemetry schema v2.

`FunctionTool(delete_account, require_confirmation=True)`, as ADK's docs show. The model asks
for the tool in one invocation; ADK answers the model's call with "requires confirmation",
asks the user through its `adk_request_confirmation` function call and ends the invocation;
the user's FunctionResponse `{"confirmed": true|false}` starts the next invocation, in which ADK
runs (or refuses) the tool under the model's call id. Conversation = the ADK session id.

  turn 1: delete_account(alice) requested, waits      turn 2: approved → executed
  turn 3: delete_account(bob) requested, waits        turn 4: rejected
  turn 5: delete_account(carol) requested, waits — no answer ever comes
"""
from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import AsyncGenerator

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import _common  # noqa: E402

os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
provider, exporter = _common.setup_tracing("tooltrail-capture-adk-approval")

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.adk.tools import FunctionTool  # noqa: E402
from google.genai import types  # noqa: E402

CONV_ID = "conv-adk-approval-0001"
USER_ID = "user-1"
APP = "approval_app"


def delete_account(login: str) -> dict:
    """Delete a user's account (needs the user's confirmation)."""
    return {"deleted": login}


def fc(name, args, cid):
    return types.Part(function_call=types.FunctionCall(name=name, args=args, id=cid))


def text(t):
    return types.Part(text=t)


# The model's responses in order, across invocations.
SCRIPT = [
    [fc("delete_account", {"login": "alice"}, "call_del_alice")],  # turn 1, then it waits
    [text("alice's account is deleted.")],                           # turn 2 (approved)
    [fc("delete_account", {"login": "bob"}, "call_del_bob")],      # turn 3, then it waits
    [text("I did not delete bob's account.")],                      # turn 4 (rejected)
    [fc("delete_account", {"login": "carol"}, "call_del_carol")],  # turn 5, never answered
]
_n = 0


class ScriptedLlm(BaseLlm):
    model: str = "scripted-llm"

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        global _n
        parts = SCRIPT[_n]
        _n += 1
        yield LlmResponse(content=types.Content(role="model", parts=parts),
                          finish_reason=types.FinishReason.STOP)


agent = LlmAgent(
    name="account_assistant",
    model=ScriptedLlm(),
    instruction="Manage accounts. Use tools.",
    tools=[FunctionTool(delete_account, require_confirmation=True)],
)


async def run(runner, message):
    confirmation = None
    async for ev in runner.run_async(user_id=USER_ID, session_id=CONV_ID, new_message=message):
        for call in ev.get_function_calls():
            if call.name == "adk_request_confirmation":
                confirmation = call.id
    return confirmation


def user(t):
    return types.Content(role="user", parts=[types.Part(text=t)])


def answer(confirmation_id, confirmed):
    return types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
        id=confirmation_id, name="adk_request_confirmation", response={"confirmed": confirmed}))])


async def main():
    runner = InMemoryRunner(agent=agent, app_name=APP)
    await runner.session_service.create_session(app_name=APP, user_id=USER_ID, session_id=CONV_ID)
    pending = await run(runner, user("Delete alice's account."))
    assert pending, "ADK asked for no confirmation"
    assert await run(runner, answer(pending, True)) is None
    pending = await run(runner, user("Delete bob's account."))
    assert pending, "ADK asked for no confirmation"
    assert await run(runner, answer(pending, False)) is None
    assert await run(runner, user("Delete carol's account.")), "ADK asked for no confirmation"
    assert _n == len(SCRIPT), (_n, len(SCRIPT))


asyncio.run(main())
provider.force_flush()

from google.adk.telemetry._schema_version import resolve_schema_version  # noqa: E402


def req(login, status):
    # requested_in_turn: false = executed (or refused) in the turn after the model's request
    return {"name": "delete_account", "arguments": {"login": login}, "error": status == "rejected",
            "step": 0, "call_id": f"call_del_{login}", "status": status,
            "requested_in_turn": status == "pending"}


expected = {
    "framework": "google-adk",
    "library_versions": _common.versions("google-adk", "google-genai", "opentelemetry-sdk"),
    "adk_telemetry_schema_version": resolve_schema_version(),
    "conversation_id": CONV_ID,
    "turns": [
        {"calls": [req("alice", "pending")]},
        {"calls": [req("alice", "ok")]},
        {"calls": [req("bob", "pending")]},
        {"calls": [req("bob", "rejected")]},
        {"calls": [req("carol", "pending")]},
    ],
    "notes": (
        "FunctionTool(require_confirmation=True). A requested call waits for approval in its turn "
        "(status pending, not executed) and is executed (or rejected) in the next turn under the "
        "same call id; the last one is never answered and stays pending. adk_request_confirmation "
        "is ADK plumbing. `step` of a call executed in the turn after its request: 0 (its own step)."
    ),
}
_common.write_otlp(HERE, exporter.get_finished_spans())
_common.write_expected(HERE, expected)
print("spans:", len(exporter.get_finished_spans()))
