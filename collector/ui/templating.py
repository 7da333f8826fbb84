"""The one Jinja2 environment of the web view and the report (autoescape everywhere)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import orjson
import yaml
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from tooltrail.collector.ui.views import label, steps

HERE = Path(__file__).resolve().parent
STATIC = HERE / "static"
FOLD_CHARS = 400  # a JSON value longer than this is folded in <details>
FOLD_LINES = 16


def pretty(value: Any) -> str:
    """Indented JSON (strings as JSON strings, so `"1"` and `1` differ); orjson, as the
    store's JSON, with the standard library for what it refuses (e.g. integers past 64 bits)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def folds(text: str) -> bool:
    """Whether a rendered value is long enough to fold."""
    return len(text) > FOLD_CHARS or text.count("\n") >= FOLD_LINES


# libyaml's emitter where PyYAML was built with it: the pure-Python one was most of a long
# golden expectation's page (README, "Measured"). The same YAML, except that libyaml escapes
# characters outside the Basic Multilingual Plane ("\U0001F600"), which load back the same.
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def as_yaml(value: Any) -> str:
    """An expectation definition as YAML (key order kept)."""
    return yaml.dump(value, Dumper=DUMPER, sort_keys=False, allow_unicode=True,
                     default_flow_style=False)


def percent(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def millis(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.1f} ms" if value < 1000 else f"{value / 1000:.2f} s"


def figure(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


_DICT_ATTRIBUTES = frozenset(dir(dict))


class _Environment(Environment):
    """Jinja2's environment, reading a dict's keys without first failing to find an attribute
    of that name: the views are REST-shaped dicts, and a page of many calls makes many such
    lookups, each an AttributeError raised and caught (README, "Measured"). What is found is
    the same: a name that is an attribute of dict (`get`, `items`) still takes Jinja2's way."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except KeyError:
                pass
        return super().getattr(obj, attribute)


@cache
def environment() -> Environment:
    env = _Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        pretty=pretty, yaml=as_yaml, percent=percent, figure=figure, millis=millis, steps=steps,
        kind_label=label,
    )
    env.tests["folded"] = folds
    return env


@cache
def stylesheet() -> str:
    """The CSS, served at /ui/static/ui.css and inlined into the report."""
    return (STATIC / "ui.css").read_text()


def render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(**context)
