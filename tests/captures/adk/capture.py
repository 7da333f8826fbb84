"""Capture: Google ADK native OpenTelemetry (module tracer `gcp.vertex.agent`), offline.

The model is a custom `BaseLlm` subclass returning scripted `LlmResponse`s.
ADK takes its tracer from the global provider, so ours is set before ADK is
imported. Conversation = the ADK session id (InMemoryRunner session created
with session_id=CONV_ID); turn = one `runner.run_async` (one invocation id).

Schema: ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN (default here: the library
default, v2 = OTel GenAI semconv aligned; ../adk_legacy pins v1). Content on
semconv spans needs OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY
(set below, as a user who wants tool arguments would). CAPTURE_LOGS=1 (../adk_log_events)
also sets a global LoggerProvider and writes the log records ADK emits (logs.otlp.pb/json).
"""
from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import AsyncGenerator

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import _common  # noqa: E402

OUT = Path(os.environ.get("CAPTURE_OUT", HERE))
SERVICE = os.environ.get("CAPTURE_SERVICE", "tooltrail-capture-adk")
os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
provider, exporter = _common.setup_tracing(SERVICE)
LOGS = os.environ.get("CAPTURE_LOGS") == "1"
if LOGS:
    log_provider, log_exporter = _common.setup_logs()

from google.adk.agents import LlmAgent  # noqa: E402
from google.adk.models.base_llm import BaseLlm  # noqa: E402
from google.adk.models.llm_request import LlmRequest  # noqa: E402
from google.adk.models.llm_response import LlmResponse  # noqa: E402
from google.adk.runners import InMemoryRunner  # noqa: E402
from google.genai import types  # noqa: E402

CONV_ID = "conv-adk-0001"
USER_ID = "user-1"


def get_weather(city: str) -> dict:
    """Current weather for a city."""
    return {"city": city, "temp_c": {"Paris": 18, "London": 14, "Berlin": 11}.get(city, 20)}


def get_time(city: str) -> str:
    """Local time in a city."""
    return f"12:00 in {city}"


def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
    """Convert money between currencies."""
    raise RuntimeError(f"FX service unavailable for {from_currency}->{to_currency}")


# CAPTURE_MODEL_IDS=0: the model gives no call ids, as Gemini does; ADK then gives each call an
# `adk-<uuid>` id of its own (../adk_noids).
MODEL_IDS = os.environ.get("CAPTURE_MODEL_IDS", "1") != "0"


def fc(name, args, cid):
    return types.Part(function_call=types.FunctionCall(name=name, args=args, id=cid if MODEL_IDS else None))


def text(t):
    return types.Part(text=t)


TURNS = [
    (
        "What's the weather in Paris and London, and what time is it in Paris?",
        [
            [fc("get_weather", {"city": "Paris"}, "call_w_paris"), fc("get_weather", {"city": "London"}, "call_w_london")],
            [fc("get_time", {"city": "Paris"}, "call_t_paris")],
            [text("Paris 18C, London 14C; it is 12:00 in Paris.")],
        ],
    ),
    (
        "Tell me the weather in Berlin, then convert 100 EUR to USD.",
        [
            [fc("get_weather", {"city": "Berlin"}, "call_w_berlin")],
            [fc("convert_currency", {"amount": 100, "from_currency": "EUR", "to_currency": "USD"}, "call_fx")],
            # ADK does not catch tool exceptions: the invocation fails here
        ],
    ),
    ("Thanks, that's all!", [[text("You're welcome!")]]),
]
SCRIPT = [r for _, rs in TURNS for r in rs]
_n = 0
ADK_IDS: list[str] = []  # the ids ADK's events gave each function call, in request order


class ScriptedLlm(BaseLlm):
    model: str = "scripted-llm"

    async def generate_content_async(self, llm_request: LlmRequest, stream: bool = False) -> AsyncGenerator[LlmResponse, None]:
        global _n
        parts = SCRIPT[_n]
        _n += 1
        yield LlmResponse(
            content=types.Content(role="model", parts=parts),
            usage_metadata=types.GenerateContentResponseUsageMetadata(prompt_token_count=50, candidates_token_count=10, total_token_count=60),
            finish_reason=types.FinishReason.STOP,
        )


agent = LlmAgent(
    name="travel_assistant",
    model=ScriptedLlm(),
    instruction="Help with travel questions. Use tools.",
    tools=[get_weather, get_time, convert_currency],
)


async def main():
    runner = InMemoryRunner(agent=agent, app_name="travel_app")
    await runner.session_service.create_session(app_name="travel_app", user_id=USER_ID, session_id=CONV_ID)
    for prompt, _ in TURNS:
        try:
            async for ev in runner.run_async(
                user_id=USER_ID, session_id=CONV_ID, new_message=types.Content(role="user", parts=[types.Part(text=prompt)])
            ):
                ADK_IDS.extend(c.id for c in ev.get_function_calls())
                if ev.content and ev.content.parts and ev.content.parts[0].text:
                    print("turn output:", ev.content.parts[0].text)
        except RuntimeError as e:
            print("turn raised:", e)
    assert _n == len(SCRIPT), (_n, len(SCRIPT))


asyncio.run(main())
provider.force_flush()

from google.adk.telemetry._schema_version import resolve_schema_version  # noqa: E402

expected = {
    "framework": "google-adk",
    "library_versions": _common.versions("google-adk", "google-genai", "opentelemetry-sdk"),
    "adk_telemetry_schema_version": resolve_schema_version(),
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
        "Custom BaseLlm scripted; InMemoryRunner session_id=CONV_ID (= ADK session id). One run_async = one "
        "invocation = one turn. Turn 1 step 0 = two function_calls in one LlmResponse (ADK runs them "
        "concurrently and adds an 'execute_tool (merged)' summary span, which is plumbing). Turn 2: "
        "convert_currency raises; ADK does not catch it, so the invocation fails (root spans ERROR) and "
        "the errored tool span has no call id ('<not specified>'). Turn 3 answers without tools."
    ),
}
if not MODEL_IDS:
    # The model gave no ids: each call's id is the one ADK assigned (its events carry it). The
    # errored tool span says `<not specified>`, so ADK's id for that call reaches no span; the
    # only id in the trace is the one the LLM span's instrumentation made up ({name}_{j}).
    calls = [c for turn in expected["turns"] for c in turn["calls"]]
    assert len(ADK_IDS) == len(calls), ADK_IDS
    for c, adk_id in zip(calls, ADK_IDS):
        c["call_id"] = adk_id
    fx = expected["turns"][1]["calls"][1]
    fx["span_call_id"] = "convert_currency_0"
    expected["notes"] += (
        " The model gives no call ids (CAPTURE_MODEL_IDS=0, as Gemini): ADK assigns adk-<uuid> ids"
        " to executions, the LLM span's gen_ai.output.messages says {name}_{j}: two id spaces."
        " span_call_id = the only id the spans carry for a call whose own id reaches none."
    )
if LOGS:
    log_provider.force_flush()
    expected["content_in_logs"] = True
    expected["notes"] += (
        " Content capture EVENT_ONLY: no arguments or output messages on the spans; ADK emits"
        " them as OTel log records (logs.otlp.*), which carry the span they belong to."
    )
    _common.write_otlp_logs(OUT, log_exporter.get_finished_logs())
    print("log records:", len(log_exporter.get_finished_logs()))
_common.write_otlp(OUT, exporter.get_finished_spans())
_common.write_expected(OUT, expected)
print("spans:", len(exporter.get_finished_spans()))
