"""Capture: smolagents `ToolCallingAgent` + OpenInference smolagents instrumentation, offline.

The model is smolagents' own `OpenAIServerModel` (the alias of `OpenAIModel`, the API model its
docs give for an OpenAI-compatible server) with `api_base` at a scripted chat-completions server
on 127.0.0.1 that this script runs: each POST answers the next scripted assistant message, tool
calls in the OpenAI wire form (arguments as a JSON string); a text answer is smolagents' own
`final_answer` tool call. Instrumentation as the OpenInference docs set it up:
`SmolagentsInstrumentor().instrument(tracer_provider=...)`; it wraps `generate` of the model
classes smolagents exports, so each model call is an LLM span with the requested calls.
Conversation: `agent.run(..., reset=False)` keeps the agent's memory across turns, and
`using_session(CONV_ID)` around each run gives OpenInference's `session.id`.
"""
from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import _common  # noqa: E402

provider, exporter = _common.setup_tracing("tooltrail-capture-smolagents")

from openinference.instrumentation import using_session  # noqa: E402
from openinference.instrumentation.smolagents import SmolagentsInstrumentor  # noqa: E402

SmolagentsInstrumentor().instrument(tracer_provider=provider)

from smolagents import OpenAIServerModel, ToolCallingAgent, tool  # noqa: E402

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


def completion(response, n: int) -> dict:
    """One scripted model response as an OpenAI chat-completions body."""
    calls = []
    for j, (kind, *item) in enumerate(response):
        if kind == "text":  # smolagents answers through its final_answer tool
            name, args, cid = "final_answer", {"answer": item[0]}, f"call_final_{n}_{j}"
        else:
            name, args, cid = item
        calls.append({"id": cid, "type": "function",
                      "function": {"name": name, "arguments": json.dumps(args)}})
    return {
        "id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1_700_000_000 + n,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": None,
                     "message": {"role": "assistant", "content": None, "tool_calls": calls}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


script = iter(enumerate(_common.SCRIPT))
received: list[dict] = []  # the request bodies, to check what the agent sent the model


class ScriptedChatCompletions(BaseHTTPRequestHandler):
    """POST /v1/chat/completions: the next scripted response; anything else is a 404."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/v1/chat/completions":
            self.send_error(404, f"not scripted: {self.path}")
            return
        received.append(body)
        n, response = next(script)
        data = json.dumps(completion(response, n)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), ScriptedChatCompletions)
threading.Thread(target=server.serve_forever, daemon=True).start()
model = OpenAIServerModel(model_id="gpt-4o-mini", api_base=f"http://127.0.0.1:{server.server_port}/v1",
                          api_key="not-a-key", client_kwargs={"max_retries": 0})
agent = ToolCallingAgent(tools=[get_weather, get_time, convert_currency], model=model,
                         name="travel_assistant", max_steps=6)

try:
    for i, (prompt, _) in enumerate(_common.TURNS):
        with using_session(CONV_ID):
            out = agent.run(prompt, reset=i == 0)
        print("turn output:", out)
finally:
    server.shutdown()
    server.server_close()
provider.force_flush()
assert next(script, None) is None, "the agent made fewer model calls than scripted"
assert len(received) == len(_common.SCRIPT)
assert all({t["function"]["name"] for t in body["tools"]} >= {"get_weather", "final_answer"}
           for body in received)
# The failing tool's error went back to the model (the run went on): turn 2's second request.
assert "FX service unavailable" in json.dumps(received[4]["messages"])

expected = {
    "framework": "smolagents",
    "library_versions": _common.versions(
        "smolagents", "openinference-instrumentation-smolagents", "openinference-instrumentation",
        "openai", "opentelemetry-sdk",
    ),
    "conversation_id": CONV_ID,
    "turns": _common.expected_turns(),
    "internal_calls": "every turn ends with smolagents' final_answer tool call (its way to "
                      "answer; a TOOL span `FinalAnswerTool`, requested on the LLM span): "
                      "internal, not a chosen tool, so not in turns[].calls",
    "notes": (
        "smolagents' own OpenAIServerModel (= OpenAIModel) against a scripted OpenAI "
        "chat-completions server on 127.0.0.1 run by the script; a text answer is a "
        "final_answer tool call. Conversation = openinference using_session(CONV_ID) around "
        "each run, agent.run(reset=False) after the first turn. A raising tool is reported to "
        "the model as an error observation and the run continues. Turn 1 step 0 = two tool "
        "calls in one message. Each model call is an LLM span (OpenAIModel.generate) whose "
        "llm.output_messages carry the requested calls with their ids; the TOOL spans carry no "
        "call id and their input.value is the envelope {\"args\": [], "
        "\"sanitize_inputs_outputs\": true, \"kwargs\": {...}}."
    ),
}
_common.write_otlp(HERE, exporter.get_finished_spans())
_common.write_expected(HERE, expected)
print("spans:", len(exporter.get_finished_spans()))
