"""Capture: Google ADK session events (what ADK's session service stores, and kagent's rows of
them), from a real ADK run offline with a scripted model.

The model is a custom `BaseLlm` subclass returning scripted `LlmResponse`s (as in ../adk).
Tools: `lookup_order` (a plain function tool), `delete_account` (a FunctionTool with
`require_confirmation=True`: ADK's human-in-the-loop round trip, `adk_request_confirmation`
answered by the user with a FunctionResponse), and `search_users` from an MCP server run over
stdio (`mcp_server.py`, the real `mcp` package) through ADK's McpToolset; its second call
fails inside the server, so MCP answers `isError: true`.

Writes:
- events.jsonl        one `Event.model_dump_json()` a line (snake_case, every null written:
                      what kagent stores in its rows' `data`)
- events.camel.json   the session's events as a JSON array of `model_dump(by_alias=True,
                      exclude_none=True)` (camelCase, as ADK's API server returns them)
- kagent_rows.jsonl   kagent-style rows: {"id", "session_id", "user_id", "data": "<event json>"}
- expected_events.json       ground truth
"""
from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import AsyncGenerator

HERE = Path(__file__).resolve().parent
OUT = Path(os.environ.get("CAPTURE_OUT", HERE))

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.adk.tools import FunctionTool  # noqa: E402
from google.adk.tools.mcp_tool.mcp_session_manager import StdioConnectionParams  # noqa: E402
from google.adk.tools.mcp_tool.mcp_toolset import McpToolset  # noqa: E402
from google.genai import types  # noqa: E402
from mcp import StdioServerParameters  # noqa: E402

SESSION_ID = "conv-adk-events-0001"
USER_ID = "user-1"
APP = "support_app"


def lookup_order(order_id: int) -> str:
    """Look an order up (a str result: ADK wraps it as {"result": ...})."""
    return f"order {order_id}: shipped"


def delete_account(login: str) -> dict:
    """Delete a user's account (needs the user's confirmation)."""
    return {"deleted": login}


def fc(name, args, cid):
    return types.Part(function_call=types.FunctionCall(name=name, args=args, id=cid))


def text(t):
    return types.Part(text=t)


# Each user message with the model responses of its invocation, in order.
SCRIPT = [
    # invocation 1: one plain tool, then the MCP tool, then an answer
    [fc("lookup_order", {"order_id": 42}, "call_order"),],
    [fc("search_users", {"query": "themsquared"}, "call_search_ok")],
    [text("Order 42 has shipped; themsquared has 12 repositories.")],
    # invocation 2: the MCP tool fails (isError), then a tool needing confirmation: the
    # invocation pauses on adk_request_confirmation
    [fc("search_users", {"query": "nobody"}, "call_search_bad")],
    [fc("delete_account", {"login": "themsquared"}, "call_delete")],
    # the user's confirmation resumes invocation 2: ADK runs delete_account, the model answers
    [text("The account themsquared is deleted.")],
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


mcp_tools = McpToolset(connection_params=StdioConnectionParams(
    server_params=StdioServerParameters(command=sys.executable, args=[str(HERE / "mcp_server.py")]),
    timeout=30,
))
agent = LlmAgent(
    name="support_assistant",
    model=ScriptedLlm(),
    instruction="Help with orders and accounts. Use tools.",
    tools=[lookup_order, FunctionTool(delete_account, require_confirmation=True), mcp_tools],
)


async def run(runner, message):
    confirmation = None
    async for ev in runner.run_async(user_id=USER_ID, session_id=SESSION_ID, new_message=message):
        for part in (ev.content.parts if ev.content and ev.content.parts else []):
            if part.function_call and part.function_call.name == "adk_request_confirmation":
                confirmation = part.function_call.id
    return confirmation


async def main():
    runner = InMemoryRunner(agent=agent, app_name=APP)
    await runner.session_service.create_session(app_name=APP, user_id=USER_ID, session_id=SESSION_ID)
    user = lambda t: types.Content(role="user", parts=[types.Part(text=t)])  # noqa: E731
    await run(runner, user("Where is order 42, and who is themsquared?"))
    pending = await run(runner, user("Look up nobody, then delete themsquared's account."))
    assert pending, "ADK asked for no confirmation"
    answer = types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
        id=pending, name="adk_request_confirmation", response={"confirmed": True}))])
    await run(runner, answer)
    assert _n == len(SCRIPT), (_n, len(SCRIPT))
    session = await runner.session_service.get_session(app_name=APP, user_id=USER_ID, session_id=SESSION_ID)
    await mcp_tools.close()
    return session


session = asyncio.run(main())
events = session.events
(OUT / "events.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in events))
(OUT / "events.camel.json").write_text(json.dumps(
    [e.model_dump(mode="json", by_alias=True, exclude_none=True) for e in events], indent=1) + "\n")
(OUT / "kagent_rows.jsonl").write_text("".join(json.dumps(
    {"id": e.id, "session_id": SESSION_ID, "user_id": USER_ID, "data": e.model_dump_json()}) + "\n"
    for e in events))

from importlib.metadata import version  # noqa: E402

expected = {
    "framework": "google-adk (session events)",
    "library_versions": {d: version(d) for d in ("google-adk", "google-genai", "mcp")},
    "conversation_id": SESSION_ID,
    "event_count": len(events),
    "turns": [
        {"calls": [
            {"name": "lookup_order", "arguments": {"order_id": 42}, "error": False, "step": 0, "call_id": "call_order"},
            {"name": "search_users", "arguments": {"query": "themsquared"}, "error": False, "step": 1, "call_id": "call_search_ok"},
        ]},
        {"calls": [
            {"name": "search_users", "arguments": {"query": "nobody"}, "error": True, "step": 0, "call_id": "call_search_bad"},
            {"name": "delete_account", "arguments": {"login": "themsquared"}, "error": False, "step": 1, "call_id": "call_delete"},
        ]},
    ],
    "notes": (
        "InMemoryRunner session_id = conversation; one run_async = one invocation. Invocation 2 pauses "
        "on adk_request_confirmation (plumbing, filtered) after delete_account answered {error: requires "
        "confirmation}; the user's FunctionResponse confirming it (author user, role user) resumes the "
        "same invocation id, ADK runs delete_account and its real result (same call id) follows: the "
        "last result of a call id wins. search_users(nobody) raises inside the MCP server: its result "
        "is {content:[text], isError: true}. lookup_order returns a str, which ADK wraps as {result}."
    ),
}
(OUT / "expected_events.json").write_text(json.dumps(expected, indent=2) + "\n")
for e in events:
    parts = e.content.parts if e.content and e.content.parts else []
    print(e.invocation_id[-8:], e.author, e.content.role if e.content else None,
          [("call " + p.function_call.name) if p.function_call else ("result " + p.function_response.name)
           if p.function_response else ("text " + (p.text or "")[:30]) for p in parts])
