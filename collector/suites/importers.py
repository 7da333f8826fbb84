"""`tooltrail import FORMAT FILE`: suites from the files other tools keep (docs/suites.md has the
mapping table per source and where docs/matching.md deliberately differs).

Each importer is a pure function (the file's parsed value, its name, the selector template) →
`Imported` (a suite document and warnings). A field an importer cannot map is a warning naming
it, never dropped silently; a file that is not what it says is an `ImportFailure`.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tooltrail.collector.clihelp import HelpFormatter, Parser
from tooltrail.collector.suites.messages import BadMessages, expected_turns
from tooltrail.collector.suites.suite import SuiteError, parse_suite, suite_document
from tooltrail.matcher import InvalidExpectation
from tooltrail.matcher.spec import load_text

DEFAULT_SELECTOR = 'conversation: "{id}*"'
_SLUG_BAD = re.compile(r"[^A-Za-z0-9._-]+")


class ImportFailure(ValueError):
    """The file is not what its format says; the message names the field."""


@dataclass(slots=True)
class Imported:
    suite: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Context:
    """What an importer needs besides the data: the file's stem and the selector template."""

    stem: str
    selector: str | None = DEFAULT_SELECTOR
    warnings: list[str] = field(default_factory=list)

    def warn(self, path: str, message: str) -> None:
        self.warnings.append(f"{path}: {message}" if path else message)

    def select(self, ident: str) -> dict[str, Any] | None:
        """The selector for a case (`{id}` replaced), or None to select every conversation."""
        if self.selector is None:
            return None
        value = yaml.safe_load(self.selector.replace("{id}", ident))
        if not isinstance(value, Mapping):
            raise ImportFailure(f"--selector must be a YAML mapping, got {self.selector!r}")
        return dict(value)


def slug(text: Any, fallback: str) -> str:
    """A stable expectation id from a case's id or name."""
    out = _SLUG_BAD.sub("-", str(text or "")).strip("-._")[:128]
    return out or fallback


