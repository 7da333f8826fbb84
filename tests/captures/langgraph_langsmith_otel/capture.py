"""Capture: LangGraph `create_react_agent` traced by LangSmith's OpenTelemetry export, offline.

LangSmith's OTel-only mode as its docs set it (`LANGSMITH_OTEL_ENABLED`, `LANGSMITH_OTEL_ONLY`,
`LANGSMITH_TRACING`): its client turns each LangChain run into an OTel span on the global
TracerProvider when one is set (langsmith `client.py`, `get_tracer_provider()` unless it is the
no-op proxy), so the capture's provider gets the spans and nothing is sent to LangSmith. The
endpoint points at an unused loopback port so that nothing could leave the machine anyway.
Same scripted model and tools as `langgraph_openinference`; conversation = LangGraph's
`thread_id` (InMemorySaver), which LangSmith exports as `langsmith.metadata.thread_id`.
"""
from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path

os.environ.update({
    "LANGSMITH_TRACING": "true",
    "LANGSMITH_OTEL_ENABLED": "true",
    "LANGSMITH_OTEL_ONLY": "true",
    # no API key: OTel-only mode needs none; an unused port in case anything tried to post
    "LANGSMITH_ENDPOINT": "http://127.0.0.1:9",
    "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
})

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import _common  # noqa: E402

provider, exporter = _common.setup_tracing("tooltrail-capture-langgraph-langsmith")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langchain_core.tracers.langchain import wait_for_all_tracers  # noqa: E402
from langgraph.checkpoint.memory import InMemorySaver  # noqa: E402
from langgraph.prebuilt import ToolNode  # noqa: E402

warnings.filterwarnings("ignore")
from langgraph.prebuilt import create_react_agent  # noqa: E402

CONV_ID = "conv-langgraph-ls-0001"


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


def message(response):
    calls = [{"name": n, "args": a, "id": i, "type": "tool_call"} for kind, *item in response
             if kind == "tool" for n, a, i in [item]]
    texts = [t for kind, *item in response if kind == "text" for (t,) in [item]]
    return AIMessage(content="".join(texts), tool_calls=calls)


model = ScriptedToolChatModel(messages=iter([message(r) for r in _common.SCRIPT]))
agent = create_react_agent(
    model,
    # handle_tool_errors=True: the raised exception is reported to the model as a ToolMessage(status="error")
    tools=ToolNode([get_weather, get_time, convert_currency], handle_tool_errors=True),
    prompt="Help with travel questions. Use tools.",
    checkpointer=InMemorySaver(),
    name="travel_assistant",
)

for prompt, _ in _common.TURNS:
    out = agent.invoke({"messages": [("user", prompt)]},
                       config={"configurable": {"thread_id": CONV_ID},
                               "metadata": {"user_id": "user-0001"}})
    print("turn output:", out["messages"][-1].content)
wait_for_all_tracers()
provider.force_flush()

spans = exporter.get_finished_spans()
tool_spans = sorted(s.name for s in spans if s.attributes.get("langsmith.span.kind") == "tool")
expected = {
    "framework": "langgraph",
    "library_versions": _common.versions(
        "langgraph", "langgraph-prebuilt", "langchain-core", "langsmith", "opentelemetry-sdk",
    ),
    "conversation_id": CONV_ID,
    "turns": _common.expected_turns(),
    "notes": (
        "LangSmith OTel-only mode (LANGSMITH_OTEL_ENABLED + LANGSMITH_OTEL_ONLY + LANGSMITH_TRACING, "
        "no API key), spans on the global TracerProvider. GenericFakeChatModel scripted (bind_tools "
        "returns self). Conversation = LangGraph configurable thread_id (InMemorySaver), exported as "
        "langsmith.metadata.thread_id. ToolNode(handle_tool_errors=True): convert_currency raises, the "
        "error goes back to the model and the turn continues. Tool spans exported: "
        + ", ".join(tool_spans) + "."
    ),
}
_common.write_otlp(HERE, spans)
_common.write_expected(HERE, expected)
print("spans:", len(spans), "tool spans:", tool_spans)
