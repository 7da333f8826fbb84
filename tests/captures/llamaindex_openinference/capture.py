"""Capture: LlamaIndex `FunctionAgent` + OpenInference LlamaIndex instrumentation, offline.

The model is llama-index-core's own `MockFunctionCallingLLM` (a `FunctionCallingLLM`) with a
response generator that returns the scripted assistant messages, tool calls as `ToolCallBlock`s
(the blocks LlamaIndex's OpenAI integration produces), so the agent's own tool-calling path
(`achat_with_tools` -> `get_tool_calls_from_response` -> `call_tool`) runs. Instrumentation as
the OpenInference docs set it up: `LlamaIndexInstrumentor().instrument(tracer_provider=...)`.
Conversation: one workflow `Context` carried across the three runs (LlamaIndex's way to keep
a conversation), and `openinference.instrumentation.using_session(CONV_ID)` around each run
(OpenInference's documented session id).
"""
from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import _common  # noqa: E402

provider, exporter = _common.setup_tracing("tooltrail-capture-llamaindex")

from openinference.instrumentation import using_session  # noqa: E402
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor  # noqa: E402

LlamaIndexInstrumentor().instrument(tracer_provider=provider)

from llama_index.core.agent.workflow import FunctionAgent  # noqa: E402
from llama_index.core.base.llms.types import (  # noqa: E402
    ChatMessage,
    ChatResponse,
    MessageRole,
    TextBlock,
    ToolCallBlock,
)
from llama_index.core.llms.callbacks import llm_chat_callback  # noqa: E402
from llama_index.core.llms.mock import MockFunctionCallingLLM  # noqa: E402
from llama_index.core.tools import FunctionTool  # noqa: E402
from llama_index.core.workflow import Context  # noqa: E402

CONV_ID = "conv-llamaindex-0001"


def get_weather(city: str) -> str:
    """Current weather for a city."""
    temps = {"Paris": 18, "London": 14, "Berlin": 11}
    return json.dumps({"city": city, "temp_c": temps.get(city, 20)})


def get_time(city: str) -> str:
    """Local time in a city."""
    return f"12:00 in {city}"


def convert_currency(amount: float, from_currency: str, to_currency: str) -> str:
    """Convert money between currencies."""
    raise RuntimeError(f"FX service unavailable for {from_currency}->{to_currency}")


def as_message(response) -> ChatMessage:
    blocks = []
    for kind, *item in response:
        if kind == "text":
            blocks.append(TextBlock(text=item[0]))
        else:
            name, args, cid = item
            blocks.append(ToolCallBlock(tool_call_id=cid, tool_name=name, tool_kwargs=args))
    return ChatMessage(role=MessageRole.ASSISTANT, blocks=blocks)


script = iter(_common.SCRIPT)


def scripted(messages, **kwargs) -> ChatMessage:
    return as_message(next(script))


class ScriptedLLM(MockFunctionCallingLLM):
    """`achat` answers directly, as a real integration's does (the mock's `achat` calls `chat`,
    which would add a third LLM span per model call)."""

    @llm_chat_callback()
    async def achat(self, messages, **kwargs) -> ChatResponse:
        msg = scripted(messages, **kwargs)
        content = msg.content or ""
        return ChatResponse(message=msg, delta=content, raw={"content": content})


llm = ScriptedLLM(is_chat_model=True)
agent = FunctionAgent(
    name="travel_assistant",
    description="Travel helper",
    system_prompt="Help with travel questions. Use tools.",
    tools=[FunctionTool.from_defaults(fn=f) for f in (get_weather, get_time, convert_currency)],
    llm=llm,
    streaming=False,
)


async def main() -> None:
    ctx = Context(agent)
    for prompt, _ in _common.TURNS:
        with using_session(CONV_ID):
            out = await agent.run(user_msg=prompt, ctx=ctx)
        print("turn output:", out)


asyncio.run(main())
provider.force_flush()

expected = {
    "framework": "llamaindex",
    "library_versions": _common.versions(
        "llama-index-core", "llama-index-workflows", "llama-index-instrumentation",
        "openinference-instrumentation-llama-index", "openinference-instrumentation",
        "opentelemetry-sdk",
    ),
    "conversation_id": CONV_ID,
    "turns": _common.expected_turns(),
    "notes": (
        "A MockFunctionCallingLLM (llama-index-core) subclass whose achat returns the scripted "
        "assistant messages with ToolCallBlocks; FunctionAgent(streaming=False) runs its own "
        "tool-calling path. Conversation = openinference using_session(CONV_ID) around each "
        "agent.run, one workflow Context across the three runs. FunctionTool returns a tool's "
        "exception to the model as an error ToolOutput, so "
        "turn 2 continues after convert_currency fails. Turn 1 step 0 = two ToolCallBlocks in one "
        "assistant message. The tool span's input.value is an envelope {\"kwargs\": {...}}; each "
        "model call yields two LLM-kind spans."
    ),
}
_common.write_otlp(HERE, exporter.get_finished_spans())
_common.write_expected(HERE, expected)
print("spans:", len(exporter.get_finished_spans()))
