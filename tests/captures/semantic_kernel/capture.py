"""Capture: Semantic Kernel (python `semantic-kernel`) native OpenTelemetry GenAI diagnostics, offline.

Telemetry is switched on with the documented environment variables
SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS(_SENSITIVE) (read when the module is
imported, hence set first). The model is a custom `ChatCompletionClientBase` whose
`_inner_get_chat_message_contents` returns scripted `FunctionCallContent`s, decorated with SK's
own `trace_chat_completion` exactly like SK's OpenAI connector; SK's real auto function
invocation loop runs the tools (a `KernelPlugin` named `travel`, so the model-facing and
traced tool names are SK's fully qualified `travel-get_weather`, ...).

Agent: `ChatCompletionAgent`, one `get_response` per turn on a shared `ChatHistoryAgentThread`.
SK exports **no conversation id** (the thread id, set to CONV_ID, never reaches a span): each turn's trace
is a conversation of its own. Message content (inputs, the model's choices) goes to OTel **logs**
(`gen_ai.choice` etc. through `logging`), not to spans, so the chat spans carry no requests.
"""
from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Annotated

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import _common  # noqa: E402

os.environ.setdefault("SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS", "true")
os.environ.setdefault("SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE", "true")

OUT = Path(os.environ.get("CAPTURE_OUT", HERE))
SERVICE = os.environ.get("CAPTURE_SERVICE", "tooltrail-capture-semantic-kernel")
provider, exporter = _common.setup_tracing(SERVICE)

from semantic_kernel.agents import ChatCompletionAgent, ChatHistoryAgentThread  # noqa: E402
from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase  # noqa: E402
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior  # noqa: E402
from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings  # noqa: E402
from semantic_kernel.contents import ChatHistory, ChatMessageContent, FunctionCallContent, TextContent  # noqa: E402
from semantic_kernel.contents.utils.author_role import AuthorRole  # noqa: E402
from semantic_kernel.contents.utils.finish_reason import FinishReason  # noqa: E402
from semantic_kernel.filters import FilterTypes, FunctionInvocationContext  # noqa: E402
from semantic_kernel.functions import FunctionResult, kernel_function  # noqa: E402
from semantic_kernel.utils.telemetry.model_diagnostics.decorators import trace_chat_completion  # noqa: E402

PLUGIN = "travel"
CONV_ID = "conv-semantic-kernel-0001"  # the thread id; SK does not export it


class TravelPlugin:
    @kernel_function(description="Current weather for a city.")
    async def get_weather(self, city: Annotated[str, "the city"]) -> dict:
        await asyncio.sleep(0.01)  # async tools: SK's gather really runs parallel calls concurrently
        return {"city": city, "temp_c": {"Paris": 18, "London": 14, "Berlin": 11}.get(city, 20)}

    @kernel_function(description="Local time in a city.")
    async def get_time(self, city: Annotated[str, "the city"]) -> str:
        await asyncio.sleep(0.01)
        return f"12:00 in {city}"

    @kernel_function(description="Convert money between currencies.")
    async def convert_currency(
        self, amount: Annotated[float, "amount"], from_currency: Annotated[str, "ISO code"],
        to_currency: Annotated[str, "ISO code"],
    ) -> str:
        raise RuntimeError(f"FX service unavailable for {from_currency}->{to_currency}")


def call(name, args, cid):
    return ("tool", f"{PLUGIN}-{name}", args, cid)


def text(t):
    return ("text", t)


TURNS = [
    (
        "What's the weather in Paris and London, and what time is it in Paris?",
        [
            [call("get_weather", {"city": "Paris"}, "call_w_paris"), call("get_weather", {"city": "London"}, "call_w_london")],
            [call("get_time", {"city": "Paris"}, "call_t_paris")],
            [text("Paris 18C, London 14C; it is 12:00 in Paris.")],
        ],
    ),
    (
        "Convert 100 EUR to USD, and tell me the weather in Berlin.",
        [
            [call("convert_currency", {"amount": 100, "from_currency": "EUR", "to_currency": "USD"}, "call_fx")],
            [call("get_weather", {"city": "Berlin"}, "call_w_berlin")],
            [text("The FX service failed; Berlin is 11C.")],
        ],
    ),
    ("Thanks, that's all!", [[text("You're welcome!")]]),
]

