"""A2A Tasks carrying ArkSim's tool-call-capture extension → a Batch (seed 000, exactly).

- Tool calls are read from `Task.artifacts[*].metadata["<URI>/tool_calls"]`, and only on
  artifacts that list `<URI>` in their `extensions`; `Message.parts` (DataParts included) are
  never read.
- An entry without a string `name`, or whose `arguments` is not a JSON object, is skipped and
  counted (`Batch.unextracted`: the ingest-error log and the answer say which and why);
  `id` defaults to `""`, `arguments` to `{}`; a non-string `result` or `error` is
  JSON-serialised (`explicit.as_text`).
- A stream: each `TaskArtifactUpdateEvent` adds its calls as it arrives; the final `Task`
  snapshot clears what its task accumulated and re-reads its artifacts (authoritative);
  `TaskStatusUpdateEvent`s and `Message`s change nothing.
- Another version of the URI (`…/tool-call-capture/v2`) is reported, never read as v1.

Each task is one turn (`a2a:{conversation}:{task id}`); its conversation is the task's
`contextId` unless the caller names one. Input: the JSON of the A2A types (v1 protobuf JSON,
camelCase or snake_case; v0.3 objects with `kind`), one object, a JSON array or JSON Lines,
bare, wrapped as `StreamResponse` (`{"task"|"artifactUpdate"|"statusUpdate"|"message": …}`),
or as the `result` of JSON-RPC responses (a dumped stream).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tooltrail.collector.capture import body as body_json
from tooltrail.collector.capture.explicit import as_text, content_digest
from tooltrail.collector.errors import InvalidPayload
from tooltrail.collector.extract.traces import derived_key
from tooltrail.collector.model import KEY_FROM_ROOT, Batch, RejectedSpan, ToolCall, TraceInfo
from tooltrail.collector.projects import DEFAULT_PROJECT

SOURCE = "a2a"
URI = "https://arksim.arklex.ai/a2a/tool-call-capture/v1"
METADATA_KEY = f"{URI}/tool_calls"
URI_FAMILY = "https://arksim.arklex.ai/a2a/tool-call-capture/"
TURN_PREFIX = "a2a:"
TICK_NS = 1_000
WRAPPERS = {"task": "task", "artifactUpdate": "artifact", "artifact_update": "artifact",
            "statusUpdate": "status", "status_update": "status", "message": "message"}
KINDS = {"task": "task", "artifact-update": "artifact", "status-update": "status",
         "message": "message"}


class BadTask(InvalidPayload):
    """The body is not A2A Tasks or stream events; the message says where."""


@dataclass(frozen=True, slots=True)
class Skipped:
    """A tool-call entry (or a whole artifact) not read, and why."""

    task: str
    artifact: str
    entry: int | None
    reason: str


@dataclass(slots=True)
class _Task:
    conversation: str
    start_ns: int
    calls: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class A2aReading:
    """The Batch, and what was not read (entries, artifacts, versions), for the answer."""

    batch: Batch
    tasks: int
    skipped: tuple[Skipped, ...]


def _get(obj: dict[str, Any], camel: str, snake: str) -> Any:
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


def parse_stream(body: bytes | str) -> list[dict[str, Any]]:
    """The JSON objects of a body: one object, a JSON array, or JSON Lines."""
    try:
        text = body.decode("utf-8") if isinstance(body, bytes) else body
    except UnicodeDecodeError as exc:
        raise BadTask(f"the body must be UTF-8 JSON: {exc}") from exc
    items: list[tuple[str, Any]]
    try:
        whole = body_json.loads(text)
    except ValueError:
        items = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    items.append((f"line {n}", body_json.loads(line)))
                except ValueError as exc:
                    raise BadTask(f"line {n}: not JSON: {exc}") from exc
    else:
        items = ([(f"item {i}", v) for i, v in enumerate(whole)] if isinstance(whole, list)
                 else [("body", whole)])
    out = []
    for where, value in items:
        if not isinstance(value, dict):
            raise BadTask(f"{where}: an A2A Task or stream event must be a JSON object")
        out.append({"where": where, "value": value})
    if not out:
        raise BadTask("the body holds no A2A Task")
    return out


def _kind(value: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(task | artifact | status | message, the event itself)."""
    if "jsonrpc" in value and isinstance(value.get("result"), dict):  # a JSON-RPC response
        value = value["result"]
    if len(value) == 1:
        ((key, inner),) = value.items()
        if key in WRAPPERS and isinstance(inner, dict):
            return WRAPPERS[key], inner
    kind = value.get("kind")
    if isinstance(kind, str) and kind in KINDS:
        return KINDS[kind], value
    if "artifact" in value:
        return "artifact", value
    if "messageId" in value or "message_id" in value or "parts" in value:
        return "message", value
    if "artifacts" in value or "id" in value:
        return "task", value
    if "status" in value:
        return "status", value
    raise BadTask("not an A2A Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent or Message")


