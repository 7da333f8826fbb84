"""Capture: LangChain 1.x `create_agent` + OpenInference LangChain instrumentation, offline.

`langchain.agents.create_agent` is what LangChain 1.x and LangGraph 1.x document for an agent
(`langgraph.prebuilt.create_react_agent` is deprecated; `langgraph_openinference` keeps it).
The chat model is LangChain's `GenericFakeChatModel` (scripted AIMessages with tool_calls),
subclassed only so that `bind_tools` is accepted. Tracing: `LangChainInstrumentor().instrument()`
as OpenInference's docs show. Conversation: LangGraph's `thread_id` with a checkpointer, as
LangChain's docs show for memory and for human-in-the-loop; OpenInference maps the run
metadata's `thread_id` to `session.id`.

Tool errors: `create_agent` re-raises a tool's exception (its ToolNode handles only invalid
arguments); LangChain's docs show a `@wrap_tool_call` middleware that hands the error back to
the model as a ToolMessage, which this script uses.

With CAPTURE_APPROVAL=1 (`langchain_agent_approval`): `HumanInTheLoopMiddleware(interrupt_on=
{"delete_account": ...})`, the documented approval loop: `invoke` stops at the interrupt
(`__interrupt__`), the user's decision resumes it with `Command(resume={"decisions": [...]})`
on the same thread. Five invocations: ask (alice) → approve → ask (bob) → reject → ask (carol),
never answered.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import _common  # noqa: E402

APPROVAL = os.environ.get("CAPTURE_APPROVAL") == "1"
OUT = Path(os.environ.get("CAPTURE_OUT", HERE))
provider, exporter = _common.setup_tracing(
    os.environ.get("CAPTURE_SERVICE", "tooltrail-capture-langchain-agent"))

from openinference.instrumentation.langchain import LangChainInstrumentor  # noqa: E402

LangChainInstrumentor().instrument(tracer_provider=provider)

from langchain.agents import create_agent  # noqa: E402
from langchain.agents.middleware import HumanInTheLoopMiddleware, wrap_tool_call  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, ToolMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.types import Command  # noqa: E402


class ScriptedToolChatModel(GenericFakeChatModel):
    """GenericFakeChatModel that accepts bind_tools (returns itself; the script decides the calls)."""

    def bind_tools(self, tools, **kwargs):
        return self


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return json.dumps({"city": city, "temp_c": {"Paris": 18, "London": 14, "Berlin": 11}.get(city, 20)})


@tool
def get_time(city: str) -> str:
    """Local time in a city."""
    return f"12:00 in {city}"


@tool
def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
    """Convert money between currencies."""
    raise RuntimeError(f"FX service unavailable for {from_currency}->{to_currency}")


@tool
def delete_account(login: str) -> str:
    """Delete a user's account (needs the user's approval)."""
    return f"deleted {login}"


@wrap_tool_call
def tool_errors_to_model(request, handler):
    """LangChain's documented tool-error middleware: the error goes back to the model."""
    try:
        return handler(request)
    except Exception as e:  # noqa: BLE001
        return ToolMessage(content=f"Tool error: {e}", tool_call_id=request.tool_call["id"],
                           status="error")


def ai(response):
    tool_calls = [{"name": n, "args": a, "id": i, "type": "tool_call"}
                  for kind, *item in response if kind == "tool" for n, a, i in [item]]
    content = " ".join(t for kind, *item in response if kind == "text" for t in item)
    return AIMessage(content=content, tool_calls=tool_calls)


def delete(login):
    return [_common.call("delete_account", {"login": login}, f"call_del_{login}")]


APPROVAL_SCRIPT = [
    delete("alice"), [_common.text("alice's account is deleted.")],
    delete("bob"), [_common.text("I did not delete bob's account.")],
    delete("carol"),
]

if APPROVAL:
    CONV_ID = "conv-langchain-approval-0001"
    script = APPROVAL_SCRIPT
    tools = [delete_account]
    middleware = [HumanInTheLoopMiddleware(
        interrupt_on={"delete_account": {"allowed_decisions": ["approve", "reject"]}})]
else:
    CONV_ID = "conv-langchain-agent-0001"
    script = _common.SCRIPT
    tools = [get_weather, get_time, convert_currency]
    middleware = [tool_errors_to_model]

model = ScriptedToolChatModel(messages=iter([ai(r) for r in script]))
agent = create_agent(
    model,
    tools=tools,
    system_prompt="Help with travel questions. Use tools.",
    middleware=middleware,
    checkpointer=InMemorySaver(),
    name="travel_assistant",
)
config = {"configurable": {"thread_id": CONV_ID}}


def invoke(payload):
    out = agent.invoke(payload, config=config)
    print("turn output:", out.get("__interrupt__") or out["messages"][-1].content)
    return out.get("__interrupt__")


if APPROVAL:
    assert invoke({"messages": [("user", "Delete alice's account.")]})
    assert not invoke(Command(resume={"decisions": [{"type": "approve"}]}))
    assert invoke({"messages": [("user", "Delete bob's account.")]})
    assert not invoke(Command(resume={"decisions": [
        {"type": "reject", "message": "Do not delete bob's account."}]}))
    assert invoke({"messages": [("user", "Delete carol's account.")]})
else:
    for prompt, _ in _common.TURNS:
        assert not invoke({"messages": [("user", prompt)]})
provider.force_flush()


def req(login, status):
    # requested_in_turn: false = executed (or refused) in the invocation after the model's request
    return {"name": "delete_account", "arguments": {"login": login}, "error": status == "rejected",
            "step": 0, "call_id": f"call_del_{login}", "status": status,
            "requested_in_turn": status == "pending"}


expected = {
    "framework": "langchain",
    "library_versions": _common.versions(
        "langchain", "langgraph", "langchain-core", "openinference-instrumentation-langchain",
        "openinference-instrumentation", "opentelemetry-sdk",
    ),
    "conversation_id": CONV_ID,
    "turns": _common.expected_turns(),
    "notes": (
        "langchain.agents.create_agent with GenericFakeChatModel scripted (bind_tools returns self). "
        "Conversation = configurable thread_id (InMemorySaver), which OpenInference turns into "
        "session.id. A @wrap_tool_call middleware returns convert_currency's error to the model "
        "(ToolMessage status=error), so the turn continues. Turn 1 step 0 = two tool_calls in one "
        "AIMessage (ToolNode runs them in parallel threads)."
    ),
}
if APPROVAL:
    expected["turns"] = [
        {"calls": [req("alice", "pending")]},
        {"calls": [req("alice", "ok")]},
        {"calls": [req("bob", "pending")]},
        {"calls": [req("bob", "rejected")]},
        {"calls": [req("carol", "pending")]},
    ]
    expected["notes"] = (
        "HumanInTheLoopMiddleware(interrupt_on={'delete_account': approve|reject}) + InMemorySaver, "
        "thread_id = conversation. Each invoke is one trace: the asking invoke ends at the interrupt "
        "(the model's tool_call is in the LLM span, the tool does not run); Command(resume=approve) "
        "runs the tool under the model's call id; Command(resume=reject) answers the call with a "
        "ToolMessage(status='error') and runs no tool. The last interrupt is never answered."
    )
_common.write_otlp(OUT, exporter.get_finished_spans())
_common.write_expected(OUT, expected)
print("spans:", len(exporter.get_finished_spans()))