# CAPTURE_APPROVAL=1 (../semantic_kernel_approval): SK's documented consent gate ("Task automation
# with agents"): a function invocation filter asks the user and, when refused, sets
# `context.result` to the app's own FunctionResult without calling `next`. The filter answers in
# process: a call never waits across turns.
APPROVAL = os.environ.get("CAPTURE_APPROVAL") == "1"
if APPROVAL:
    import io

    PLUGIN = "accounts"
    CONV_ID = "conv-semantic-kernel-approval-0001"
    USER_ANSWERS = {"call_del_alice": "Y", "call_del_bob": "N"}  # typed at the prompt
    sys.stdin = io.StringIO("".join(f"{a}\n" for a in USER_ANSWERS.values()))
    REFUSAL = "The account deletion was not approved by the user"  # the app's text, not SK's
    TURNS = [
        ("Delete alice's account.", [[call("delete_account", {"login": "alice"}, "call_del_alice")],
                                     [text("alice's account is deleted.")]]),
        ("Delete bob's account.", [[call("delete_account", {"login": "bob"}, "call_del_bob")],
                                   [text("I could not delete bob's account.")]]),
    ]
SCRIPT = [r for _, rs in TURNS for r in rs]
STATE = {"n": 0}


class AccountsPlugin:
    @kernel_function(description="Delete a user's account (needs the user's consent).")
    async def delete_account(self, login: Annotated[str, "the user's login"]) -> str:
        return json.dumps({"deleted": login})


async def approval_filter(context: FunctionInvocationContext, next) -> None:
    """The docs' consent filter: ask, and on a refusal answer for the function without running it."""
    if context.function.plugin_name == PLUGIN and context.function.name == "delete_account":
        answer = input(f"System > The agent wants to delete {context.arguments['login']}'s account, "
                       "do you want to proceed? (Y/N) ")
        if answer != "Y":
            context.result = FunctionResult(function=context.function.metadata, value=REFUSAL)
            return
    await next(context)


class ScriptedChatCompletion(ChatCompletionClientBase):
    """A chat completion service that answers with the scripted responses, in order."""

    SUPPORTS_FUNCTION_CALLING = True

    def get_prompt_execution_settings_class(self) -> type[PromptExecutionSettings]:
        return PromptExecutionSettings

    @trace_chat_completion("scripted")
    async def _inner_get_chat_message_contents(
        self, chat_history: ChatHistory, settings: PromptExecutionSettings
    ) -> list[ChatMessageContent]:
        blocks = SCRIPT[STATE["n"]]
        STATE["n"] += 1
        items = [
            FunctionCallContent(id=b[3], name=b[1], arguments=json.dumps(b[2])) if b[0] == "tool"
            else TextContent(text=b[1])
            for b in blocks
        ]
        has_tool = blocks[0][0] == "tool"
        return [ChatMessageContent(
            role=AuthorRole.ASSISTANT, items=items, ai_model_id=self.ai_model_id,
            finish_reason=FinishReason.TOOL_CALLS if has_tool else FinishReason.STOP,
            metadata={"id": f"resp_{STATE['n']}"},
        )]


async def main() -> None:
    agent = ChatCompletionAgent(
        service=ScriptedChatCompletion(ai_model_id="scripted-model", service_id="scripted"),
        name="travel_assistant",
        instructions="Help with travel questions. Use tools.",
        function_choice_behavior=FunctionChoiceBehavior.Auto(),
    )
    if APPROVAL:
        agent.kernel.add_plugin(AccountsPlugin(), plugin_name=PLUGIN)
        agent.kernel.add_filter(FilterTypes.FUNCTION_INVOCATION, approval_filter)
    else:
        agent.kernel.add_plugin(TravelPlugin(), plugin_name=PLUGIN)
    thread = ChatHistoryAgentThread(thread_id=CONV_ID)
    for prompt, _ in TURNS:
        response = await agent.get_response(messages=prompt, thread=thread)
        thread = response.thread
        print("turn output:", str(response.content).strip())


