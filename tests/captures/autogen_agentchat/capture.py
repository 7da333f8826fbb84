"""Capture: AutoGen AgentChat `AssistantAgent` with AutoGen's own OpenTelemetry tracing, offline.

Tracing as AutoGen's "Tracing and Observability" guide sets it up: an SDK `TracerProvider` made
the global provider with `trace.set_tracer_provider` (AgentChat's `create_agent`,
`invoke_agent` and `execute_tool` spans come from `trace.get_tracer("autogen-core")`, i.e. the
global provider; a runtime's `tracer_provider` only governs its messaging spans, and a lone
agent runs on no runtime). No instrumentation is added: what is exported is AutoGen's own.

The model is autogen-ext's `ReplayChatCompletionClient` (AutoGen's scripted client), replaying
`CreateResult`s whose content is a list of `FunctionCall`s (what its OpenAI client returns for
tool calls), so the agent's own tool loop runs: `max_tool_iterations` lets one run call the
model again after its tools (AgentChat's documented multi-step setting). Parallel calls run
concurrently (the agent gathers a response's calls; the tools are async). A tool's exception
goes back to the model as an error result (`StaticWorkbench.call_tool`): turn 2 continues.

Conversation: the same agent across the three `agent.run(task=...)` calls (it keeps its model
context between runs, AgentChat's way to hold a conversation). AutoGen has no conversation or
session id at all, so none reaches a span: each run is a trace of its own, keyed by its trace.

CAPTURE_TEAM=1 (../autogen_agentchat_team): the agent in a `RoundRobinGroupChat` team, one
`team.run(task=...)` per turn (the team keeps its state between runs), on a
`SingleThreadedAgentRuntime(tracer_provider=...)` given the same provider, as the guide's
"connect the tracer provider to the AutoGen runtime" says: the runtime adds its messaging spans.

CAPTURE_OPENAI=1 (../autogen_agentchat_openai): the guide's whole setup, its
`OpenAIInstrumentor().instrument()` (opentelemetry-instrumentation-openai, OpenLLMetry) included,
with autogen-ext's `OpenAIChatCompletionClient` over an `httpx2.MockTransport` (the transport of
the openai package) answering the same script as Chat Completions JSON: the model's calls are
then in the trace, on the instrumentation's `openai.chat` spans.
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

TEAM = os.environ.get("CAPTURE_TEAM") == "1"
OPENAI = os.environ.get("CAPTURE_OPENAI") == "1"
OUT = Path(os.environ.get("CAPTURE_OUT", HERE))
SERVICE = os.environ.get("CAPTURE_SERVICE", "tooltrail-capture-autogen")
provider, exporter = _common.setup_tracing(SERVICE)  # the global provider
if OPENAI:
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument()  # as the guide: on the global provider

from autogen_agentchat.agents import AssistantAgent  # noqa: E402
from autogen_agentchat.conditions import TextMessageTermination  # noqa: E402
from autogen_agentchat.teams import RoundRobinGroupChat  # noqa: E402
from autogen_core import FunctionCall, SingleThreadedAgentRuntime  # noqa: E402
from autogen_core.models import CreateResult, ModelInfo, RequestUsage  # noqa: E402
from autogen_ext.models.replay import ReplayChatCompletionClient  # noqa: E402


async def get_weather(city: str) -> str:
    """Current weather for a city."""
    await asyncio.sleep(0.01)  # async tools: the agent's gather really overlaps parallel calls
    return json.dumps({"city": city, "temp_c": {"Paris": 18, "London": 14, "Berlin": 11}.get(city, 20)})


async def get_time(city: str) -> str:
    """Local time in a city."""
    await asyncio.sleep(0.01)
    return f"12:00 in {city}"


async def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
    """Convert money between currencies."""
    raise RuntimeError(f"FX service unavailable for {from_currency}->{to_currency}")


NO_USAGE = RequestUsage(prompt_tokens=0, completion_tokens=0)


def as_result(response) -> CreateResult:
    """One scripted model response as the CreateResult a model client returns."""
    calls = [FunctionCall(id=cid, name=name, arguments=json.dumps(args))
             for kind, *item in response if kind == "tool" for name, args, cid in [item]]
    if calls:
        return CreateResult(finish_reason="function_calls", content=calls, usage=NO_USAGE,
                            cached=False)
    (_, text), = response
    return CreateResult(finish_reason="stop", content=text, usage=NO_USAGE, cached=False)


MODEL = "gpt-4o-mini-2024-07-18"  # the name autogen-ext resolves `gpt-4o-mini` to


def chat_completion(request, answers=iter(_common.SCRIPT), ids=iter(range(10**6))):
    """The mock transport's answer: the next scripted response as Chat Completions JSON."""
    import httpx2

    response = next(answers)
    calls = [{"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
             for kind, *item in response if kind == "tool" for name, args, cid in [item]]
    message = {"role": "assistant", "content": None if calls else response[0][1]}
    if calls:
        message["tool_calls"] = calls
    return httpx2.Response(200, json={
        "id": f"chatcmpl-{next(ids)}", "object": "chat.completion", "created": 0, "model": MODEL,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    })


if OPENAI:
    import httpx2
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    model_client = OpenAIChatCompletionClient(
        model="gpt-4o-mini", api_key="sk-offline", max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(chat_completion)))
