"""How each producer marks a span as a tool execution (docs/conventions.md, "Is this span a tool
execution?", and "Conventions files"). Each convention is one entry; the first whose `match`
holds claims the span.

The built-in entries are `builtin_conventions.yaml`, in the same format as a user's file
(`TOOLTRAIL_CONVENTIONS`, `--conventions FILE`); a user's entries are tried before them and may
also say where the call's fields are (an attribute, or a JSON path inside one). A user's file is
carried as its text (`ExtractOptions.conventions`), so that the ingest process pool children and
a reextract job compile the same entries the service validated at start.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from tooltrail.collector.extract.decoding import decode
from tooltrail.collector.extract.otlp import SpanView

BUILTIN_FILE = "builtin_conventions.yaml"
CONVENTIONS_ENV = "TOOLTRAIL_CONVENTIONS"  # the `conventions` setting (collector.config)
FIELDS = ("tool_name", "arguments", "result", "call_id", "error", "conversation_key")
MATCH_KEYS = ("span_name", "span_name_is", "span_name_not", "attributes", "has_attributes",
              "scope")
ENTRY_KEYS = ("name", "match", *FIELDS, "name_from_span", "name_is_span_name")
MAX_ENTRIES = 256


class ConventionsError(ValueError):
    """A conventions file that cannot be used as written; fixing the file is the only remedy."""


@dataclass(frozen=True, slots=True)
class Source:
    """Where one field is: an attribute's value, or the value at `path` inside its JSON."""

    attribute: str
    path: tuple[str | int, ...] = ()

    def read(self, attributes: dict[str, Any]) -> Any:
        value = attributes.get(self.attribute)
        if value is None or not self.path:
            return value
        current, _ = decode(value)
        for step in self.path:
            if isinstance(current, dict) and isinstance(step, str):
                current = current.get(step)
            elif (isinstance(current, list) and isinstance(step, int)
                  and -len(current) <= step < len(current)):
                current = current[step]
            else:
                return None
            if isinstance(current, str) and current[:1] in "{[":
                current, _ = decode(current)
        return current


@dataclass(frozen=True, slots=True)
class Convention:
    """A family of producers that encode tool calls the same way."""

    name: str
    match: tuple[Match, ...]  # any one holding claims the span (`matches`)
    span_name: re.Pattern[str] | None = None  # group 1 of a match is the tool name
    name_is_tool: bool = False  # OpenInference: the span name is the tool's name
    # a user's entry: where its fields are, read before the built-in `fields` lists
    fields: tuple[tuple[str, Source], ...] = ()
    name_pattern: re.Pattern[str] | None = None  # tool_name: {span_name: REGEX}, tried first
    conversation_key: str | None = None

    def source(self, field: str) -> Source | None:
        for name, where in self.fields:
            if name == field:
                return where
        return None


def _fail(where: str, message: str) -> ConventionsError:
    return ConventionsError(f"{where}: {message}")


def _regex(value: Any, where: str) -> re.Pattern[str]:
    if not isinstance(value, str) or not value:
        raise _fail(where, "must be a regular expression (a non-empty string)")
    try:
        return re.compile(value)
    except re.error as exc:
        raise _fail(where, f"is not a valid regular expression ({exc})") from None


@dataclass(frozen=True, slots=True)
class Match:
    """One `match` mapping: every test it gives must hold. Data, read by `matches` in one
    loop per span (a chain of closures per entry costs calls on every span of every request)."""

    equals: tuple[tuple[str, Any], ...] = ()
    present: tuple[str, ...] = ()
    name_is: str | None = None
    name: re.Pattern[str] | None = None
    name_not: re.Pattern[str] | None = None
    scope: str | None = None


def matches(alternatives: tuple[Match, ...], span: SpanView) -> bool:
    """True when one of the alternatives holds for the span."""
    attributes = span.attributes
    for m in alternatives:
        if m.scope is not None and span.scope != m.scope:
            continue
        if m.name_is is not None and span.name != m.name_is:
            continue
        for key, value in m.equals:
            if attributes.get(key) != value:
                break
        else:
            for key in m.present:
                if attributes.get(key) is None:
                    break
            else:
                if m.name is not None and m.name.search(span.name) is None:
                    continue
                if m.name_not is not None and m.name_not.search(span.name) is not None:
                    continue
                return True
    return False


