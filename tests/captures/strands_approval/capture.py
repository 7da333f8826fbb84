"""Capture: Strands Agents interrupts (human in the loop), native OpenTelemetry, default conventions.

A `BeforeToolCallEvent` hook that calls `event.interrupt(...)`, as Strands' "Interrupts" docs
show: the run stops with `stop_reason == "interrupt"` and `result.interrupts`; the user's answer
goes back as `agent([{"interruptResponse": {"interruptId": ..., "response": ...}}])`, and the
hook sets `event.cancel_tool` when the answer is no. Conversation, model and session as
`strands` (`trace_attributes={"session.id": ...}`, FileSessionManager, a scripted `Model`).

  turn 1: delete_account(alice) requested, waits      turn 2: approved → executed
  turn 3: delete_account(bob) requested, waits        turn 4: refused (cancel_tool: rejected)
  turn 5: delete_account(carol) requested, waits — no answer ever comes
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
provider, exporter = _common.setup_tracing(
    os.environ.get("CAPTURE_SERVICE", "tooltrail-capture-strands-approval"))

from strands import Agent, tool  # noqa: E402
from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry  # noqa: E402
from strands.models.model import Model  # noqa: E402
from strands.session.file_session_manager import FileSessionManager  # noqa: E402

CONV_ID = "conv-strands-approval-0001"


@tool
def delete_account(login: str) -> str:
    """Delete a user's account (needs the user's approval).

    Args:
        login: the account's login
    """
    return f"deleted {login}"


def delete(login):
    return [_common.call("delete_account", {"login": login}, f"call_del_{login}")]


SCRIPT = [
    delete("alice"), [_common.text("alice's account is deleted.")],
    delete("bob"), [_common.text("I did not delete bob's account.")],
    delete("carol"),
]


class ApprovalHook(HookProvider):
    """Strands' documented approval hook: interrupt before the tool, cancel it on a no."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.approve)

    def approve(self, event: BeforeToolCallEvent) -> None:
        if event.tool_use["name"] != "delete_account":
            return
        answer = event.interrupt("approve_delete_account", reason={"login": event.tool_use["input"]})
        if answer != "yes":
            event.cancel_tool = "the user did not approve deleting this account"


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


def answer(result, response):
    (interrupt,) = result.interrupts
    return [{"interruptResponse": {"interruptId": interrupt.id, "response": response}}]


with tempfile.TemporaryDirectory() as storage:
    agent = Agent(
        model=model,
        name="account_assistant",
        system_prompt="Manage accounts. Use tools.",
        tools=[delete_account],
        hooks=[ApprovalHook()],
        trace_attributes={"session.id": CONV_ID, "user.id": "user-1"},
        session_manager=FileSessionManager(session_id=CONV_ID, storage_dir=storage),
        callback_handler=None,
    )
    for login, response in (("alice", "yes"), ("bob", "no"), ("carol", None)):
        result = agent(f"Delete {login}'s account.")
        assert result.stop_reason == "interrupt", result.stop_reason
        if response is not None:
            result = agent(answer(result, response))
            assert result.stop_reason != "interrupt"
            print("turn output:", str(result).strip())
assert model.n == len(SCRIPT), (model.n, len(SCRIPT))
provider.force_flush()


def req(login, status):
    # requested_in_turn: false = executed (or refused) in the run after the model's request
    return {"name": "delete_account", "arguments": {"login": login}, "error": status == "rejected",
            "step": 0, "call_id": f"call_del_{login}", "status": status,
            "requested_in_turn": status == "pending"}


expected = {
    "framework": "strands-agents",
    "library_versions": _common.versions("strands-agents", "opentelemetry-sdk"),
    "otel_semconv_stability_opt_in": os.environ.get("OTEL_SEMCONV_STABILITY_OPT_IN"),
    "conversation_id": CONV_ID,
    "turns": [
        {"calls": [req("alice", "pending")]},
        {"calls": [req("alice", "ok")]},
        {"calls": [req("bob", "pending")]},
        # cancel_tool runs no tool span; its error toolResult is in the event-loop cycle's
        # gen_ai.choice event (`tool.result`), with no execute_tool span of the call.
        {"calls": [req("bob", "rejected")]},
        {"calls": [req("carol", "pending")]},
    ],
    "user_answers": {"call_del_alice": "yes", "call_del_bob": "no", "call_del_carol": None},
    "notes": (
        "BeforeToolCallEvent hook with event.interrupt(); answers as interruptResponse content "
        "in the next agent(...) call; a no sets event.cancel_tool. The last interrupt is never answered. "
        "The asking run has no tool span: the root's gen_ai.choice event (finish_reason=interrupt) "
        "names the interrupt ids v1:before_tool_call:{toolUseId}:... The refusal runs no tool span: "
        "turn 4's first cycle span's gen_ai.choice event has the toolUse and an error toolResult "
        "with the hook's cancel message."
    ),
}
_common.write_otlp(OUT, exporter.get_finished_spans())
_common.write_expected(OUT, expected)
print("spans:", len(exporter.get_finished_spans()))
