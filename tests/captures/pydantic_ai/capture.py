"""Capture: Pydantic AI native OpenTelemetry instrumentation (Instrumentation capability), offline.

The model is Pydantic AI's `FunctionModel`, scripted below. The conversation id
is Pydantic AI's own `conversation_id=` run argument (carried by
`message_history` too). Set PYDANTIC_AI_INSTR_VERSION to capture another
instrumentation format version (default: the library default).
"""
from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import _common  # noqa: E402

SERVICE = os.environ.get("CAPTURE_SERVICE", "tooltrail-capture-pydantic-ai")
OUT = Path(os.environ.get("CAPTURE_OUT", HERE))
provider, exporter = _common.setup_tracing(SERVICE)

from pydantic_ai import Agent, InstrumentationSettings  # noqa: E402
from pydantic_ai.capabilities import Instrumentation  # noqa: E402
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart  # noqa: E402
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

CONV_ID = "conv-pydantic-ai-0001"
_ver = os.environ.get("PYDANTIC_AI_INSTR_VERSION")
settings = InstrumentationSettings(tracer_provider=provider, include_content=True,
                                   **({"version": int(_ver)} if _ver else {}))


def call(name, args, cid):
    return ToolCallPart(tool_name=name, args=json.dumps(args), tool_call_id=cid)


TURNS = [
    (
        "What's the weather in Paris and London, and what time is it in Paris?",
        [
            [call("get_weather", {"city": "Paris"}, "call_w_paris"), call("get_weather", {"city": "London"}, "call_w_london")],
            [call("get_time", {"city": "Paris"}, "call_t_paris")],
            [TextPart("Paris 18C, London 14C; it is 12:00 in Paris.")],
        ],
    ),
    (
        "Tell me the weather in Berlin, then convert 100 EUR to USD.",
        [
            [call("get_weather", {"city": "Berlin"}, "call_w_berlin")],
            [call("convert_currency", {"amount": 100, "from_currency": "EUR", "to_currency": "USD"}, "call_fx")],
            # never reached: the tool's exception aborts the run
        ],
    ),
    ("Thanks, that's all!", [[TextPart("You're welcome!")]]),
]
SCRIPT = [r for _, rs in TURNS for r in rs]
_n = 0


def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    global _n
    parts = SCRIPT[_n]
    _n += 1
    return ModelResponse(parts=parts)


agent = Agent(
    FunctionModel(scripted, model_name="scripted-fn"),
    name="travel_assistant",
    instructions="Help with travel questions. Use tools.",
    # this release has no Instrumentation capability: instrumentation is a capability
    capabilities=[Instrumentation(settings=settings)],
)


@agent.tool_plain
def get_weather(city: str) -> dict:
    """Current weather for a city."""
    return {"city": city, "temp_c": {"Paris": 18, "London": 14, "Berlin": 11}.get(city, 20)}


@agent.tool_plain
def get_time(city: str) -> str:
    """Local time in a city."""
    return f"12:00 in {city}"


@agent.tool_plain
def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
    """Convert money between currencies."""
    raise RuntimeError(f"FX service unavailable for {from_currency}->{to_currency}")


async def main():
    history = None
    for i, (prompt, _) in enumerate(TURNS):
        try:
            result = await agent.run(prompt, message_history=history, conversation_id=CONV_ID)
            history = result.all_messages()
            print("turn output:", result.output)
        except RuntimeError as e:
            print("turn raised:", e)
    assert _n == len(SCRIPT), (_n, len(SCRIPT))


asyncio.run(main())
provider.force_flush()

expected = {
    "framework": "pydantic-ai",
    "library_versions": _common.versions("pydantic-ai-slim", "opentelemetry-sdk"),
    "instrumentation_version": settings.version,
    "conversation_id": CONV_ID,
    "turns": [
        {"calls": [
            {"name": "get_weather", "arguments": {"city": "Paris"}, "error": False, "step": 0, "call_id": "call_w_paris"},
            {"name": "get_weather", "arguments": {"city": "London"}, "error": False, "step": 0, "call_id": "call_w_london"},
            {"name": "get_time", "arguments": {"city": "Paris"}, "error": False, "step": 1, "call_id": "call_t_paris"},
        ]},
        {"calls": [
            {"name": "get_weather", "arguments": {"city": "Berlin"}, "error": False, "step": 0, "call_id": "call_w_berlin"},
            {"name": "convert_currency", "arguments": {"amount": 100, "from_currency": "EUR", "to_currency": "USD"},
             "error": True, "step": 1, "call_id": "call_fx"},
        ]},
        {"calls": []},
    ],
    "notes": (
        "FunctionModel scripted. Turn 1 step 0 = two parallel tool calls in one ModelResponse (Pydantic AI runs "
        "them concurrently). Turn 2: convert_currency raises RuntimeError, which is not caught by Pydantic AI: "
        "the agent run itself fails (agent root span status ERROR); the turn ends there. "
        "Turn 3 continues with turn 1's message_history and the same conversation_id."
    ),
}
_common.write_otlp(OUT, exporter.get_finished_spans())
_common.write_expected(OUT, expected)
print("spans:", len(exporter.get_finished_spans()))