def _one_match(spec: Any, where: str) -> Match:
    if not isinstance(spec, dict) or not spec:
        raise _fail(where, "must be a mapping of " + ", ".join(MATCH_KEYS))
    unknown = sorted(set(spec) - set(MATCH_KEYS))
    if unknown:
        raise _fail(f"{where}.{unknown[0]}", "unknown key (known: " + ", ".join(MATCH_KEYS) + ")")
    equal = spec.get("attributes") or {}
    if not isinstance(equal, dict) or not all(isinstance(k, str) for k in equal):
        raise _fail(f"{where}.attributes", "must map attribute names to the value they equal")
    for key, value in equal.items():
        if not isinstance(value, str | int | float | bool):
            raise _fail(f"{where}.attributes.{key}", "must be a string, number or boolean")
    present = spec.get("has_attributes") or []
    if not isinstance(present, list) or not all(isinstance(k, str) and k for k in present):
        raise _fail(f"{where}.has_attributes", "must be a list of attribute names")
    exact = spec.get("span_name_is")
    if exact is not None and not isinstance(exact, str):
        raise _fail(f"{where}.span_name_is", "must be a string")
    scope = spec.get("scope")  # the instrumentation scope's name, exactly
    if "scope" in spec and (not isinstance(scope, str) or not scope):
        raise _fail(f"{where}.scope", "must be an instrumentation scope's name")
    match = Match(
        equals=tuple(equal.items()), present=tuple(present), name_is=exact,
        name=_regex(spec["span_name"], f"{where}.span_name") if "span_name" in spec else None,
        name_not=(_regex(spec["span_name_not"], f"{where}.span_name_not")
                  if "span_name_not" in spec else None),
        scope=scope)
    if match == Match():
        raise _fail(where, "matches every span; give span_name, attributes, has_attributes "
                           "or scope")
    return match


def _match(spec: Any, where: str) -> tuple[Match, ...]:
    """A `match`: a mapping (all of it holds) or a list of mappings (any one holds)."""
    if isinstance(spec, list):
        if not spec:
            raise _fail(where, "an empty list matches nothing")
        return tuple(_one_match(s, f"{where}[{i}]") for i, s in enumerate(spec))
    return (_one_match(spec, where),)


def _path(value: Any, where: str) -> tuple[str | int, ...]:
    """`a.b.0.c`, or a list of keys and indexes."""
    if isinstance(value, str) and value:
        return tuple(int(p) if p.lstrip("-").isdigit() else p for p in value.split("."))
    if isinstance(value, list) and value and all(isinstance(p, str | int) for p in value):
        return tuple(value)
    raise _fail(where, "must be a dotted path (`input.args`) or a list of keys and indexes")


def _source(spec: Any, where: str) -> Source:
    if isinstance(spec, str) and spec:
        return Source(spec)
    if isinstance(spec, dict) and isinstance(spec.get("attribute"), str) and spec["attribute"]:
        unknown = sorted(set(spec) - {"attribute", "path"})
        if unknown:
            raise _fail(f"{where}.{unknown[0]}", "unknown key (known: attribute, path)")
        path = _path(spec["path"], f"{where}.path") if "path" in spec else ()
        return Source(spec["attribute"], path)
    raise _fail(where, "must be an attribute name, or {attribute: NAME, path: a.b}")


