"""Capture: Strands Agents native OpenTelemetry, offline, with a custom `Model` provider.

Default conventions (content in span events). ../strands_latest reruns this
with OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental.

Conversation: Strands has no conversation-id parameter of its own that reaches
the spans; its docs tell users to pass `trace_attributes={"session.id": ...}`
(the Langfuse convention), which is what is done here. A FileSessionManager
with the same session id carries the history (it does not show in spans).
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, AsyncIterable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import _common  # noqa: E402

OUT = Path(os.environ.get("CAPTURE_OUT", HERE))
SERVICE = os.environ.get("CAPTURE_SERVICE", "tooltrail-capture-strands")
provider, exporter = _common.setup_tracing(SERVICE)

from strands import Agent, tool  # noqa: E402
from strands.models.model import Model  # noqa: E402
from strands.session.file_session_manager import FileSessionManager  # noqa: E402

CONV_ID = "conv-strands-0001"


@tool
def get_weather(city: str) -> dict:
    """Current weather for a city.

    Args:
        city: the city
    """
    return {"city": city, "temp_c": {"Paris": 18, "London": 14, "Berlin": 11}.get(city, 20)}


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
        amount: amount
        from_currency: ISO code
        to_currency: ISO code
    """
    raise RuntimeError(f"FX service unavailable for {from_currency}->{to_currency}")


TURNS, SCRIPT = _common.TURNS, _common.SCRIPT


class ScriptedModel(Model):
    """A Strands model provider that streams scripted Bedrock-style events."""

    def __init__(self):
        self.config = {"model_id": "scripted-model"}
        self.n = 0

    def update_config(self, **model_config: Any) -> None:
        self.config.update(model_config)

    def get_config(self) -> Any:
        return self.config

    def structured_output(self, output_model, prompt, system_prompt=None, **kwargs):
        raise NotImplementedError

    async def stream(self, messages, tool_specs=None, system_prompt=None, **kwargs) -> AsyncIterable[dict]:
        blocks = SCRIPT[self.n]
        self.n += 1
        yield {"messageStart": {"role": "assistant"}}
        has_tool = False
        for i, b in enumerate(blocks):
            if b[0] == "tool":
                has_tool = True
                _, name, args, cid = b
                yield {"contentBlockStart": {"contentBlockIndex": i, "start": {"toolUse": {"name": name, "toolUseId": cid}}}}
                yield {"contentBlockDelta": {"contentBlockIndex": i, "delta": {"toolUse": {"input": json.dumps(args)}}}}
            else:
                yield {"contentBlockStart": {"contentBlockIndex": i, "start": {}}}
                yield {"contentBlockDelta": {"contentBlockIndex": i, "delta": {"text": b[1]}}}
            yield {"contentBlockStop": {"contentBlockIndex": i}}
        yield {"messageStop": {"stopReason": "tool_use" if has_tool else "end_turn"}}
        yield {"metadata": {"usage": {"inputTokens": 50, "outputTokens": 10, "totalTokens": 60}, "metrics": {"latencyMs": 1}}}


model = ScriptedModel()
with tempfile.TemporaryDirectory() as storage:
    agent = Agent(
        model=model,
        name="travel_assistant",
        system_prompt="Help with travel questions. Use tools.",
        tools=[get_weather, get_time, convert_currency],
        trace_attributes={"session.id": CONV_ID, "user.id": "user-1"},
        session_manager=FileSessionManager(session_id=CONV_ID, storage_dir=storage),
        callback_handler=None,
    )
    for prompt, _ in TURNS:
        result = agent(prompt)
        print("turn output:", str(result).strip())
assert model.n == len(SCRIPT), (model.n, len(SCRIPT))
provider.force_flush()

expected = {
    "framework": "strands-agents",
    "library_versions": _common.versions("strands-agents", "opentelemetry-sdk"),
    "otel_semconv_stability_opt_in": os.environ.get("OTEL_SEMCONV_STABILITY_OPT_IN"),
    "conversation_id": CONV_ID,
    "turns": _common.expected_turns(),
    "notes": (
        "Custom strands Model provider streaming scripted events. Conversation id via "
        "Agent(trace_attributes={'session.id': ...}) (Strands' documented way). Turn = one agent(...) call. "
        "Turn 1 step 0 = two toolUse blocks in one model message (ConcurrentToolExecutor runs them in parallel). "
        "convert_currency raises; Strands turns it into an error toolResult and the turn continues."
    ),
}
_common.write_otlp(OUT, exporter.get_finished_spans())
_common.write_expected(OUT, expected)
print("spans:", len(exporter.get_finished_spans()))
