"""Human-in-the-loop approvals: a call that waits for the user is `pending`, a refused one
`rejected`; neither was executed (the matcher sees them as not executed, REST shows the status).

A call that needs approval shows in the turn the model requested it as a tool span with the
call's arguments and either no result or a placeholder result, and, once the user answers, as a
second tool span with the same call id in a later turn. Two ways to tell:

- the span says so (`approval_status`): Google ADK answers a `require_confirmation` tool's
  call with `{"error": "This tool call requires confirmation, please approve or reject."}`
  until the user confirms, and with `{"error": "This tool call is rejected."}` when the user
  refuses (google-adk 2.13 `tools/_confirmation_utils.py`; capture `tests/captures/adk_approval`);
- OpenInference's OpenAI Agents instrumentation: a TOOL span that ended OK with no
  `output.value` never ran to completion (it writes the output of every finished call, an
  error's too); the OpenAI Agents SDK ends the function span of a `needs_approval` call so at
  the interruption, and the resumed
  run's spans never reach the exporter under openinference-instrumentation-openai-agents 2.6.0
  (capture `tests/captures/openai_agents_approval`): the outcome is not in the trace. Under
  the OTel GenAI instrumentation the asking run's `execute_tool` span has arguments and no
  result, and the resumed run is a trace of its own rooted at `invoke_agent` **without**
  `gen_ai.conversation.id` (capture `tests/captures/openai_agents_otel_approval`);
- a later turn executes the same call id (`reconcile.settle`): an earlier span of it that has
  neither a result nor an error was the call waiting, not an execution; so was an earlier
  request that no span executed (AI SDK 7 `toolApproval`, capture `tests/captures/vercel_ai_7`:
  the asking turn has the model's request only, the approved call runs in the next turn).

An approval that never comes stays pending. The plumbing call that asks the user
(`adk_request_confirmation`) is filtered with the rest of the framework plumbing (`analyze`).
"""

from __future__ import annotations

from typing import Any

from collector.model import ToolCall

PENDING = "pending"
REJECTED = "rejected"
UNEXECUTED = frozenset({PENDING, REJECTED})

# The results frameworks give a call in place of its execution (exact texts, not guesses).
_PENDING_TEXTS = frozenset({"This tool call requires confirmation, please approve or reject."})
_REJECTED_TEXTS = frozenset({"This tool call is rejected."})


def _placeholder_text(result: Any) -> str | None:
    if isinstance(result, dict) and set(result) == {"error"} and isinstance(result["error"], str):
        return result["error"].strip()
    return None


def approval_status(result: Any) -> str | None:
    """`pending` / `rejected` when the span's result is a framework's approval placeholder."""
    text = _placeholder_text(result)
    if text in _PENDING_TEXTS:
        return PENDING
    if text in _REJECTED_TEXTS:
        return REJECTED
    return None


OPENAI_AGENTS_GENAI_SCOPE = "opentelemetry.instrumentation.genai.openai_agents"
# Only this OpenInference instrumentation is known to write every finished call's output:
# others (CrewAI's event-listener mode, a tool returning nothing) end TOOL spans of executed
# calls without `output.value`, which must stay executed.
OPENAI_AGENTS_OPENINFERENCE_SCOPE = "openinference.instrumentation.openai_agents"


def waiting_span(convention: str, scope: str, attributes: dict[str, Any], failed: bool) -> bool:
    """A tool span that ended without result and without error where the instrumentation
    writes the result of every finished call: OpenInference's OpenAI Agents instrumentation
    (`output.value`), and the OTel GenAI OpenAI Agents instrumentation with content capture
    on (arguments but no
    `gen_ai.tool.call.result`: it copies the SDK's function-span output, the SDK's text of
    whatever the tool returned)."""
    if failed:
        return False
    if convention == "openinference":
        return scope == OPENAI_AGENTS_OPENINFERENCE_SCOPE and "output.value" not in attributes
    return (scope == OPENAI_AGENTS_GENAI_SCOPE and "gen_ai.tool.call.arguments" in attributes
            and "gen_ai.tool.call.result" not in attributes)


def unexecuted(call: ToolCall) -> bool:
    """True for a pending or rejected call: the tool did not run."""
    return call.status in UNEXECUTED