def _items(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise ImportFailure(f"{path}: expected a list")
    return value


def _object(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ImportFailure(f"{path}: expected an object")
    return value


def _unmapped(ctx: Context, obj: Mapping[str, Any], known: Sequence[str], path: str) -> None:
    for key in obj:
        if key not in known:
            ctx.warn(f"{path}.{key}" if path else str(key), "not mapped (ignored)")


def literal_nested(arguments: Any) -> Any:
    """Top-level keys compared with `==`, as ArkSim's and agentevals' partial modes do: nested
    objects and lists must then be equal as a whole, so they become `$literal` specs."""
    if not isinstance(arguments, Mapping):
        return arguments
    return {k: {"$literal": v} if isinstance(v, (Mapping, list)) else v
            for k, v in arguments.items()}


# -- ArkSim: scenarios.json ------------------------------------------------------------------

ARKSIM_MODES = {"strict": "strict", "unordered": "unordered", "contains": "superset",
                "within": "subset"}
ARKSIM_ARGS = ("ignore", "partial", "exact")
ARKSIM_SIMULATION = ("user_id", "goal", "agent_context", "knowledge", "user_profile",
                     "expected_outcomes", "origin")


def import_arksim(data: Any, ctx: Context) -> dict[str, Any]:
    """ArkSim `assertions` of `type: tool_calls` (arksim/evaluator/trajectory_matching.py)."""
    root = _object(data, "")
    _unmapped(ctx, root, ("schema_version", "scenarios"), "")
    expectations = []
    for i, scenario in enumerate(_items(root.get("scenarios"), "scenarios")):
        at = f"scenarios[{i}]"
        scenario = _object(scenario, at)
        ident = slug(scenario.get("scenario_id"), f"scenario-{i}")
        _unmapped(ctx, scenario, ("scenario_id", "assertions", *ARKSIM_SIMULATION), at)
        assertions = [a for a in _items(scenario.get("assertions") or [], f"{at}.assertions")]
        tool_assertions = []
        for j, assertion in enumerate(assertions):
            a_at = f"{at}.assertions[{j}]"
            assertion = _object(assertion, a_at)
            if assertion.get("type") != "tool_calls":
                ctx.warn(f"{a_at}.type", f"{assertion.get('type')!r} assertions are not mapped")
                continue
            tool_assertions.append((j, assertion))
        for j, assertion in tool_assertions:
            a_at = f"{at}.assertions[{j}]"
            _unmapped(ctx, assertion, ("type", "expected", "match_mode"), a_at)
            mode = str(assertion.get("match_mode", "unordered")).lower()
            if mode not in ARKSIM_MODES:
                raise ImportFailure(f"{a_at}.match_mode: unknown mode {mode!r} "
                                    f"(ArkSim has {', '.join(ARKSIM_MODES)})")
            calls = []
            for k, call in enumerate(_items(assertion.get("expected") or [], f"{a_at}.expected")):
                c_at = f"{a_at}.expected[{k}]"
                call = _object(call, c_at)
                _unmapped(ctx, call, ("name", "arguments", "arg_match_mode"), c_at)
                args_mode = str(call.get("arg_match_mode", "ignore")).lower()
                if args_mode not in ARKSIM_ARGS:
                    raise ImportFailure(f"{c_at}.arg_match_mode: unknown mode {args_mode!r}")
                arguments = call.get("arguments") or {}
                out: dict[str, Any] = {"name": call.get("name"), "arguments_match": args_mode}
                if args_mode != "ignore":
                    out["arguments"] = (literal_nested(arguments) if args_mode == "partial"
                                        else arguments)
                calls.append(out)
            exp: dict[str, Any] = {
                "id": ident if len(tool_assertions) == 1 else f"{ident}.{j}",
                # ArkSim passes an assertion with no expected calls whatever the agent did
                "match": ARKSIM_MODES[mode] if calls else "superset",
                "arguments": "ignore",
                "calls": calls,
            }
            if isinstance(scenario.get("goal"), str):
                exp["description"] = scenario["goal"]
            expectations.append(_selected(exp, ctx, ident))
    return {"name": slug(ctx.stem, "arksim"), "expectations": expectations}


def _selected(exp: dict[str, Any], ctx: Context, ident: str) -> dict[str, Any]:
    selector = ctx.select(ident)
    return {**exp, "selector": selector} if selector else exp


# -- agentevals (and kagent's trajectory_match) ------------------------------------------------

AGENTEVALS_MODES = ("strict", "unordered", "subset", "superset")
AGENTEVALS_ARGS = {"exact": "exact", "ignore": "ignore", "superset": "partial"}


def _trajectory_expectation(ident: str, reference: Any, mode: str, args_mode: str,
                            overrides: Any, ctx: Context, at: str) -> dict[str, Any]:
    """An agentevals trajectory match (openevals `create_trajectory_match_evaluator`)."""
    if mode not in AGENTEVALS_MODES:
        raise ImportFailure(f"{at}: trajectory match mode must be one of {AGENTEVALS_MODES}, "
                            f"got {mode!r}")
    try:
        turns = expected_turns(_items(reference, f"{at}.reference"), where=f"{at}.reference")
    except BadMessages as exc:
        raise ImportFailure(str(exc)) from exc
    arguments = _agentevals_args(args_mode, ctx, at)

    def call(c: dict[str, Any]) -> dict[str, Any]:
        out = {"name": c["name"], "arguments": c["arguments"]}
        override = (overrides or {}).get(c["name"]) if isinstance(overrides, Mapping) else None
        if isinstance(override, str):
            out["arguments_match"] = _agentevals_args(override, ctx, f"{at}.overrides")
        elif isinstance(override, list):  # only these (dotted) keys are compared
            out["arguments_match"] = "partial"
            out["arguments"] = _keys_only(c["arguments"], [str(k) for k in override])
        elif override is not None:
            ctx.warn(f"{at}.tool_args_match_overrides.{c['name']}", "not mapped (a callable)")
        if out.get("arguments_match", arguments) == "partial" and not isinstance(override,
                                                                                 list):
            out["arguments"] = literal_nested(out["arguments"])
        return out

    exp: dict[str, Any] = {"id": ident, "arguments": arguments}
    if mode == "strict" and len([t for t in turns if t]) > 1:
        exp["match"] = "strict"
        exp["turns"] = [{"calls": [call(c) for c in turn]} for turn in turns]
    else:
        exp["match"] = mode
        exp["calls"] = [call(c) for turn in turns for c in turn]
        if mode == "subset":  # agentevals pairs each call with its own reference call
            exp["max_calls"] = len(exp["calls"])
    return exp


def _agentevals_args(mode: Any, ctx: Context, at: str) -> str:
    text = str(mode).lower()
    if text == "subset":
        ctx.warn(f"{at}.tool_args_match_mode", "subset (no keys beyond the reference's) has "
                 "no equivalent in docs/matching.md: mapped to exact, which is stricter")
        return "exact"
    if text not in AGENTEVALS_ARGS:
        raise ImportFailure(f"{at}.tool_args_match_mode: must be one of exact, ignore, "
                            f"subset, superset, got {mode!r}")
    return AGENTEVALS_ARGS[text]


def _keys_only(arguments: Any, keys: list[str]) -> Any:
    if not isinstance(arguments, Mapping):
        return arguments
    out: dict[str, Any] = {}
    for key in keys:
        value: Any = arguments
        path = key.split(".")
        for part in path:
            value = value.get(part) if isinstance(value, Mapping) else None
        target = out
        for part in path[:-1]:
            target = target.setdefault(part, {})
        target[path[-1]] = {"$literal": value} if isinstance(value, (Mapping, list)) else value
    return out


AGENTEVALS_FIELDS = ("id", "name", "trajectory_match_mode", "tool_args_match_mode",
                     "tool_args_match_overrides", "reference_outputs", "reference")


def import_agentevals(data: Any, ctx: Context) -> dict[str, Any]:
    """A reference trajectory (OpenAI messages), a trajectory-match configuration
    (`create_trajectory_match_evaluator` arguments + `reference_outputs`), or a list of them
    under `evaluators`; agentevals' defaults are strict and exact."""
    if isinstance(data, list):
        configs: list[tuple[str, Any]] = [("", {"reference_outputs": data})]
    elif isinstance(data, Mapping) and isinstance(data.get("evaluators"), list):
        _unmapped(ctx, data, ("name", "evaluators"), "")
        configs = [(f"evaluators[{i}]", c) for i, c in enumerate(data["evaluators"])]
    else:
        configs = [("", _object(data, ""))]
    expectations: list[dict[str, Any]] = []
    for at, config in configs:
        config = _object(config, at)
        _unmapped(ctx, config, AGENTEVALS_FIELDS, at)
        reference = config.get("reference_outputs", config.get("reference"))
        if isinstance(reference, Mapping):
            reference = reference.get("messages")
        ident = slug(config.get("id") or config.get("name"),
                     ctx.stem if len(configs) == 1 else f"{ctx.stem}-{len(expectations)}")
        exp = _trajectory_expectation(
            ident, reference, str(config.get("trajectory_match_mode", "strict")).lower(),
            config.get("tool_args_match_mode", "exact"),
            config.get("tool_args_match_overrides"), ctx, at or "config")
        expectations.append(_selected(exp, ctx, ident))
    name = data.get("name") if isinstance(data, Mapping) else None
    return {"name": slug(name or ctx.stem, "agentevals"), "expectations": expectations}


# -- kagent-agentevals suites --------------------------------------------------------------------

KAGENT_CASE = ("name", "session_id", "invocation_id", "evaluators", "drop_internal_tools",
               "extra_tool_denylist")
KAGENT_EVALUATOR = ("type", "name", "mode", "tool_args_match_mode", "reference", "expected",
                    "model", "continuous", "prompt", "threshold")
FIXTURE_SESSION = "fixture"  # kagent-evals: the session given with --fixture, i.e. every input


def import_kagent(data: Any, ctx: Context) -> dict[str, Any]:
    """kagent-agentevals suites (src/kagent_evals/suite.py): `cases[].evaluators[]` of type
    `tools_used` (names only; argument matching forced off) and `trajectory_match`."""
    root = _object(data, "")
    _unmapped(ctx, root, ("name", "cases", "defaults", "source"), "")
    if "source" in root:
        ctx.warn("source", "not mapped: give the sessions as `tooltrail check` INPUTs")
    defaults = _object(root.get("defaults") or {}, "defaults")
    _unmapped(ctx, defaults, ("tool_args_match_mode", "judge_model", "drop_internal_tools",
                              "extra_tool_denylist"), "defaults")
    expectations = []
    for i, case in enumerate(_items(root.get("cases"), "cases")):
        at = f"cases[{i}]"
        case = _object(case, at)
        _unmapped(ctx, case, KAGENT_CASE, at)
        name = slug(case.get("name"), f"case-{i}")
        session = case.get("session_id")
        if not session:
            raise ImportFailure(f"{at}.session_id: required")
        if case.get("invocation_id") is not None:
            ctx.warn(f"{at}.invocation_id", "not mapped: the whole conversation is checked")
        if not case.get("drop_internal_tools", defaults.get("drop_internal_tools", True)):
            ctx.warn(f"{at}.drop_internal_tools", "false is not mapped: run `check "
                     "--keep-plumbing` to keep adk_* calls")
        if case.get("extra_tool_denylist") or defaults.get("extra_tool_denylist"):
            ctx.warn(f"{at}.extra_tool_denylist", "not mapped: denied tools stay in the "
                     "trajectory")
        evaluators = _items(case.get("evaluators"), f"{at}.evaluators")
        for j, evaluator in enumerate(evaluators):
            e_at = f"{at}.evaluators[{j}]"
            evaluator = _object(evaluator, e_at)
            _unmapped(ctx, evaluator, KAGENT_EVALUATOR, e_at)
            kind = evaluator.get("type")
            label = slug(evaluator.get("name") or kind, f"evaluator-{j}")
            ident = name if len(evaluators) == 1 else f"{name}.{label}"
            if kind == "tools_used":
                mode = str(evaluator.get("mode", "superset")).lower()
                if mode not in ("subset", "superset", "unordered"):
                    raise ImportFailure(f"{e_at}.mode: tools_used mode must be subset, "
                                        f"superset or unordered, got {mode!r}")
                names = [str(n) for n in _items(evaluator.get("expected"), f"{e_at}.expected")]
                exp: dict[str, Any] = {"id": ident, "match": mode, "arguments": "ignore",
                                       "calls": [{"name": n} for n in names]}
                if mode == "subset":
                    exp["max_calls"] = len(names)
            elif kind == "trajectory_match":
                exp = _trajectory_expectation(
                    ident, evaluator.get("reference"),
                    str(evaluator.get("mode", "strict")).lower(),
                    evaluator.get("tool_args_match_mode",
                                  defaults.get("tool_args_match_mode", "exact")),
                    None, ctx, e_at)
            else:
                ctx.warn(f"{e_at}.type", f"{kind!r} evaluators are not mapped (an LLM judge "
                         "grades prose; tooltrail checks tool calls)")
                continue
            exp["description"] = f"{case.get('name')}: {evaluator.get('name') or kind}"
            if session != FIXTURE_SESSION:
                exp = _selected(exp, ctx, str(session))
            expectations.append(exp)
    return {"name": slug(root.get("name") or ctx.stem, "kagent"), "expectations": expectations}


# -- Google ADK: .evalset.json / .test.json -------------------------------------------------------

ADK_MATCH = {"EXACT": "strict", "IN_ORDER": "in_order", "ANY_ORDER": "superset"}


def import_adk(data: Any, ctx: Context, criteria: Mapping[str, Any] | None = None) -> dict[
        str, Any]:
    """ADK eval sets (`eval_cases[].conversation[]` invocations, expected calls in
    `intermediate_data.tool_uses`) and legacy `.test.json` files (a list of `{query,
    expected_tool_use: [{tool_name, tool_input}]}`); `criteria` from test_config.json."""
    match = _adk_criteria(criteria or {"tool_trajectory_avg_score": 1.0}, ctx)
    if isinstance(data, list):
        turns = []
        for i, entry in enumerate(data):
            at = f"[{i}]"
            entry = _object(entry, at)
            _unmapped(ctx, entry, ("query", "expected_tool_use", "reference",
                                   "expected_intermediate_agent_responses"), at)
            if "reference" in entry:
                ctx.warn(f"{at}.reference", "the final response is not checked")
            uses = _items(entry.get("expected_tool_use") or [], f"{at}.expected_tool_use")
            turns.append({"calls": [
                {"name": _object(u, f"{at}.expected_tool_use[{k}]").get("tool_name"),
                 "arguments": u.get("tool_input") or {}} for k, u in enumerate(uses)]})
        ident = slug(ctx.stem, "adk")
        exp = {"id": ident, "match": match, "arguments": "exact", "turns": turns}
        return {"name": ident, "expectations": [_selected(exp, ctx, ident)]}
    root = _object(data, "")
    _unmapped(ctx, root, ("eval_set_id", "name", "description", "eval_cases",
                          "creation_timestamp"), "")
    expectations = []
    for i, case in enumerate(_items(root.get("eval_cases"), "eval_cases")):
        at = f"eval_cases[{i}]"
        case = _object(case, at)
        _unmapped(ctx, case, ("eval_id", "conversation", "session_input",
                              "creation_timestamp", "final_session_state"), at)
        turns = []
        for k, invocation in enumerate(_items(case.get("conversation"), f"{at}.conversation")):
            i_at = f"{at}.conversation[{k}]"
            invocation = _object(invocation, i_at)
            _unmapped(ctx, invocation, ("invocation_id", "user_content", "final_response",
                                        "intermediate_data", "creation_timestamp"), i_at)
            data_at = f"{i_at}.intermediate_data"
            intermediate = _object(invocation.get("intermediate_data") or {}, data_at)
            _unmapped(ctx, intermediate, ("tool_uses", "intermediate_responses",
                                          "tool_responses"), data_at)
            uses = _items(intermediate.get("tool_uses") or [], f"{data_at}.tool_uses")
            turns.append({"calls": [
                {"name": _object(u, f"{data_at}.tool_uses[{n}]").get("name"),
                 "arguments": u.get("args") or {}} for n, u in enumerate(uses)]})
        ident = slug(case.get("eval_id"), f"case-{i}")
        exp = {"id": ident, "match": match, "arguments": "exact", "turns": turns}
        expectations.append(_selected(exp, ctx, ident))
    return {"name": slug(root.get("eval_set_id") or root.get("name") or ctx.stem, "adk"),
            "expectations": expectations}


def _adk_criteria(criteria: Mapping[str, Any], ctx: Context) -> str:
    match = "strict"
    for key, value in criteria.items():
        if key != "tool_trajectory_avg_score":
            ctx.warn(f"criteria.{key}", "not mapped (only tool_trajectory_avg_score is)")
            continue
        threshold = value.get("threshold", 1.0) if isinstance(value, Mapping) else value
        if isinstance(value, Mapping):
            kind = str(value.get("match_type", "EXACT")).upper()
            if kind not in ADK_MATCH:
                raise ImportFailure(f"criteria.{key}.match_type: unknown {kind!r}")
            match = ADK_MATCH[kind]
        if threshold != 1.0:
            ctx.warn(f"criteria.{key}", f"threshold {threshold} not mapped: every invocation "
                     "must match (as with threshold 1.0)")
    return match


# -- Rhesis: tests with test_configuration.expected_tool_calls ------------------------------------

RHESIS_TEST = ("id", "nano_id", "name", "prompt", "category", "topic", "behavior",
               "requirement", "test_configuration", "test_type", "metadata")


def import_rhesis(data: Any, ctx: Context) -> dict[str, Any]:
    """Rhesis tests; the built-in Tool Call Trajectory metric uses `in_order` and `partial`."""
    if isinstance(data, Mapping):
        _unmapped(ctx, data, ("name", "tests", "description", "id"), "")
        tests = _items(data.get("tests"), "tests")
        name = data.get("name")
    else:
        tests, name = _items(data, ""), None
    expectations = []
    for i, test in enumerate(tests):
        at = f"tests[{i}]"
        test = _object(test, at)
        _unmapped(ctx, test, RHESIS_TEST, at)
        config = _object(test.get("test_configuration") or {}, f"{at}.test_configuration")
        _unmapped(ctx, config, ("expected_tool_calls", "goal", "instructions", "max_turns",
                                "restrictions", "scenario"), f"{at}.test_configuration")
        if "expected_tool_calls" not in config:
            ctx.warn(at, "has no expected_tool_calls: not judged by Tool Call Trajectory")
            continue
        calls = []
        for k, call in enumerate(_items(config["expected_tool_calls"] or [],
                                        f"{at}.test_configuration.expected_tool_calls")):
            c_at = f"{at}.test_configuration.expected_tool_calls[{k}]"
            call = _object(call, c_at)
            _unmapped(ctx, call, ("name", "arguments"), c_at)
            calls.append({k2: v for k2, v in call.items() if k2 in ("name", "arguments")})
        ident = slug(test.get("id") or test.get("nano_id") or test.get("name"), f"test-{i}")
        exp: dict[str, Any] = {"id": ident, "match": "in_order", "arguments": "partial",
                               "calls": calls}
        if not calls:  # Rhesis: an empty list expects no tool calls at all
            exp["max_calls"] = 0
        expectations.append(_selected(exp, ctx, ident))
    return {"name": slug(name or ctx.stem, "rhesis"), "expectations": expectations}


IMPORTERS: dict[str, Callable[[Any, Context], dict[str, Any]]] = {
    "arksim": import_arksim,
    "kagent": import_kagent,
    "agentevals": import_agentevals,
    "adk": import_adk,
    "rhesis": import_rhesis,
}


def stem_of(path: Path) -> str:
    name = path.name
    for suffix in (".evalset.json", ".test.json", ".json", ".yaml", ".yml", ".jsonl"):
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return path.stem


def import_file(kind: str, path: Path, selector: str | None = DEFAULT_SELECTOR) -> Imported:
    """Read, map and validate; raises ImportFailure naming the file."""
    try:
        text = path.read_text(encoding="utf-8")
        data = load_text(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportFailure(f"{path}: cannot read: {exc}") from exc
    except InvalidExpectation as exc:
        raise ImportFailure(f"{path}: {exc.message}") from exc
    ctx = Context(stem_of(path), selector)
    try:
        if kind == "adk":
            config = path.with_name("test_config.json")
            criteria = json.loads(config.read_text()).get("criteria") if config.is_file() else None
            document = import_adk(data, ctx, criteria)
        else:
            document = IMPORTERS[kind](data, ctx)
        suite = parse_suite(document, str(path))
    except ImportFailure as exc:
        raise ImportFailure(f"{path}: {kind}: {exc}") from exc
    except (SuiteError, ValueError) as exc:
        raise ImportFailure(f"{path}: {kind}: {exc}") from exc
    return Imported(suite_document(suite), ctx.warnings)


def dump(document: Mapping[str, Any]) -> str:
    out: str = yaml.safe_dump(dict(document), sort_keys=False, allow_unicode=True)
    return out


def run(argv: list[str]) -> int:
    p = Parser(prog="tooltrail import", formatter_class=HelpFormatter,
                                description=(
        "Write a tooltrail suite (YAML) from another tool's file. Unmapped fields are "
        "warnings on stderr; exit 2 when the file is not what FORMAT says."))
    p.add_argument("format", choices=sorted(IMPORTERS))
    p.add_argument("file")
    p.add_argument("-o", "--output", help="write the suite here (default: stdout)")
    p.add_argument("--selector", default=DEFAULT_SELECTOR,
                   help='YAML selector template, {id} is the case id (default: %(default)s); '
                        '"" selects every conversation')
    args = p.parse_args(argv)
    try:
        imported = import_file(args.format, Path(args.file), args.selector or None)
    except ImportFailure as exc:
        print(f"tooltrail import: {exc}", file=sys.stderr)
        return 2
    for warning in imported.warnings:
        print(f"tooltrail import: warning: {args.file}: {warning}", file=sys.stderr)
    text = dump(imported.suite)
    if args.output:
        try:
            Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            print(f"tooltrail import: {args.output}: {exc}", file=sys.stderr)
            return 2
    else:
        sys.stdout.write(text)
    return 0
