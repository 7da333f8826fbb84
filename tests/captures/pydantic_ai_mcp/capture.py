"""Capture: Pydantic AI agent whose tools live on an MCP server (FastMCP, in-process transport),
offline with FunctionModel. Shows Pydantic AI's `execute_tool` spans together with whatever MCP
client/server spans the MCP stack emits for the same call (the nested-duplicate case).
"""
from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import _common  # noqa: E402

provider, exporter = _common.setup_tracing("tooltrail-capture-pydantic-ai-mcp")

from fastmcp import FastMCP  # noqa: E402
from pydantic_ai import Agent, InstrumentationSettings  # noqa: E402
from pydantic_ai.capabilities import Instrumentation  # noqa: E402
from pydantic_ai.mcp import MCPToolset  # noqa: E402
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart  # noqa: E402
from pydantic_ai.models.function import FunctionModel  # noqa: E402

CONV_ID = "conv-pydantic-ai-mcp-0001"
server = FastMCP("travel-tools")


@server.tool
def get_weather(city: str) -> dict:
    """Current weather for a city."""
    return {"city": city, "temp_c": {"Paris": 18, "London": 14, "Berlin": 11}.get(city, 20)}


@server.tool
def get_time(city: str) -> str:
    """Local time in a city."""
    return f"12:00 in {city}"


@server.tool
def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
    """Convert money between currencies."""
    raise RuntimeError(f"FX service unavailable for {from_currency}->{to_currency}")


def call(name, args, cid):
    return ToolCallPart(tool_name=name, args=json.dumps(args), tool_call_id=cid)


TURNS = [
    ("What's the weather in Paris and London, and what time is it in Paris?", [
        [call("get_weather", {"city": "Paris"}, "call_w_paris"), call("get_weather", {"city": "London"}, "call_w_london")],
        [call("get_time", {"city": "Paris"}, "call_t_paris")],
        [TextPart("Paris 18C, London 14C; it is 12:00 in Paris.")],
    ]),
    ("Convert 100 EUR to USD, and tell me the weather in Berlin.", [
        [call("convert_currency", {"amount": 100, "from_currency": "EUR", "to_currency": "USD"}, "call_fx")],
        [call("get_weather", {"city": "Berlin"}, "call_w_berlin")],
        [TextPart("The FX service failed; Berlin is 11C.")],
    ]),
    ("Thanks, that's all!", [[TextPart("You're welcome!")]]),
]
SCRIPT = [r for _, rs in TURNS for r in rs]
_n = 0


def scripted(messages, info):
    global _n
    parts = SCRIPT[_n]
    _n += 1
    return ModelResponse(parts=parts)


# tool_error_behavior='failed': the server-side error is shown to the model and the run goes on
toolset = MCPToolset(server, tool_error_behavior="failed")
agent = Agent(
    FunctionModel(scripted, model_name="scripted-fn"),
    name="travel_assistant",
    instructions="Help with travel questions. Use tools.",
    toolsets=[toolset],
    capabilities=[Instrumentation(settings=InstrumentationSettings(tracer_provider=provider, include_content=True))],
)


async def main():
    history = None
    async with agent:
        for prompt, _ in TURNS:
            result = await agent.run(prompt, message_history=history, conversation_id=CONV_ID)
            history = result.all_messages()
            print("turn output:", result.output)
    assert _n == len(SCRIPT), (_n, len(SCRIPT))


asyncio.run(main())
provider.force_flush()

expected = {
    "framework": "pydantic-ai+mcp",
    "library_versions": _common.versions("pydantic-ai-slim", "fastmcp-slim", "mcp", "opentelemetry-sdk"),
    "conversation_id": CONV_ID,
    "turns": _common.expected_turns(),
    "notes": (
        "Tools served by an in-process FastMCP server through pydantic_ai.mcp.MCPToolset(tool_error_behavior='failed'). "
        "Each call appears as up to THREE spans with gen_ai.operation.name=execute_tool in one ancestor chain: "
        "Pydantic AI 'execute_tool X' > FastMCP client 'tools/call X' > mcp SDK 'MCP send tools/call' > FastMCP "
        "server 'tools/call X'. Only the Pydantic AI span has call id/arguments/result. The MCP connect "
        "handshake ('MCP send server/discover') is a separate trace outside any agent run."
    ),
}
_common.write_otlp(HERE, exporter.get_finished_spans())
_common.write_expected(HERE, expected)
print("spans:", len(exporter.get_finished_spans()))
