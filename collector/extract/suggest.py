"""What `tooltrail extract` tells the user of a framework no convention knows: the spans that look
like tool executions but matched none, their attributes, and a conventions-file entry guessed
from them (docs/conventions.md, "Conventions files"); and, when tool spans did match but none
carries its arguments, that the instrumentation did not export them.

A span is tool-like when its name, or an attribute's key or short value, mentions `tool`; failing
any such span in the request, when an attribute holds a JSON object (an input). Spans a
convention claims, model and agent spans, messaging spans (OTel messaging attributes: a message's
transport, as AutoGen's agent runtime traces each team message with it as JSON), and every span
of an instrumentation scope that also emitted a claimed tool span (its framework is known: its
other spans are its plumbing) are never candidates. The entry is a guess to start from, in the
format `conventions.parse` reads.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tooltrail.collector.extract.conventions import Claims, conventions_for, skipped
from tooltrail.collector.extract.decoding import decode, unknown_arguments
from tooltrail.collector.extract.fields import ADAPTERS, arguments_of
from tooltrail.collector.extract.otlp import BadSpan, SpanView, iter_spans, span_view
from tooltrail.collector.extract.requests import is_llm_span
from tooltrail.collector.extract.traces import NOT_CONVERSATION_KEYS, is_agent_span, key_names
from tooltrail.collector.model import ToolCall

TOOL = re.compile(r"tool", re.IGNORECASE)
SHORT = 64  # characters of a value that may say what a span is (`acme.kind: tool`)
EXAMPLE = 40  # characters of an example value shown
MAX_ATTRIBUTES = 24  # attributes listed per group
# `tool` as a word, then a separator, then the tool's name: `acme.tool.NAME`, `execute_tool NAME`
TOOL_PREFIX = re.compile(r"(?<![A-Za-z])tools?(?![A-Za-z])[.:/ ]+", re.IGNORECASE)
SEPARATORS = ".:/ "
KEY_LIKE = re.compile(r"(?:^|[._-])(session|conversation|thread|chat)(?:[._-]?id)?$",
                      re.IGNORECASE)
NOT_KEYS = frozenset({"thread.id", "thread.name", *NOT_CONVERSATION_KEYS})  # OS threads
ARGUMENT_HINTS = ("arg", "input", "param", "request")
RESULT_HINTS = ("out", "result", "response", "return")
# single-key wrappers around the value itself, unwrapped with a `path:`
ARGUMENT_WRAPPERS = frozenset({"kwargs", "args", "arguments", "input", "inputs", "params",
                               "parameters"})
RESULT_WRAPPERS = frozenset({"value", "result", "output", "response", "data", "content",
                             "return", "return_value"})
CALL_ID_RANK = {"toolcallid": 3, "callid": 3, "call": 3, "toolid": 2, "invocationid": 2,
                "id": 1}
TOOL_NAME_RANK = {"toolname": 3, "functionname": 2, "tool": 2, "function": 1}
GENERIC_SCOPE_WORDS = frozenset({"opentelemetry", "instrumentation", "io", "com", "org", "net",
                                 "dev", "github", "otel"})
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-/]*$")
YAML_WORDS = frozenset({"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"})
# OTel messaging semantic conventions: a span with one sends, receives or processes a message
MESSAGING_KEYS = ("messaging.operation", "messaging.operation.type", "messaging.operation.name",
                  "messaging.system")


@dataclass(slots=True)
class _Group:
    """The candidate spans of one instrumentation scope."""

    scope: str
    spans: list[SpanView] = field(default_factory=list)


def _norm(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower())


def _last(key: str) -> str:
    return _norm(key.rsplit(".", 1)[-1])


def _object(value: Any) -> dict[str, Any] | None:
    """The JSON object an attribute holds (a kvlist, or text of a JSON object), if any."""
    if isinstance(value, str) and value.lstrip()[:1] != "{":
        return None
    decoded, _ = decode(value)
    return decoded if isinstance(decoded, dict) else None


def _mentions_tool(span: SpanView) -> bool:
    if TOOL.search(span.name):
        return True
    for key, value in span.attributes.items():
        scalar = isinstance(value, str | int | float) and not isinstance(value, bool)
        if TOOL.search(key) and scalar and not str(value).lstrip().startswith("["):
            return True  # a list under a `tools` key is definitions, not a call
        if isinstance(value, str) and len(value) <= SHORT and TOOL.search(value):
            return True
    return False


def _has_object(span: SpanView) -> bool:
    return any(_object(v) is not None for v in span.attributes.values())


def _groups(views: Sequence[SpanView], claimed: set[tuple[str, str]]) -> list[_Group]:
    known_scopes = {v.scope for v in views if (v.trace_id, v.span_id) in claimed}
    strong: dict[str, _Group] = {}
    weak: dict[str, _Group] = {}
    for view in views:
        if ((view.trace_id, view.span_id) in claimed or view.scope in known_scopes
                or is_llm_span(view) or is_agent_span(view) or skipped(view) is not None
                or any(key in view.attributes for key in MESSAGING_KEYS)):
            continue
        if _mentions_tool(view):
            strong.setdefault(view.scope, _Group(view.scope)).spans.append(view)
        elif _has_object(view):
            weak.setdefault(view.scope, _Group(view.scope)).spans.append(view)
    chosen = strong or weak  # JSON inputs alone count only where nothing mentions `tool`
    return sorted(chosen.values(), key=lambda g: (-len(g.spans), g.scope))


def _example(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    text = " ".join(text.split())
    return text if len(text) <= EXAMPLE else text[:EXAMPLE - 1] + "…"


def _attributes(group: _Group) -> list[dict[str, Any]]:
    seen: dict[str, list[Any]] = {}
    for span in group.spans:
        for key, value in span.attributes.items():
            seen.setdefault(key, []).append(value)
    rows = [{"key": k, "spans": len(v), "example": _example(v[0])} for k, v in seen.items()]
    return sorted(rows, key=lambda r: (-r["spans"], r["key"]))


def _on_all(group: _Group, key: str) -> bool:
    return all(s.attributes.get(key) is not None for s in group.spans)


def _values(group: _Group, key: str) -> list[Any]:
    return [s.attributes[key] for s in group.spans if s.attributes.get(key) is not None]


def _wrapper(values: list[Any], names: frozenset[str], objects_only: bool) -> str | None:
    """The one key of a single-key object every value is, when it is a known wrapper."""
    keys = set()
    for value in values:
        obj = _object(value)
        if obj is None or len(obj) != 1:
            return None
        (key, inner), = obj.items()
        if objects_only and _object(inner) is None:
            return None
        keys.add(key)
    return keys.pop() if len(keys) == 1 and keys <= names else None


def _source(key: str, path: str | None) -> str:
    return f"{{attribute: {_q(key)}, path: {_q(path)}}}" if path else _q(key)


def _q(text: str) -> str:
    """A YAML scalar for `text`: as is when plain, else single-quoted."""
    if IDENTIFIER.match(text) and text.lower() not in YAML_WORDS:
        return text
    return "'" + text.replace("'", "''") + "'"


def _name_pattern(names: list[str]) -> str | None:
    """A span-name pattern whose group 1 is the tool's name, when the names have one."""
    distinct = sorted(set(names))
    prefixes = set()
    for name in distinct:
        found = [m for m in TOOL_PREFIX.finditer(name) if m.end() < len(name)]
        if not found:
            break
        prefixes.add(name[:found[-1].end()])
    else:
        if len(prefixes) == 1:
            return "^" + re.escape(prefixes.pop()) + "(.+)$"
    if len(distinct) > 1:
        first, last = distinct[0], distinct[-1]  # sorted: their common prefix is everyone's
        pairs = enumerate(zip(first, last, strict=False))
        size = next((i for i, (a, b) in pairs if a != b), len(first))
        common = first[:size]
        cut = max(common.rfind(c) for c in SEPARATORS)
        if cut >= 0:
            return "^" + re.escape(common[:cut + 1]) + "(.+)$"
    return None