else:
    model_client = ReplayChatCompletionClient(
        [as_result(r) for r in _common.SCRIPT],
        model_info=ModelInfo(vision=False, function_calling=True, json_output=False,
                             family="unknown", structured_output=False),
    )


async def main() -> None:
    agent = AssistantAgent(
        "travel_assistant",
        model_client=model_client,
        tools=[get_weather, get_time, convert_currency],
        description="Travel helper",
        system_message="Help with travel questions. Use tools.",
        max_tool_iterations=5,
    )
    runner, runtime = agent, None
    if TEAM:  # the team's turn ends with the agent's text answer
        runtime = SingleThreadedAgentRuntime(tracer_provider=provider)
        runtime.start()
        runner = RoundRobinGroupChat(
            [agent], termination_condition=TextMessageTermination("travel_assistant"),
            runtime=runtime)
    for prompt, _ in _common.TURNS:
        result = await runner.run(task=prompt)
        print("turn:", [type(m).__name__ for m in result.messages], result.messages[-1].content)
    if runtime is not None:
        await runtime.stop()
    await model_client.close()


asyncio.run(main())
provider.force_flush()

expected = {
    "framework": "autogen-agentchat",
    "library_versions": _common.versions(
        "autogen-agentchat", "autogen-core", "autogen-ext", "opentelemetry-sdk",
    ),
    "conversation_id": None,  # AutoGen has no conversation id: conversation = trace
    # no span of a call's trace (its turn) carries its arguments or result
    "arguments_in_turn_trace": False,
    "results_in_turn_trace": False,
    "turns": _common.expected_turns(),
    "notes": (
        "autogen-ext's ReplayChatCompletionClient replays CreateResults with FunctionCall lists; "
        "AssistantAgent(max_tool_iterations=5) runs its own tool loop; tracing = AutoGen's own "
        "spans through the global TracerProvider (its tracing guide), no other instrumentation. "
        "One agent.run(task=...) per turn on the same agent (it keeps its model context); each "
        "run is its own trace rooted at 'invoke_agent travel_assistant', and AutoGen exports no "
        "conversation id (conversation = trace). Constructing the agent emits a lone "
        "'create_agent travel_assistant' root span, a trace of its own with no run in it. Tool "
        "spans 'execute_tool {name}' carry gen_ai.operation.name, gen_ai.system=autogen, "
        "gen_ai.tool.name, gen_ai.tool.description and gen_ai.tool.call.id only: no arguments, "
        "no result (arguments_in_turn_trace / results_in_turn_trace false; the arguments here are "
        "what the script's model requested). No LLM span: the model's requests are not in the "
        "trace. "
        "Turn 1 step 0 = two FunctionCalls in one CreateResult, executed concurrently "
        "(overlapping sibling spans). convert_currency raises: its span is ERROR with "
        "error.type=RuntimeError and two exception events; the workbench returns the error to "
        "the model and the turn continues."
    ),
}
if OPENAI:
    expected["library_versions"].update(_common.versions(
        "openai", "opentelemetry-instrumentation-openai"))
    del expected["arguments_in_turn_trace"], expected["results_in_turn_trace"]
    expected["notes"] += (
        " This capture, the guide's OpenAIInstrumentor too: instead of the replay client, "
        "OpenAIChatCompletionClient over an httpx2.MockTransport answering the script as Chat "
        "Completions JSON (no network). The instrumentation adds an 'openai.chat' span per model "
        "call under invoke_agent (gen_ai.operation.name=chat, gen_ai.output.messages with "
        "tool_call parts: id, name, arguments as an object; gen_ai.input.messages with the "
        "earlier calls' tool_call_response parts): the model's requests, with their arguments, "
        "are in the turn's trace and pair with AutoGen's execute_tool spans by call id."
    )
if TEAM:
    expected["notes"] += (
        " This capture, team mode: instead of agent.run, RoundRobinGroupChat([agent], "
        "TextMessageTermination('travel_assistant')), one team.run(task=...) per turn (each the "
        "same GenAI spans), on SingleThreadedAgentRuntime(tracer_provider=the same provider). The runtime adds 'autogen create|send|publish|process|ack ...' messaging "
        "spans with no GenAI attributes, most of them roots of traces of their own (related by "
        "links, not parents); each turn's invoke_agent and execute_tool spans sit under the "
        "'autogen process travel_assistant...' span of the message that ran the agent. The "
        "process spans' 'message' attribute is the team message as JSON: the manager's process "
        "spans of ToolCallRequestEvent (content = [{id, arguments (a JSON string), name}]) and "
        "ToolCallExecutionEvent (content = [{content, name, call_id, is_error}]) carry the "
        "arguments and results, each in a trace of its own, none in the tool spans' trace."
    )
_common.write_otlp(OUT, exporter.get_finished_spans())
_common.write_expected(OUT, expected)
print("spans:", len(exporter.get_finished_spans()))
