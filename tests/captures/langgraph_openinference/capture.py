"""Capture: LangGraph `create_react_agent` + OpenInference LangChain instrumentation, offline.

The chat model is LangChain's `GenericFakeChatModel` (scripted AIMessages with
tool_calls), subclassed only so that `bind_tools` is accepted. Conversation =
LangGraph's own `thread_id` (InMemorySaver checkpointer), the way LangGraph
users carry a conversation; OpenInference maps metadata thread_id/session_id
to `session.id`.
"""
from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import _common  # noqa: E402

provider, exporter = _common.setup_tracing("tooltrail-capture-langgraph")

from openinference.instrumentation.langchain import LangChainInstrumentor  # noqa: E402

LangChainInstrumentor().instrument(tracer_provider=provider)

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.prebuilt import ToolNode  # noqa: E402

warnings.filterwarnings("ignore")
from langgraph.prebuilt import create_react_agent  # noqa: E402

CONV_ID = "conv-langgraph-0001"


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


def calls(*cs):
    return AIMessage(content="", tool_calls=[{"name": n, "args": a, "id": i, "type": "tool_call"} for n, a, i in cs])


TURNS = [
    (
        "What's the weather in Paris and London, and what time is it in Paris?",
        [
            calls(("get_weather", {"city": "Paris"}, "call_w_paris"), ("get_weather", {"city": "London"}, "call_w_london")),
            calls(("get_time", {"city": "Paris"}, "call_t_paris")),
            AIMessage(content="Paris 18C, London 14C; it is 12:00 in Paris."),
        ],
    ),
    (
        "Convert 100 EUR to USD, and tell me the weather in Berlin.",
        [
            calls(("convert_currency", {"amount": 100, "from_currency": "EUR", "to_currency": "USD"}, "call_fx")),
            calls(("get_weather", {"city": "Berlin"}, "call_w_berlin")),
            AIMessage(content="The FX service failed; Berlin is 11C."),
        ],
    ),
    ("Thanks, that's all!", [AIMessage(content="You're welcome!")]),
]
SCRIPT = [m for _, ms in TURNS for m in ms]

model = ScriptedToolChatModel(messages=iter(SCRIPT))
agent = create_react_agent(
    model,
    # handle_tool_errors=True: the raised exception is reported to the model as a ToolMessage(status="error")
    tools=ToolNode([get_weather, get_time, convert_currency], handle_tool_errors=True),
    prompt="Help with travel questions. Use tools.",
    checkpointer=InMemorySaver(),
    name="travel_assistant",
)

for prompt, _ in TURNS:
    out = agent.invoke({"messages": [("user", prompt)]}, config={"configurable": {"thread_id": CONV_ID}})
    print("turn output:", out["messages"][-1].content)
provider.force_flush()

expected = {
    "framework": "langgraph",
    "library_versions": _common.versions(
        "langgraph", "langgraph-prebuilt", "langchain-core", "openinference-instrumentation-langchain",
        "openinference-instrumentation", "opentelemetry-sdk",
    ),
    "conversation_id": CONV_ID,
    "turns": _common.expected_turns(),
    "notes": (
        "GenericFakeChatModel scripted (bind_tools returns self). Conversation = LangGraph configurable "
        "thread_id (InMemorySaver), which LangGraph copies into run metadata and OpenInference turns into "
        "session.id. ToolNode(handle_tool_errors=True): convert_currency raises, the error goes back to the "
        "model and the turn continues. Turn 1 step 0 = two tool_calls in one AIMessage (ToolNode runs them "
        "in parallel threads)."
    ),
}
_common.write_otlp(HERE, exporter.get_finished_spans())
_common.write_expected(HERE, expected)
print("spans:", len(exporter.get_finished_spans()))