def _convention_name(group: _Group, taken: set[str]) -> str:
    words = [w for w in re.split(r"[^A-Za-z0-9]+", group.scope.lower())
             if w and w not in GENERIC_SCOPE_WORDS]
    if not words:
        words = [w for w in re.split(r"[^A-Za-z0-9]+", group.spans[0].name.lower()) if w]
    base = words[0] if words and words[0][:1].isalpha() else "my_framework"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def _best(keys: list[str], rank: dict[str, int], group: _Group) -> str | None:
    """The best-ranked key (by its normalized last segments) with short scalar values."""
    scored = []
    for key in keys:
        values = _values(group, key)
        if not values or not all(isinstance(v, str | int) and len(str(v)) <= 256
                                 for v in values):
            continue
        norm = _norm(".".join(key.split(".")[-2:]))
        score = max((r for suffix, r in rank.items() if norm.endswith(suffix)), default=0)
        if score:
            scored.append((-score, -len(values), key))
    return min(scored)[2] if scored else None


def _conversation_key(group: _Group, views: Sequence[SpanView], known: set[str]) -> str | None:
    traces = {s.trace_id for s in group.spans}
    for spans in (group.spans, [v for v in views if v.trace_id in traces]):
        keys = sorted({k for s in spans for k, v in s.attributes.items()
                       if KEY_LIKE.search(k) and k not in known and k not in NOT_KEYS
                       and isinstance(v, str | int) and str(v).strip()})
        if keys:
            return keys[0]
    return None


