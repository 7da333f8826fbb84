"""Capture: smolagents `ToolCallingAgent` + OpenInference smolagents instrumentation, offline.

The model is a `smolagents.models.Model` subclass whose `generate` returns the scripted
`ChatMessage`s with `tool_calls` (as the API models do); a text answer is smolagents' own
`final_answer` tool call. Instrumentation as the OpenInference docs set it up:
`SmolagentsInstrumentor().instrument(tracer_provider=...)`. Conversation: `agent.run(...,
reset=False)` keeps the agent's memory across turns, and `using_session(CONV_ID)` around each
run gives OpenInference's `session.id`.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import _common  # noqa: E402

provider, exporter = _common.setup_tracing("tooltrail-capture-smolagents")

from openinference.instrumentation import using_session  # noqa: E402
from openinference.instrumentation.smolagents import SmolagentsInstrumentor  # noqa: E402

SmolagentsInstrumentor().instrument(tracer_provider=provider)

from smolagents import ToolCallingAgent, tool  # noqa: E402
from smolagents.models import (  # noqa: E402
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
    Model,
)

CONV_ID = "conv-smolagents-0001"


@tool
def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: the city
    """
    temps = {"Paris": 18, "London": 14, "Berlin": 11}
    return json.dumps({"city": city, "temp_c": temps.get(city, 20)})


@tool
def get_time(city: str) -> str:
    """Local time in a city.

    Args:
        city: the city
    """
    return f"12:00 in {city}"


@tool
def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
    """Convert money between currencies.

    Args:
        amount: the amount
        from_currency: source currency code
        to_currency: target currency code
    """
    raise RuntimeError(f"FX service unavailable for {from_currency}->{to_currency}")


def as_message(response, n: int) -> ChatMessage:
    calls = []
    for j, (kind, *item) in enumerate(response):
        if kind == "text":  # smolagents answers through its final_answer tool
            name, args, cid = "final_answer", {"answer": item[0]}, f"call_final_{n}_{j}"
        else:
            name, args, cid = item
        function = ChatMessageToolCallFunction(name=name, arguments=args)
        calls.append(ChatMessageToolCall(id=cid, type="function", function=function))
    return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=calls)


class ScriptedModel(Model):
    """Returns the next scripted response, its tool calls as the API models give them."""

    def __init__(self) -> None:
        super().__init__(model_id="scripted-model")
        self._script = iter(enumerate(_common.SCRIPT))

    def generate(self, messages, stop_sequences=None, response_format=None,
                 tools_to_call_from=None, **kwargs) -> ChatMessage:
        n, response = next(self._script)
        return as_message(response, n)


agent = ToolCallingAgent(tools=[get_weather, get_time, convert_currency], model=ScriptedModel(),
                         name="travel_assistant", max_steps=6)

for i, (prompt, _) in enumerate(_common.TURNS):
    with using_session(CONV_ID):
        out = agent.run(prompt, reset=i == 0)
    print("turn output:", out)
provider.force_flush()

expected = {
    "framework": "smolagents",
    "library_versions": _common.versions(
        "smolagents", "openinference-instrumentation-smolagents", "openinference-instrumentation",
        "opentelemetry-sdk",
    ),
    "conversation_id": CONV_ID,
    "turns": _common.expected_turns(),
    "call_ids_in_spans": False,
    "internal_calls": "every turn ends with smolagents' final_answer tool call (its way to "
                      "answer; a TOOL span `FinalAnswerTool`): internal, not a chosen tool, so "
                      "not in turns[].calls",
    "notes": (
        "Model subclass whose generate returns scripted ChatMessages with tool_calls; a text "
        "answer is a final_answer tool call. Conversation = openinference using_session(CONV_ID) "
        "around "
        "each run, agent.run(reset=False) after the first turn. A raising tool is reported to "
        "the model as an error observation and the run continues. Turn 1 step 0 = two tool "
        "calls in one message (smolagents runs them in parallel threads). No LLM span: the "
        "instrumentor wraps generate only on the Model classes smolagents.models exports, not "
        "on a user's own Model subclass, so the model's requests and call ids reach no span."
    ),
}
_common.write_otlp(HERE, exporter.get_finished_spans())
_common.write_expected(HERE, expected)
print("spans:", len(exporter.get_finished_spans()))