def _entry(raw: Any, index: int) -> Convention:
    label = raw.get("name") if isinstance(raw, dict) else None
    where = f"conventions[{index}]" + (f" ({label})" if isinstance(label, str) else "")
    if not isinstance(raw, dict):
        raise _fail(where, "must be a mapping")
    unknown = sorted(set(raw) - set(ENTRY_KEYS))
    if unknown:
        raise _fail(f"{where}.{unknown[0]}", "unknown key (known: " + ", ".join(ENTRY_KEYS) + ")")
    if not isinstance(label, str) or not label.strip():
        raise _fail(f"{where}.name", "is required (a non-empty string, stored with each call)")
    if "match" not in raw:
        raise _fail(f"{where}.match", "is required (how to recognise the tool span)")
    match = _match(raw["match"], f"{where}.match")
    sources: list[tuple[str, Source]] = []
    name_pattern = None
    for field in FIELDS[:-1]:
        if field not in raw:
            continue
        spec = raw[field]
        if field == "tool_name" and isinstance(spec, dict) and "span_name" in spec:
            if set(spec) != {"span_name"}:
                raise _fail(f"{where}.tool_name", "{span_name: REGEX} takes nothing else")
            name_pattern = _regex(spec["span_name"], f"{where}.tool_name.span_name")
            if name_pattern.groups < 1:
                raise _fail(f"{where}.tool_name.span_name", "needs a group: group 1 is the name")
            continue
        sources.append((field, _source(spec, f"{where}.{field}")))
    key = raw.get("conversation_key")
    if key is not None and (not isinstance(key, str) or not key):
        raise _fail(f"{where}.conversation_key", "must be an attribute name")
    span_name = raw.get("name_from_span")
    name_is = raw.get("name_is_span_name", False)
    if not isinstance(name_is, bool):
        raise _fail(f"{where}.name_is_span_name", "must be true or false")
    if name_pattern is None and "tool_name" not in raw and isinstance(raw["match"], dict):
        given = raw["match"].get("span_name")
        pattern = re.compile(given) if isinstance(given, str) else None
        if pattern is not None and pattern.groups >= 1:
            name_pattern = pattern  # the match's own group 1 names the tool
    return Convention(
        name=label.strip(), match=match,
        span_name=_regex(span_name, f"{where}.name_from_span") if span_name is not None else None,
        name_is_tool=name_is, fields=tuple(sources), name_pattern=name_pattern,
        conversation_key=key,
    )


def parse(text: str, origin: str) -> tuple[tuple[Convention, ...], dict[str, Any]]:
    """The entries of a conventions file's text, and the file's other sections; raises
    ConventionsError naming the file, the entry and the field."""
    try:
        data = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConventionsError(f"{origin}: not valid YAML{at}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict) or not isinstance(data.get("conventions", []), list):
        raise ConventionsError(f"{origin}: must be a mapping with a `conventions:` list")
    entries = data.get("conventions") or []
    if len(entries) > MAX_ENTRIES:
        raise ConventionsError(f"{origin}: {len(entries)} entries; at most {MAX_ENTRIES}")
    try:
        parsed = tuple(_entry(raw, i) for i, raw in enumerate(entries))
    except ConventionsError as exc:
        raise ConventionsError(f"{origin}: {exc}") from None
    return parsed, {k: v for k, v in data.items() if k != "conventions"}


@functools.lru_cache(maxsize=8)
def user_conventions(text: str) -> tuple[Convention, ...]:
    """A user's entries, from the file's text (`ExtractOptions.conventions`); cached per text.
    The text was validated at start, so a failure here is a bug, raised as is."""
    if not text:
        return ()
    parsed, rest = parse(text, "conventions")
    if rest:
        raise ConventionsError(f"conventions: unknown section {sorted(rest)[0]!r} (only "
                               "`conventions:` is read)")
    return parsed


def read_conventions(path: str | Path) -> str:
    """The text of a user's conventions file, validated; raises ConventionsError (one line,
    naming the file, the entry and the field) when it cannot be used."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConventionsError(f"conventions file {path}: cannot be read ({exc})") from None
    try:
        user_conventions(text)
    except ConventionsError as exc:
        message = str(exc).removeprefix("conventions: ")
        raise ConventionsError(f"conventions file {path}: {message}") from None
    return text


def given_conventions(path: str | None) -> str:
    """The text of the conventions file a command was given (`--conventions FILE`, else
    `TOOLTRAIL_CONVENTIONS`), validated; "" when none."""
    chosen = path or os.environ.get(CONVENTIONS_ENV) or None
    return read_conventions(chosen) if chosen else ""


@functools.cache
def builtin() -> tuple[tuple[Convention, ...], dict[str, Any]]:
    """The shipped entries and their shared `fields` lists."""
    text = resources.files("tooltrail.collector.extract").joinpath(BUILTIN_FILE).read_text("utf-8")
    return parse(text, BUILTIN_FILE)


CONVENTIONS: tuple[Convention, ...] = builtin()[0]
# The attributes the built-in field lists read a call's arguments and result from
# (`fields.ARGUMENT_KEYS`, `fields.RESULT_KEYS`): stored once, as the call's arguments and
# result, never again among the span attributes kept beside it (`beside`).
EXTRACTED_KEYS = frozenset(str(e["attribute"]) for e in builtin()[1]["fields"]["arguments"]) | (
    frozenset(str(k) for k in builtin()[1]["fields"]["result"]))


def beside(attributes: dict[str, Any]) -> dict[str, Any]:
    """The span attributes a call keeps: all but EXTRACTED_KEYS (the same dict when it holds
    none of them)."""
    if EXTRACTED_KEYS.isdisjoint(attributes):
        return attributes
    return {k: v for k, v in attributes.items() if k not in EXTRACTED_KEYS}

# Span names that are never a tool the agent chose, whatever their attributes say.
SKIPPED_SPANS = {
    "execute_tool (merged)": "ADK summary of parallel calls (`execute_tool (merged)`)",
}
SKIPPED_TOOL_NAMES = {"(merged tools)": "ADK summary of parallel calls (`(merged tools)`)"}


def conventions_for(text: str) -> tuple[Convention, ...]:
    """A user's entries (from its file's text), then the built-ins."""
    return (*user_conventions(text), *CONVENTIONS) if text else CONVENTIONS


def convention_keys(text: str) -> tuple[str, ...]:
    """The conversation keys a user's entries name."""
    return tuple(c.conversation_key for c in user_conventions(text) if c.conversation_key)