def _entry(group: _Group, views: Sequence[SpanView], known: set[str], taken: set[str]) -> str:
    """One conventions-file entry (its lines under `conventions:`) guessed from a group."""
    keys = [row["key"] for row in _attributes(group)]
    objects = [k for k in keys if all(_object(v) is not None for v in _values(group, k))
               and all(ADAPTERS["not_schema"](v) is not None for v in _values(group, k))]
    arguments = next((k for k in objects if any(h in _last(k) for h in ARGUMENT_HINTS)), None)
    arguments = arguments or next(
        (k for k in objects if not any(h in _last(k) for h in RESULT_HINTS)), None)
    result = next((k for k in keys if k != arguments
                   and any(h in _last(k) for h in RESULT_HINTS)), None)
    plain = [k for k in keys if k not in (arguments, result) and k not in NOT_KEYS
             and not KEY_LIKE.search(k)]
    call_id = _best(plain, CALL_ID_RANK, group)
    if call_id is not None and len(group.spans) > 1 and len(set(map(str, _values(
            group, call_id)))) == 1:
        call_id = None  # one value on every call is no call id
    name_key = _best([k for k in plain if k != call_id], TOOL_NAME_RANK, group)
    pattern = _name_pattern([s.name for s in group.spans])

    match: list[str] = []
    names = {s.name for s in group.spans}
    if pattern is not None:
        match.append(f"span_name: {_q(pattern)}")
    elif len(names) == 1:
        match.append(f"span_name_is: {_q(names.pop())}")
    kinds = [k for k in keys if _on_all(group, k) and len({str(v) for v in _values(group, k)}) == 1
             and isinstance(group.spans[0].attributes[k], str)
             and len(group.spans[0].attributes[k]) <= SHORT
             and TOOL.search(group.spans[0].attributes[k])]
    if kinds:
        match.append(f"attributes: {{{_q(kinds[0])}: {_q(group.spans[0].attributes[kinds[0]])}}}")
    present = next((k for k in (arguments, result, name_key) if k and _on_all(group, k)), None)
    if present is not None:
        match.append(f"has_attributes: [{_q(present)}]")
    if not match:
        match.append(f"scope: {_q(group.scope)}")

    lines = [f"  - name: {_convention_name(group, taken)}",
             "    match: {" + ", ".join(match) + "}"]
    if name_key is not None:
        lines.append(f"    tool_name: {_q(name_key)}")
    elif pattern is not None:
        lines[-1] += "  # group 1 is the tool name"
    else:
        lines.append("    tool_name: {span_name: '^(.+)$'}  # the span's name; no attribute "
                     "names the tool")
    if arguments is not None:
        path = _wrapper(_values(group, arguments), ARGUMENT_WRAPPERS, objects_only=True)
        lines.append(f"    arguments: {_source(arguments, path)}")
    if result is not None:
        path = _wrapper(_values(group, result), RESULT_WRAPPERS, objects_only=False)
        lines.append(f"    result: {_source(result, path)}")
    if call_id is not None:
        lines.append(f"    call_id: {_q(call_id)}")
    key = _conversation_key(group, views, known)
    if key is not None:
        lines.append(f"    conversation_key: {_q(key)}")
    return "\n".join(lines)