asyncio.run(main())
assert STATE["n"] == len(SCRIPT), (STATE["n"], len(SCRIPT))
provider.force_flush()


def q(name):
    return f"{PLUGIN}-{name}"


expected = {
    "framework": "semantic-kernel",
    "library_versions": _common.versions("semantic-kernel", "opentelemetry-sdk"),
    "conversation_id": CONV_ID,
    "turns": [
        {"calls": [
            {"name": q("get_weather"), "arguments": {"city": "Paris"}, "error": False, "step": 0, "call_id": "call_w_paris"},
            {"name": q("get_weather"), "arguments": {"city": "London"}, "error": False, "step": 0, "call_id": "call_w_london"},
            {"name": q("get_time"), "arguments": {"city": "Paris"}, "error": False, "step": 1, "call_id": "call_t_paris"},
        ]},
        {"calls": [
            {"name": q("convert_currency"), "arguments": {"amount": 100, "from_currency": "EUR", "to_currency": "USD"},
             "error": True, "step": 0, "call_id": "call_fx"},
            {"name": q("get_weather"), "arguments": {"city": "Berlin"}, "error": False, "step": 1, "call_id": "call_w_berlin"},
        ]},
        {"calls": []},
    ],
    "notes": (
        "Custom ChatCompletionClientBase (SUPPORTS_FUNCTION_CALLING, SK's trace_chat_completion decorator) "
        "returning scripted FunctionCallContent; ChatCompletionAgent + FunctionChoiceBehavior.Auto(); "
        "plugin 'travel', so tool names are SK's fully qualified 'travel-<function>'. Diagnostics via "
        "SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS(_SENSITIVE). conversation_id is the "
        "ChatHistoryAgentThread id, which SK does not export: each turn's trace is its own conversation. Turn = one "
        "agent.get_response(...). Turn 1 step 0 = two function calls in one response (SK gathers them "
        "concurrently). convert_currency raises; SK returns the error text to the model as the function "
        "result and the turn continues."
    ),
}
if APPROVAL:
    # alice: approved at the prompt, runs. bob: refused, the filter answers for the function
    # without running it; SK opens the execute_tool span before the filters run and records
    # the filter's FunctionResult as the call's result, as for any call: nothing in the trace
    # tells it from an execution (see notes). Ground truth = what the trace can show.
    expected["conversation_id"] = CONV_ID
    expected["turns"] = [
        {"calls": [{"name": q("delete_account"), "arguments": {"login": "alice"}, "error": False,
                    "step": 0, "call_id": "call_del_alice"}]},
        {"calls": [{"name": q("delete_account"), "arguments": {"login": "bob"}, "error": False,
                    "step": 0, "call_id": "call_del_bob"}]},
    ]
    expected["user_answers"] = {"call_del_alice": "approved", "call_del_bob": "rejected"}
    expected["notes"] = (
        "SK's documented consent gate (Task automation with agents): a FUNCTION_INVOCATION filter "
        "asks the user (input(), stdin scripted 'Y' then 'N') and, when refused, sets "
        f"context.result = FunctionResult(value={REFUSAL!r}) without calling next. Turn = one "
        "agent.get_response on a shared ChatHistoryAgentThread (no conversation id exported: "
        "conversation = trace). Approved: an ordinary execute_tool span. Refused: the tool does "
        "not run, but SK's execute_tool span (opened before the filters) exists, status unset, "
        "with the app's text as gen_ai.tool.call.result; SK writes no mark of its own, so the refused "
        "call reads as executed with that result (user_answers records the truth). The model's "
        "next input (the FunctionResultContent) goes to OTel logs, not spans. A call never waits "
        "across turns: no unanswered approval exists."
    )
_common.write_otlp(OUT, exporter.get_finished_spans())
_common.write_expected(OUT, expected)
print("spans:", len(exporter.get_finished_spans()))