def _timestamp_ns(task: dict[str, Any]) -> int | None:
    status = task.get("status")
    stamp = status.get("timestamp") if isinstance(status, dict) else None
    if not isinstance(stamp, str):
        return None
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1e9)
    except ValueError:
        return None


class _Reader:
    def __init__(self, conversation: str | None, now_ns: int, project: str) -> None:
        self.conversation = conversation
        self.now_ns = now_ns
        self.project = project
        self.tasks: dict[str, _Task] = {}

    def _task(self, task_id: str, context: Any, where: str, start: int | None) -> _Task:
        found = self.tasks.get(task_id)
        if found is not None:
            if start is not None:
                found.start_ns = start
            return found
        conversation = self.conversation or (context if isinstance(context, str) else "")
        if not conversation.strip():
            raise BadTask(f"{where}: the task has no contextId; name the conversation "
                          "(?conversation=KEY)")
        start = start if start is not None else self.now_ns + len(self.tasks) * TICK_NS
        found = self.tasks[task_id] = _Task(conversation, start)
        return found

    def add(self, where: str, value: dict[str, Any]) -> None:
        try:
            kind, event = _kind(value)
        except BadTask as exc:
            raise BadTask(f"{where}: {exc}") from exc
        if kind in ("status", "message"):  # no-ops: status changes nothing, messages unread
            return
        if kind == "artifact":
            task_id = _get(event, "taskId", "task_id")
            artifact = event.get("artifact")
            if not isinstance(task_id, str) or not task_id or not isinstance(artifact, dict):
                raise BadTask(f"{where}: a TaskArtifactUpdateEvent needs taskId and artifact")
            task = self._task(task_id, _get(event, "contextId", "context_id"), where, None)
            self._artifact(task, task_id, artifact, where)
            return
        task_id = event.get("id")
        if not isinstance(task_id, str) or not task_id:
            raise BadTask(f"{where}: a Task needs an id")
        context = _get(event, "contextId", "context_id")
        task = self._task(task_id, context, where, _timestamp_ns(event))
        task.calls.clear()  # the snapshot is authoritative over what was streamed
        task.skipped.clear()
        if not self.conversation and isinstance(context, str) and context.strip():
            task.conversation = context
        artifacts = event.get("artifacts") or []
        if not isinstance(artifacts, list):
            raise BadTask(f"{where}: Task.artifacts must be a list")
        for n, artifact in enumerate(artifacts):
            if not isinstance(artifact, dict):
                raise BadTask(f"{where}: Task.artifacts[{n}] must be an object")
            self._artifact(task, task_id, artifact, f"{where} artifacts[{n}]")

    def _artifact(self, task: _Task, task_id: str, artifact: dict[str, Any], where: str) -> None:
        name = str(_get(artifact, "artifactId", "artifact_id") or where)
        extensions = artifact.get("extensions") or []
        metadata = artifact.get("metadata") or {}
        if not isinstance(extensions, list) or not isinstance(metadata, dict):
            raise BadTask(f"{where}: artifact extensions must be a list, metadata an object")
        others = sorted({u for u in [*extensions, *(k.rsplit("/", 1)[0] for k in metadata)]
                         if isinstance(u, str) and u.startswith(URI_FAMILY) and u != URI})
        for uri in others:
            task.skipped.append(Skipped(task_id, name, None,
                                        f"unsupported tool-call-capture version {uri}: not read"))
        if URI not in extensions:
            if METADATA_KEY in metadata:
                task.skipped.append(Skipped(task_id, name, None, "tool_calls in metadata, but "
                                            "the artifact does not list the extension: not read"))
            return
        entries = metadata.get(METADATA_KEY)
        if entries is None:
            return
        if not isinstance(entries, list):
            task.skipped.append(Skipped(task_id, name, None, "tool_calls is not a list"))
            return
        for i, entry in enumerate(entries):
            reason = _entry_problem(entry)
            if reason is not None:
                task.skipped.append(Skipped(task_id, name, i, reason))
                continue
            task.calls.append(entry)

    def finish(self) -> A2aReading:
        calls: list[ToolCall] = []
        infos: list[TraceInfo] = []
        skipped: list[Skipped] = []
        for task_id, task in self.tasks.items():
            turn = derived_key(f"{TURN_PREFIX}{self.project}:{task.conversation}:{task_id}")
            seen: dict[str, int] = {}
            for i, entry in enumerate(task.calls):
                calls.append(_call(turn, entry, task.start_ns + i * TICK_NS, seen))
            infos.append(TraceInfo(
                trace_id=turn, turn_key=turn, conversation_key=task.conversation,
                key_rank=KEY_FROM_ROOT, service=None, agents=frozenset(),
                start_ns=task.start_ns,
                end_ns=task.start_ns + max(len(task.calls), 1) * TICK_NS, has_agent_root=False,
                attributes={"a2a.task_id": task_id}, project=self.project,
            ))
            skipped.extend(task.skipped)
        unextracted = tuple(
            RejectedSpan(s.task, f"{s.artifact}#{s.entry}", "tool_calls", s.reason)
            for s in skipped)
        batch = Batch(tuple(calls), tuple(infos), unextracted=unextracted,
                      span_count=len(calls) + len(skipped))
        return A2aReading(batch, len(self.tasks), tuple(skipped))