def _no_arguments(views: Sequence[SpanView], claim: Claims, calls: Sequence[ToolCall]) -> (
        str | None):
    """One line when tool spans matched but none carries arguments, nor does any request."""
    names: dict[str, int] = {}
    for view in views:
        convention = claim(view)
        if convention is None or skipped(view) is not None:
            continue
        if arguments_of(view, convention) is not None:
            return None
        names[convention.name] = names.get(convention.name, 0) + 1
    if not names or any(not unknown_arguments(c.arguments) for c in calls):
        return None
    which = ", ".join(f"{n} {name}" for name, n in names.items())
    return (f"arguments: not exported (none on the tool spans: {which}); turn on the "
            "instrumentation's content capture: README.md \"Turning on tool-argument capture\", "
            "docs/conventions.md \"Frameworks\" (content sent as OTel log events comes with "
            "the logs, not in this file)")


def suggestion(
    request: ExportTraceServiceRequest, calls: Sequence[ToolCall], conventions_text: str,
    conversation_keys: Sequence[str],
) -> dict[str, Any]:
    """`groups` (per instrumentation scope: its tool-like spans no convention matched, their
    names and attributes), `entry` (a conventions file guessed from them, or None), and
    `no_arguments` (the line saying tool spans carry no arguments, or None)."""
    claim = Claims(conventions_for(conventions_text))
    views: list[SpanView] = []
    for span, resource, scope in iter_spans(request):
        try:
            views.append(span_view(span, resource, scope))
        except BadSpan:
            continue  # rejected, and reported as such, by extraction
    claimed = {(v.trace_id, v.span_id) for v in views if claim(v)}
    groups = _groups(views, claimed)
    known = set(key_names(tuple(conversation_keys)))
    taken: set[str] = set()
    entries = [_entry(g, views, known, taken) for g in groups]
    return {
        "groups": [{"scope": g.scope, "spans": len(g.spans),
                    "span_names": sorted({s.name for s in g.spans}),
                    "attributes": _attributes(g)} for g in groups],
        "entry": "conventions:\n" + "\n".join(entries) + "\n" if entries else None,
        "no_arguments": _no_arguments(views, claim, calls),
    }


def render_suggestion(report: dict[str, Any]) -> list[str]:
    """The suggestion as text lines; the entry unindented, to save as a file as it stands."""
    lines: list[str] = [""] if report["no_arguments"] or report["groups"] else []
    if report["no_arguments"]:
        lines.append(report["no_arguments"])
    for group in report["groups"]:
        names = ", ".join(group["span_names"][:4]) + (
            ", …" if len(group["span_names"]) > 4 else "")
        lines += [f"tool-like spans no convention matched: {group['spans']} of scope "
                  f"{group['scope']!r} ({names})",
                  f"  {'ATTRIBUTE':34}  {'SPANS':5}  EXAMPLE"]
        rows = group["attributes"]
        lines += [f"  {r['key'][:34]:34}  {r['spans']:5}  {r['example']}"
                  for r in rows[:MAX_ATTRIBUTES]]
        if len(rows) > MAX_ATTRIBUTES:
            lines.append(f"  … {len(rows) - MAX_ATTRIBUTES} more (--json lists them all)")
    if report["entry"]:
        lines += ["a conventions file to start from (a guess: check it, save it as FILE, and "
                  "run `tooltrail extract --conventions FILE` again):", "",
                  *report["entry"].splitlines(), ""]
    return lines
