"""Live: a real Pydantic AI agent (scripted FunctionModel, its native OTel instrumentation)
exports through the SDK's OTLP/HTTP exporter to a running `tooltrail serve`, span by span as
each ends (tool and LLM spans reach the server before their agent root). The stored
conversation over REST is the ground truth, and an expectation on it passes."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from pydantic_ai import Agent, InstrumentationSettings
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.server import Server, running_server

PARIS = {"city": "Paris"}
FX = {"amount": 100, "from_currency": "EUR", "to_currency": "USD"}


def call(name: str, args: dict[str, Any], call_id: str) -> ToolCallPart:
    return ToolCallPart(tool_name=name, args=json.dumps(args), tool_call_id=call_id)


TURNS: list[tuple[str, list[list[Any]]]] = [
    ("Weather in Paris and London, and the time in Paris?", [
        [call("get_weather", PARIS, "w_paris"), call("get_weather", {"city": "London"}, "w_lon")],
        [call("get_time", PARIS, "t_paris")],
        [TextPart("18C and 14C; noon.")],
    ]),
    ("Berlin weather, then 100 EUR in USD.", [
        [call("get_weather", {"city": "Berlin"}, "w_berlin")],
        [call("convert_currency", FX, "fx")],  # raises: the run ends here
    ]),
    ("Thanks!", [[TextPart("You're welcome!")]]),
]
EXPECTED = [
    [("get_weather", PARIS, False, 0, "w_paris"),
     ("get_weather", {"city": "London"}, False, 0, "w_lon"),
     ("get_time", PARIS, False, 1, "t_paris")],
    [("get_weather", {"city": "Berlin"}, False, 0, "w_berlin"),
     ("convert_currency", FX, True, 1, "fx")],
    [],
]


def run_agent(provider: TracerProvider, conversation: str) -> None:
    script = [parts for _, responses in TURNS for parts in responses]

    def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=script.pop(0))

    settings = InstrumentationSettings(tracer_provider=provider, include_content=True)
    agent = Agent(FunctionModel(scripted, model_name="scripted"), name="travel",
                  capabilities=[Instrumentation(settings=settings)])

    @agent.tool_plain
    def get_weather(city: str) -> dict[str, Any]:
        """Current weather for a city."""
        return {"city": city, "temp_c": 18}

    @agent.tool_plain
    def get_time(city: str) -> str:
        """Local time in a city."""
        return f"12:00 in {city}"

    @agent.tool_plain
    def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
        """Convert money between currencies."""
        raise RuntimeError(f"FX service unavailable for {from_currency}->{to_currency}")

    async def conversation_of_three_turns() -> None:
        history = None
        for prompt, _ in TURNS:
            try:
                result = await agent.run(prompt, message_history=history,
                                         conversation_id=conversation)
                history = result.all_messages()
            except RuntimeError:
                pass
    asyncio.run(conversation_of_three_turns())
    assert script == []


@pytest.fixture(scope="module")
def server(module_database_url: str) -> Iterator[Server]:
    with running_server(module_database_url) as s:
        yield s


def test_pydantic_ai_agent_exports_live_and_is_stored_and_scored(server: Server) -> None:
    key = f"live-pydantic-ai-{uuid.uuid4().hex[:8]}"
    provider = TracerProvider(resource=Resource.create({"service.name": "live-pydantic-ai"}))
    provider.add_span_processor(
        SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{server.base_url}/v1/traces"))
    )
    run_agent(provider, key)
    provider.shutdown()

    body = server.wait_for(
        f"/api/v1/conversations/{key}",
        lambda b: b["turn_count"] == 3 and sum(len(t["tool_calls"]) for t in b["turns"]) == 5,
    )
    got = [
        [(c["name"], c["arguments"], c["error"] is not None, c["step"], c["call_id"])
         for c in turn["tool_calls"]]
        for turn in body["turns"]
    ]
    assert got == EXPECTED
    assert all(c["executed"] and c["convention"] == "genai"
               for turn in body["turns"] for c in turn["tool_calls"])
    assert body["service"] == "live-pydantic-ai" and body["agents"] == ["travel"]

    expectation = {
        "id": f"travel-{key}", "selector": {"conversation": key}, "match": "strict",
        "turns": [
            {"calls": [{"name": "get_weather", "arguments": {"city": "London"}},
                       {"name": "get_weather", "arguments": PARIS},  # parallel: either order
                       {"name": "get_time", "arguments": PARIS}]},
            {"calls": [{"name": "get_weather"}, {"name": "convert_currency", "error": True}]},
            {"calls": []},
        ],
    }
    with server.client() as client:
        created = client.post("/api/v1/expectations", json=expectation)
        assert created.status_code == 201, created.text
    results = server.wait_for(f"/api/v1/conversations/{key}/results", lambda b: b["data"])
    (result,) = results["data"]
    assert result["passed"] is True, result