def _entry_problem(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return "entry is not a JSON object"
    if not isinstance(entry.get("name"), str):
        return "no string name"
    arguments = entry.get("arguments")
    if arguments is not None and not isinstance(arguments, dict):
        return "arguments is not a JSON object"
    call_id = entry.get("id")
    if call_id is not None and not isinstance(call_id, str):
        return "id is not a string"
    return None


def _call(turn: str, entry: dict[str, Any], start: int, seen: dict[str, int]) -> ToolCall:
    call_id = entry.get("id") or ""
    arguments = entry.get("arguments") or {}
    result, error = as_text(entry.get("result")), as_text(entry.get("error"))
    digest = content_digest([call_id, entry["name"], arguments, result, error])
    n = seen[digest] = seen.get(digest, -1) + 1
    return ToolCall(
        trace_id=turn, span_id=f"a2a:{digest[:32]}#{n}", parent_span_id=None,
        name=entry["name"], call_id=call_id or None, arguments=arguments, arguments_raw=None,
        result=result, error=error or None, status="error" if error else "ok", start_ns=start,
        end_ns=start + 1, convention=SOURCE, source=SOURCE,
    )


def read_tasks(body: bytes | str, *, conversation: str | None = None,
               now_ns: int = 0, project: str = DEFAULT_PROJECT) -> A2aReading:
    """A2A Tasks / stream events → Batch of conversations in `project` (`now_ns` times tasks
    whose status has no timestamp)."""
    reader = _Reader(conversation, now_ns, project)
    for item in parse_stream(body):
        reader.add(item["where"], item["value"])
    return reader.finish()
