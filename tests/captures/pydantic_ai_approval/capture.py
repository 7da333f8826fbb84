"""Capture: Pydantic AI human-in-the-loop tool approval (deferred tools), native instrumentation.

`@agent.tool_plain(requires_approval=True)` and `output_type=[str, DeferredToolRequests]`, as
Pydantic AI's "Deferred Tools" docs show: the run that asks ends with a `DeferredToolRequests`
output; the user's decision goes into `DeferredToolResults(approvals={call_id: True |
ToolDenied(...)})` and a new run continues from `result.all_messages()`. Conversation = Pydantic
AI's own `conversation_id=` run argument, the same for every run. Tracing: the `Instrumentation`
capability with `include_content=True` (as `pydantic_ai` here).

  turn 1: delete_account(alice) requested, waits      turn 2: approved → executed
  turn 3: delete_account(bob) requested, waits        turn 4: denied (no tool span: rejected)
  turn 5: delete_account(carol) requested, waits — no answer ever comes
"""
from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import _common  # noqa: E402

provider, exporter = _common.setup_tracing("tooltrail-capture-pydantic-ai-approval")

from pydantic_ai import (  # noqa: E402
    Agent, DeferredToolRequests, DeferredToolResults, InstrumentationSettings, ToolDenied,
)
from pydantic_ai.capabilities import Instrumentation  # noqa: E402
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

CONV_ID = "conv-pydantic-ai-approval-0001"
settings = InstrumentationSettings(tracer_provider=provider, include_content=True)


def delete(login):
    return [ToolCallPart(tool_name="delete_account", args=json.dumps({"login": login}),
                         tool_call_id=f"call_del_{login}")]


SCRIPT = [
    delete("alice"), [TextPart("alice's account is deleted.")],
    delete("bob"), [TextPart("I did not delete bob's account.")],
    delete("carol"),
]
_n = 0


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    global _n
    parts = SCRIPT[_n]
    _n += 1
    return ModelResponse(parts=parts)


agent = Agent(
    FunctionModel(scripted, model_name="scripted-fn"),
    name="account_assistant",
    instructions="Manage accounts. Use tools.",
    output_type=[str, DeferredToolRequests],
    capabilities=[Instrumentation(settings=settings)],
)


@agent.tool_plain(requires_approval=True)
def delete_account(login: str) -> str:
    """Delete a user's account (needs the user's approval)."""
    return f"deleted {login}"


async def ask(prompt, history):
    result = await agent.run(prompt, message_history=history, conversation_id=CONV_ID)
    assert isinstance(result.output, DeferredToolRequests), result.output
    (call,) = result.output.approvals
    return result.all_messages(), call.tool_call_id


async def answer(history, call_id, decision):
    result = await agent.run(message_history=history, conversation_id=CONV_ID,
                             deferred_tool_results=DeferredToolResults(approvals={call_id: decision}))
    assert isinstance(result.output, str), result.output
    print("turn output:", result.output)
    return result.all_messages()


async def main():
    history, call_id = await ask("Delete alice's account.", None)
    history = await answer(history, call_id, True)
    history, call_id = await ask("Delete bob's account.", history)
    history = await answer(history, call_id, ToolDenied("Do not delete bob's account."))
    await ask("Delete carol's account.", history)
    assert _n == len(SCRIPT), (_n, len(SCRIPT))


asyncio.run(main())
provider.force_flush()


def req(login, status):
    # requested_in_turn: false = executed (or refused) in the run after the model's request
    return {"name": "delete_account", "arguments": {"login": login}, "error": status == "rejected",
            "step": 0, "call_id": f"call_del_{login}", "status": status,
            "requested_in_turn": status == "pending"}


expected = {
    "framework": "pydantic-ai",
    "library_versions": _common.versions("pydantic-ai-slim", "opentelemetry-sdk"),
    "instrumentation_version": settings.version,
    "conversation_id": CONV_ID,
    "turns": [
        {"calls": [req("alice", "pending")]},
        {"calls": [req("alice", "ok")]},
        {"calls": [req("bob", "pending")]},
        # The denial is a tool_call_response (ToolDenied's message) in the resumed run's chat
        # input, to a tool of kind "unapproved" (model_request_parameters), with no tool span.
        {"calls": [req("bob", "rejected")]},
        {"calls": [req("carol", "pending")]},
    ],
    "user_answers": {"call_del_alice": "approved", "call_del_bob": "denied", "call_del_carol": None},
    "notes": (
        "Tool(requires_approval=True) + output_type=[str, DeferredToolRequests]; the decision goes "
        "back as DeferredToolResults(approvals={call_id: True | ToolDenied}) in a new run with the "
        "message history and the same conversation_id. The last request is never answered. The "
        "asking run has no tool span; its invoke_agent span's final_result is the DeferredToolRequests. "
        "bob's denial runs no tool: turn 4's chat span input answers call_del_bob with ToolDenied's "
        "message (a tool_call_response to an approval-gated tool, and no execute_tool span of it)."
    ),
}
_common.write_otlp(HERE, exporter.get_finished_spans())
_common.write_expected(HERE, expected)
print("spans:", len(exporter.get_finished_spans()))
