"""Capture: CrewAI + OpenInference (openinference-instrumentation-crewai), offline, with a fake LLM.

The model is a `crewai.llms.base_llm.BaseLLM` subclass that reports native function calling
and returns scripted OpenAI-style tool calls (`[{"id", "type": "function", "function": {...}}]`)
when CrewAI passes tools, else the scripted text. CrewAI's real agent executor runs the tools
(parallel native calls in its thread pool) and the real instrumentation (default wrapper mode,
`CrewAIInstrumentor().instrument()`) traces Crew.kickoff, Task._execute_core and Tool.run.
The instrumentation has no LLM spans of its own (that is the LiteLLM/OpenAI instrumentors' job,
and the fake LLM calls neither), so no requested calls are in the spans.

Conversation: `openinference.instrumentation.using_session(CONV_ID)` around each kickoff (the
OpenInference way; CrewAI has no conversation id of its own). Turn = one `crew.kickoff(...)`.
CrewAI's own anonymous telemetry and its tracing are switched off (no network).
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import _common  # noqa: E402

os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_DISABLE_TRACKING", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("CREWAI_STORAGE_DIR", "/tmp/tooltrail-crewai-capture")

OUT = Path(os.environ.get("CAPTURE_OUT", HERE))
SERVICE = os.environ.get("CAPTURE_SERVICE", "tooltrail-capture-crewai")
provider, exporter = _common.setup_tracing(SERVICE)

from openinference.instrumentation import using_session  # noqa: E402
from openinference.instrumentation.crewai import CrewAIInstrumentor  # noqa: E402

# ../crewai_openinference_events reruns this script with the instrumentation's event-listener mode.
EVENT_LISTENER = os.environ.get("CAPTURE_CREWAI_EVENT_LISTENER") == "1"
CrewAIInstrumentor().instrument(tracer_provider=provider, use_event_listener=EVENT_LISTENER)

from crewai import Agent, Crew, Process, Task  # noqa: E402
from crewai.llms.base_llm import BaseLLM, llm_call_context  # noqa: E402
from crewai.events.types.llm_events import LLMCallType  # noqa: E402
from crewai.tools import tool  # noqa: E402

CONV_ID = "conv-crewai-0001"


@tool("get_weather")
def get_weather(city: str) -> str:
    """Current weather for a city."""
    time.sleep(0.02)  # parallel calls run in CrewAI's thread pool: make them overlap
    return json.dumps({"city": city, "temp_c": {"Paris": 18, "London": 14, "Berlin": 11}.get(city, 20)})


@tool("get_time")
def get_time(city: str) -> str:
    """Local time in a city."""
    return f"12:00 in {city}"


@tool("convert_currency")
def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
    """Convert money between currencies."""
    raise RuntimeError(f"FX service unavailable for {from_currency}->{to_currency}")


# CAPTURE_APPROVAL=1 (../crewai_openinference_approval): CrewAI's documented approval gate, a
# before-tool-call hook that asks the user (`context.request_human_input`, which reads stdin) and
# returns False to block the call. The hook answers in process: a call never waits across runs.
APPROVAL = os.environ.get("CAPTURE_APPROVAL") == "1"
if APPROVAL:
    import io

    from crewai.hooks import ToolCallHookContext, before_tool_call  # noqa: E402

    CONV_ID = "conv-crewai-approval-0001"
    USER_ANSWERS = {"call_del_alice": "approve", "call_del_bob": "no"}  # typed at the prompt
    sys.stdin = io.StringIO("".join(f"{a}\n" for a in USER_ANSWERS.values()))

    @tool("delete_account")
    def delete_account(login: str) -> str:
        """Delete a user's account (needs the user's approval)."""
        return json.dumps({"deleted": login})

    @before_tool_call
    def approval_gate(context: ToolCallHookContext) -> bool | None:
        if context.tool_name != "delete_account":
            return None
        answer = context.request_human_input(prompt=f"Delete {context.tool_input}?",
                                             default_message="Type 'approve' to continue:")
        return None if answer.lower() == "approve" else False

    TURNS = [
        ("Delete alice's account.", [[_common.call("delete_account", {"login": "alice"}, "call_del_alice")],
                                     [_common.text("alice's account is deleted.")]]),
        ("Delete bob's account.", [[_common.call("delete_account", {"login": "bob"}, "call_del_bob")],
                                   [_common.text("I could not delete bob's account.")]]),
    ]
    SCRIPT = [r for _, rs in TURNS for r in rs]
else:
    TURNS, SCRIPT = _common.TURNS, _common.SCRIPT
STATE = {"n": 0, "tools_seen": []}


class ScriptedLLM(BaseLLM):
    """A CrewAI LLM that answers with the scripted responses, in order (no network)."""

    def call(self, messages, tools=None, callbacks=None, available_functions=None,
             from_task=None, from_agent=None, response_model=None) -> Any:
        blocks = SCRIPT[STATE["n"]]
        STATE["n"] += 1
        STATE["tools_seen"].append(bool(tools))
        with llm_call_context():  # the LLM events CrewAI's own providers emit
            self._emit_call_started_event(
                messages=messages, tools=tools, callbacks=callbacks,
                available_functions=available_functions, from_task=from_task, from_agent=from_agent,
            )
            if blocks[0][0] == "tool":
                answer: Any = [
                    {"id": b[3], "type": "function",
                     "function": {"name": b[1], "arguments": json.dumps(b[2])}}
                    for b in blocks
                ]
                call_type = LLMCallType.TOOL_CALL
            else:
                answer, call_type = blocks[0][1], LLMCallType.LLM_CALL
            self._emit_call_completed_event(
                response=answer, call_type=call_type, from_task=from_task, from_agent=from_agent,
                messages=messages,
            )
            return answer

    def supports_function_calling(self) -> bool:
        return True

    def supports_stop_words(self) -> bool:
        return False

    def get_context_window_size(self) -> int:
        return 128000


llm = ScriptedLLM(model="scripted-model")
assistant = Agent(
    role="travel_assistant",
    goal="Help with travel questions. Use tools.",
    backstory="A travel assistant.",
    llm=llm,
    tools=[delete_account] if APPROVAL else [get_weather, get_time, convert_currency],
    allow_delegation=False,
    verbose=False,
    max_iter=10,
)
task = Task(
    name="answer",
    description="Answer the user: {question}",
    expected_output="A short answer.",
    agent=assistant,
)
crew = Crew(name="travel_crew", agents=[assistant], tasks=[task], process=Process.sequential,
            verbose=False)

for prompt, _ in TURNS:
    with using_session(CONV_ID):
        result = crew.kickoff(inputs={"question": prompt})
    print("turn output:", str(result).strip())
assert STATE["n"] == len(SCRIPT), (STATE["n"], len(SCRIPT))
provider.force_flush()

expected = {
    "framework": "crewai",
    "instrumentation_mode": "event_listener" if EVENT_LISTENER else "wrappers",
    "library_versions": _common.versions("crewai", "openinference-instrumentation-crewai", "opentelemetry-sdk"),
    "conversation_id": CONV_ID,
    # Wrapper mode: the model's call ids never reach a span (tool spans carry none, no LLM span).
    # Event-listener mode: they are in the LLM spans' `output.value`.
    "call_ids_in_spans": EVENT_LISTENER,
    "turns": _common.expected_turns(),
    "notes": (
        "crewai.llms.base_llm.BaseLLM subclass with native function calling returning scripted OpenAI-style "
        "tool calls. One Crew (one agent, one task '{question}'), turn = one crew.kickoff(...). Conversation "
        "id via openinference using_session. Turn 1 step 0 = two tool calls in one response (CrewAI runs "
        "them in a thread pool). convert_currency raises; CrewAI returns the error to the model as the tool "
        "result and the turn continues. The model's call ids never reach a span (no LLM spans)."
    ),
}
if APPROVAL:
    # alice: approved at the prompt, runs. bob: refused, the hook blocks it: the tool does not
    # run, and "Tool execution blocked by hook. Tool: delete_account" is the call's result
    # (crewai 1.15 `agents/agent_executor.py`): the event-listener TOOL span's `output.value`.
    expected["turns"] = [
        {"calls": [{"name": "delete_account", "arguments": {"login": "alice"}, "error": False,
                    "step": 0, "call_id": "call_del_alice"}]},
        {"calls": [{"name": "delete_account", "arguments": {"login": "bob"}, "error": True,
                    "step": 0, "call_id": "call_del_bob", "status": "rejected"}]},
    ]
    expected["user_answers"] = {"call_del_alice": "approved", "call_del_bob": "rejected"}
    expected["notes"] = (
        "CrewAI's documented approval gate: a @before_tool_call hook asks the user "
        "(context.request_human_input, stdin scripted 'approve' then 'no') and returns False to "
        "block. Turn = one crew.kickoff. Event-listener mode (its LLM spans carry the call ids). "
        "Approved: the tool span runs as any call; nothing in the trace says it waited. Refused: "
        "the tool does not run, but the event-listener TOOL span exists with output.value "
        "'Tool execution blocked by hook. Tool: delete_account' (wrapper mode has no span for it "
        "at all). A call never waits across runs: no unanswered approval exists."
    )
_common.write_otlp(OUT, exporter.get_finished_spans())
_common.write_expected(OUT, expected)
print("spans:", len(exporter.get_finished_spans()), "tools passed to llm:", STATE["tools_seen"])
