"""Suite files: a named list of expectations (docs/matching.md) with shared defaults.

    name: weather-agent                 # a slug
    defaults:                           # applied to every expectation that does not say
      match: superset                   #   match / arguments / selector itself
      arguments: ignore
      selector: {conversation: "weather-*"}
    expectations:
      - id: called-the-weather-tool     # every expectation needs an id, unique in the suite
        calls: [{name: get_weather}]
      - id: stays-quiet-on-greetings
        optional: true                  # selecting no conversation is not a failure
        ...

Every problem raises `SuiteError` naming the file and the path of the bad field, as the
expectation parser does for one expectation (`expectations[2].calls[0].name: required`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tooltrail.matcher import Expectation, InvalidExpectation, parse_expectation
from tooltrail.matcher.spec import load_text

SUITE_FIELDS = ("name", "description", "defaults", "expectations")
DEFAULT_FIELDS = ("match", "arguments", "selector")
ENTRY_FIELDS = ("optional",)  # suite-level keys of an expectation, not sent to the matcher
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class SuiteError(ValueError):
    """An invalid suite: `source` is the file, `path` the bad field ("" for the whole)."""

    def __init__(self, source: str, path: str, message: str) -> None:
        where = f"{source}: {path}" if path else source
        super().__init__(f"{where}: {message}")
        self.source = source
        self.path = path
        self.message = message


@dataclass(frozen=True, slots=True)
class Entry:
    """One expectation of a suite: its body (defaults applied, as sent to a server), parsed."""

    id: str
    body: dict[str, Any]
    expectation: Expectation
    optional: bool = False


@dataclass(frozen=True, slots=True)
class Suite:
    name: str
    description: str | None
    entries: tuple[Entry, ...]
    source: str = "<suite>"


def load_suite(path: Path) -> Suite:
    """Read and validate a suite file (YAML or JSON); raises SuiteError."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(source, "", f"cannot read the suite: {exc}") from exc
    return parse_suite_text(text, source)


def parse_suite_text(text: str, source: str = "<suite>") -> Suite:
    """A suite from YAML or JSON text; raises SuiteError."""
    try:
        data = load_text(text)
    except InvalidExpectation as exc:
        raise SuiteError(source, "", exc.message) from exc
    return parse_suite(data, source)


def parse_suite(data: Any, source: str = "<suite>") -> Suite:
    """A suite from its JSON form; raises SuiteError."""
    if not isinstance(data, Mapping):
        raise SuiteError(source, "", "a suite must be an object with `name` and `expectations`")
    unknown = sorted(str(k) for k in data if k not in SUITE_FIELDS)
    if unknown:
        raise SuiteError(source, unknown[0], f"unknown field (expected one of {SUITE_FIELDS})")
    name = data.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise SuiteError(source, "name", "required: a slug (letters, digits, `.`, `_`, `-`)")
    description = data.get("description")
    if description is not None and not isinstance(description, str):
        raise SuiteError(source, "description", "must be a string")
    defaults = data.get("defaults") or {}
    if not isinstance(defaults, Mapping):
        raise SuiteError(source, "defaults", "must be an object")
    for key in defaults:
        if key not in DEFAULT_FIELDS:
            raise SuiteError(source, f"defaults.{key}",
                             f"unknown default (expected one of {DEFAULT_FIELDS})")
    items = data.get("expectations")
    if not isinstance(items, list):
        raise SuiteError(source, "expectations", "required: a list of expectations")
    if not items:  # a gate over nothing would pass every agent
        raise SuiteError(source, "expectations", "empty: a suite needs at least one expectation")
    entries: list[Entry] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        entry = _entry(item, dict(defaults), source, f"expectations[{i}]")
        if entry.id in seen:
            raise SuiteError(source, f"expectations[{i}].id", f"duplicate id {entry.id!r}")
        seen.add(entry.id)
        entries.append(entry)
    return Suite(name, description, tuple(entries), source)


def _entry(item: Any, defaults: dict[str, Any], source: str, at: str) -> Entry:
    if not isinstance(item, Mapping):
        raise SuiteError(source, at, "an expectation must be an object")
    optional = item.get("optional", False)
    if not isinstance(optional, bool):
        raise SuiteError(source, f"{at}.optional", "must be true or false")
    body = {**defaults, **{k: v for k, v in item.items() if k not in ENTRY_FIELDS}}
    try:
        exp = parse_expectation(body, require_id=True)
    except InvalidExpectation as exc:
        path = f"{at}.{exc.path}" if exc.path else at
        raise SuiteError(source, path, exc.message) from exc
    assert exp.id is not None
    return Entry(exp.id, exp.to_dict(), exp, optional)


def suite_document(suite: Suite) -> dict[str, Any]:
    """The suite's JSON form (each expectation normalised, defaults folded in)."""
    out: dict[str, Any] = {"name": suite.name}
    if suite.description:
        out["description"] = suite.description
    out["expectations"] = [
        {**e.body, **({"optional": True} if e.optional else {})} for e in suite.entries
    ]
    return out
