"""Capture: OpenAI Agents SDK + OpenInference instrumentation (or, via CAPTURE_INSTRUMENTATION, the official
OTel GenAI or the Traceloop instrumentation), offline.

The model is the SDK's REAL `OpenAIResponsesModel`, talking to an
`httpx.MockTransport` that returns scripted Responses-API JSON, so the
spans are exactly those a production run makes (the model span included).
No network is touched.

Conversation: the SDK's own `SQLiteSession(CONV_ID)` carries history between
turns, `RunConfig(group_id=CONV_ID)` is the SDK's own trace grouping, and
OpenInference's `using_session(CONV_ID)` is how OpenInference users tag
`session.id`.
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

# CAPTURE_INSTRUMENTATION: openinference (this dir) | otel (../openai_agents_otel) | traceloop (../openai_agents_traceloop)
INSTR = os.environ.get("CAPTURE_INSTRUMENTATION", "openinference")
OUT = Path(os.environ.get("CAPTURE_OUT", HERE))
os.environ.setdefault("OPENAI_API_KEY", "sk-offline-fake")
if INSTR == "otel":  # content capture is opt-in for the official OTel GenAI instrumentations
    os.environ.setdefault("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    os.environ.setdefault("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
provider, exporter = _common.setup_tracing(os.environ.get("CAPTURE_SERVICE", "tooltrail-capture-openai-agents"),
                                          processor=INSTR != "traceloop")

import httpx2 as httpx  # noqa: E402  (openai>=3 uses the httpx2 fork)
from openai import AsyncOpenAI  # noqa: E402
from openai.types.responses import (  # noqa: E402
    Response,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseUsage,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails  # noqa: E402
import contextlib  # noqa: E402

if INSTR == "openinference":
    from openinference.instrumentation import using_session  # noqa: E402
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402

    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
    INSTR_DISTS = ("openinference-instrumentation-openai-agents", "openinference-instrumentation")
else:
    def using_session(_sid):  # OpenInference-only helper; the others read RunConfig(group_id)
        return contextlib.nullcontext()

    if INSTR == "otel":
        from opentelemetry.instrumentation.genai.openai_agents import OpenAIAgentsInstrumentor  # noqa: E402
        from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor  # noqa: E402

        # disable_openai_trace_export: do not keep the SDK's default exporter to OpenAI's backend
        OpenAIAgentsInstrumentor().instrument(tracer_provider=provider, disable_openai_trace_export=True)
        OpenAIInstrumentor().instrument(tracer_provider=provider)  # the LLM ("chat"/"responses") spans
        INSTR_DISTS = ("opentelemetry-instrumentation-genai-openai-agents", "opentelemetry-instrumentation-genai-openai",
                       "opentelemetry-util-genai")
    elif INSTR == "traceloop":
        from agents import set_trace_processors  # noqa: E402
        from traceloop.sdk import Traceloop  # noqa: E402
        from traceloop.sdk.instruments import Instruments  # noqa: E402
        from traceloop.sdk.tracing import set_conversation_id  # noqa: E402

        # Traceloop's SDK, as its docs set it up: `Traceloop.init` (here with a custom exporter,
        # no telemetry, only the OpenAI Agents instrumentation) adds its processor, which stamps
        # the id of `set_conversation_id` (its "Sessions" docs) on every span as
        # `gen_ai.conversation.id`. Its instrumentation only *adds* its agents-SDK processor:
        # drop the SDK's default exporter to OpenAI's backend first (it would try the network).
        set_trace_processors([])
        Traceloop.init(app_name="tooltrail-capture", exporter=exporter, disable_batch=True,
                       telemetry_enabled=False, instruments={Instruments.OPENAI_AGENTS})
        INSTR_DISTS = ("traceloop-sdk", "opentelemetry-instrumentation-openai-agents")
    else:
        raise SystemExit(f"unknown CAPTURE_INSTRUMENTATION {INSTR}")

from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, SQLiteSession, function_tool, trace  # noqa: E402

# CAPTURE_APPROVAL=1 (../openai_agents_approval): a `needs_approval=True` tool and the SDK's
# documented human-in-the-loop loop (result.interruptions -> state.approve/reject -> run(state)).
APPROVAL = os.environ.get("CAPTURE_APPROVAL") == "1"
CONV_ID = "conv-openai-agents-approval-0001" if APPROVAL else "conv-openai-agents-0001"


@function_tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return json.dumps({"city": city, "temp_c": {"Paris": 18, "London": 14, "Berlin": 11}.get(city, 20)})


@function_tool
def get_time(city: str) -> str:
    """Local time in a city."""
    return f"12:00 in {city}"


@function_tool
def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
    """Convert money between currencies."""
    raise RuntimeError(f"FX service unavailable for {from_currency}->{to_currency}")


@function_tool(needs_approval=True)
def delete_account(login: str) -> str:
    """Delete a user's account (needs the user's approval)."""
    return json.dumps({"deleted": login})


# ---- the scripted model -------------------------------------------------------------
_n = 0


def _call(name, args, cid):
    return ResponseFunctionToolCall(
        type="function_call", id=f"fc_{cid}", call_id=cid, name=name, arguments=json.dumps(args), status="completed"
    )


def _text(t):
    global _n
    return ResponseOutputMessage(
        type="message", id=f"msg_{_n}", role="assistant", status="completed",
        content=[ResponseOutputText(type="output_text", text=t, annotations=[])],
    )


# (turn, user input, [model responses]); each response is a list of output items
TURNS = [
    (
        "What's the weather in Paris and London, and what time is it in Paris?",
        [
            [_call("get_weather", {"city": "Paris"}, "call_w_paris"), _call("get_weather", {"city": "London"}, "call_w_london")],
            [_call("get_time", {"city": "Paris"}, "call_t_paris")],
            [_text("Paris 18C, London 14C; it is 12:00 in Paris.")],
        ],
    ),
    (
        "Convert 100 EUR to USD, and tell me the weather in Berlin.",
        [
            [_call("convert_currency", {"amount": 100, "from_currency": "EUR", "to_currency": "USD"}, "call_fx")],
            [_call("get_weather", {"city": "Berlin"}, "call_w_berlin")],
            [_text("The FX service failed; Berlin is 11C.")],
        ],
    ),
    ("Thanks, that's all!", [[_text("You're welcome!")]]),
]
if APPROVAL:  # (user input, approve?, [model responses]): None = the approval never comes
    APPROVAL_TURNS = [
        ("Delete alice's account.", True, [[_call("delete_account", {"login": "alice"}, "call_del_alice")],
                                           [_text("alice's account is deleted.")]]),
        ("Delete bob's account.", False, [[_call("delete_account", {"login": "bob"}, "call_del_bob")],
                                          [_text("I did not delete bob's account.")]]),
        ("Delete carol's account.", None, [[_call("delete_account", {"login": "carol"}, "call_del_carol")]]),
    ]
    TURNS = [(u, rs) for u, _, rs in APPROVAL_TURNS]
SCRIPT = [resp for _, resps in TURNS for resp in resps]


def handler(request: httpx.Request) -> httpx.Response:
    global _n
    assert request.url.path.endswith("/responses"), request.url
    output = SCRIPT[_n]
    resp = Response(
        id=f"resp_{_n:03d}", object="response", created_at=1700000000 + _n, model="gpt-4o-mini",
        output=output, parallel_tool_calls=True, tool_choice="auto", tools=[], status="completed",
        usage=ResponseUsage(
            input_tokens=50, output_tokens=10, total_tokens=60,
            input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
            output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
        ),
    )
    _n += 1
    return httpx.Response(200, json=json.loads(resp.model_dump_json(exclude_none=True)))


async def main():
    client = AsyncOpenAI(api_key="sk-offline-fake", base_url="http://mock.invalid/v1",
                         http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)), max_retries=0)
    agent = Agent(
        name="travel_assistant",
        instructions="Help with travel questions. Use tools.",
        model=OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client),
        tools=[get_weather, get_time, convert_currency],
    )
    session = SQLiteSession(CONV_ID)
    run_config = RunConfig(group_id=CONV_ID, workflow_name="travel_assistant_chat")
    if INSTR == "traceloop":
        set_conversation_id(CONV_ID)  # Traceloop's way; it drops the agents SDK's group_id
    if APPROVAL:
        agent = agent.clone(tools=[delete_account])
        for user_input, approve, _ in APPROVAL_TURNS:
            with trace(run_config.workflow_name, group_id=CONV_ID), using_session(CONV_ID):
                result = await Runner.run(agent, user_input, session=session, run_config=run_config)
                assert result.interruptions, "no approval asked"
                if approve is None:
                    continue
                state = result.to_state()
                for item in result.interruptions:
                    (state.approve if approve else state.reject)(item)
                result = await Runner.run(agent, state, session=session, run_config=run_config)
            print("turn output:", result.final_output)
        assert _n == len(SCRIPT), (_n, len(SCRIPT))
        return
    for user_input, _ in TURNS:
        with using_session(CONV_ID):
            result = await Runner.run(
                agent, user_input, session=session,
                run_config=RunConfig(group_id=CONV_ID, workflow_name="travel_assistant_chat"),
            )
        print("turn output:", result.final_output)
    assert _n == len(SCRIPT), (_n, len(SCRIPT))


asyncio.run(main())
provider.force_flush()

expected = {
    "framework": "openai-agents",
    "library_versions": _common.versions(
        "openai-agents", "openai", *INSTR_DISTS, "opentelemetry-sdk",
    ),
    "instrumentation": INSTR,
    "conversation_id": CONV_ID,
    "turns": _common.expected_turns(),
    "notes": (
        "Model = real OpenAIResponsesModel over httpx.MockTransport (scripted Responses API). "
        "call_id = the id the model put on the function_call item (appears on the LLM span output; "
        "tool spans carry none). Step 0 of turn 1 is two parallel function calls in one response "
        "(the SDK runs them concurrently, so their execution order may vary). "
        "conversation id set via RunConfig(group_id) + SQLiteSession (+ openinference using_session when "
        "instrumented by OpenInference)."
    ),
}
if APPROVAL:
    # Each asking run and its resumed run are one SDK trace (`with trace(...)`, the SDK's way to
    # make several runs one trace), so all three instrumentations export the resumed run under
    # the asking run's root. Without it the resumed run re-attaches to the asking run's ended
    # trace without notifying processors (openai-agents 0.24 `tracing/context.py`
    # `create_trace_for_run` -> `reattach_trace`): OpenInference then drops its spans, the OTel
    # GenAI and Traceloop instrumentations root them in a new trace with no conversation id.
    def call(login, **more):
        return {"name": "delete_account", "arguments": {"login": login}, "error": False, "step": 0,
                "call_id": f"call_del_{login}", **more}

    expected["turns"] = [
        {"calls": [call("alice")]},  # pending tool span, then the executed one, one trace
        {"calls": [call("bob", error=True, status="rejected")]},  # refusal in the model's input
        {"calls": [call("carol", status="pending")]},  # never answered
    ]
    expected["notes"] = (
        "function_tool(needs_approval=True); the SDK's documented loop: Runner.run -> "
        "result.interruptions -> state.approve/reject -> Runner.run(agent, state), each asking run "
        "and its resumed run inside one `with trace(workflow_name, group_id=CONV_ID)`. Asking run: "
        "the tool span has the arguments and no result. Approved: a second tool span of the call, "
        "with its result and no call id, in the same trace. Rejected: no tool span; the resumed "
        "model call's input answers the call with the SDK's 'Tool execution was not approved.'."
    )
if APPROVAL:  # what the script answered (the trace may not show it)
    expected["user_answers"] = {"call_del_alice": "approved", "call_del_bob": "rejected",
                                "call_del_carol": "never answered"}
_common.write_otlp(OUT, exporter.get_finished_spans())
_common.write_expected(OUT, expected)
print("spans:", len(exporter.get_finished_spans()))