_SCALARS = (str, int, float, bool)  # the values a match's `attributes` may equal


class Claims:
    """Which of `conventions` claims a span as a tool execution: the first that `matches`, in
    the conventions' order (built once, for the spans of a request). Each convention is tried
    only on the spans that can hold one of its matches — an attribute with the value
    its first `attributes` test wants, or the name its `span_name_is` wants — and those with
    neither test always. Most spans are no tool span, and are ruled out by a few lookups
    instead of every test of every entry."""

    def __init__(self, conventions: Sequence[Convention]) -> None:
        self.conventions = tuple(conventions)
        by_value: dict[str, dict[Any, list[int]]] = {}
        by_name: dict[str, list[int]] = {}
        always: list[int] = []
        for i, convention in enumerate(self.conventions):
            for m in convention.match:
                if m.equals:
                    key, value = m.equals[0]
                    by_value.setdefault(key, {}).setdefault(value, []).append(i)
                elif m.name_is is not None:
                    by_name.setdefault(m.name_is, []).append(i)
                else:
                    always.append(i)
        self.by_value = {key: {v: tuple(ix) for v, ix in values.items()}
                         for key, values in by_value.items()}
        self.keys = frozenset(by_value)
        self.by_name = {name: tuple(ix) for name, ix in by_name.items()}
        self.always = tuple(always)
        # conventions whose one test is the equality `by_value` finds them by: a span found
        # so holds it (a dict lookup compares as `matches` does, with ==)
        self.sure = frozenset(
            i for i, c in enumerate(self.conventions)
            if len(c.match) == 1 and len(c.match[0].equals) == 1
            and c.match[0] == Match(equals=c.match[0].equals))

    def __call__(self, span: SpanView) -> Convention | None:
        attributes = span.attributes
        candidates: list[int] = list(self.always)
        for key in attributes.keys() & self.keys:  # the few keys a span has of them
            value = attributes[key]
            if value is not None and isinstance(value, _SCALARS):  # others equal no scalar
                found = self.by_value[key].get(value)
                if found is not None:
                    candidates.extend(found)
        found = self.by_name.get(span.name)
        if found is not None:
            candidates.extend(found)
        if not candidates:
            return None
        conventions = self.conventions
        if len(candidates) == 1 and candidates[0] in self.sure:
            return conventions[candidates[0]]
        for i in sorted(set(candidates)) if len(candidates) > 1 else candidates:
            if matches(conventions[i].match, span):
                return conventions[i]
        return None


def skipped(span: SpanView) -> str | None:
    """Why a span that looks like a tool call is a framework summary, not a call (else None)."""
    reason = SKIPPED_SPANS.get(span.name)
    if reason is None:
        reason = SKIPPED_TOOL_NAMES.get(str(span.attributes.get("gen_ai.tool.name")))
    return reason
