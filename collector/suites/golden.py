"""`tooltrail golden`: pin a recorded conversation as a regression expectation (YAML).

The trajectory is the one the service scores: from INPUT files it is written to a temporary
store and read back with `collector.scorer.trajectory`; from `--server` it is the conversation as
`GET /api/v1/conversations/{key}` returns it. `matcher.expectation_from_trajectory` makes the
expectation (strict order, exact arguments by default); `--ignore-arg GLOB` turns the values
of matching argument keys (a key name or a dotted path, at any depth) into `{$any: true}`.
"""

from __future__ import annotations

import sys
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from tooltrail.collector.clihelp import API_KEY_HELP, PROJECT_HELP, HelpFormatter, Parser
from tooltrail.collector.extract import DEFAULT_CONVERSATION_KEYS, ExtractOptions
from tooltrail.collector.scorer import NOT_EXECUTED
from tooltrail.matcher import Call, InvalidExpectation, Trajectory, expectation_from_trajectory
from tooltrail.matcher import parse_expectation as parse
from tooltrail.matcher.selector import glob_match


class GoldenError(ValueError):
    pass


def offline_trajectory(sources: Sequence[str], key: str, options: ExtractOptions,
                       forced: str | None = None) -> Trajectory:
    from tooltrail.collector import scorer
    from tooltrail.collector.store import queries
    from tooltrail.collector.suites.inputs import InputError, expand
    from tooltrail.collector.suites.run import temporary_store, write

    try:
        paths = list(expand(sources))
    except InputError as exc:
        raise GoldenError(str(exc)) from exc
    with temporary_store() as engine:
        reads = write(engine, paths, options, forced)
        bad = [r for r in reads if r.error]
        if bad:
            raise GoldenError(f"{bad[0].source}: {bad[0].error}")
        with engine.connect() as conn:
            row = queries.get_conversation(conn, key)
            if row is None:
                found = sorted(k for r in reads for k in r.conversations)
                raise GoldenError(f"no conversation {key!r} in the inputs (they have: "
                                  f"{', '.join(found[:10]) or 'none'})")
            return scorer.trajectory(conn, row["id"])


def server_trajectory(url: str, key: str, api_key: str | None,
                      project: str | None = None) -> Trajectory:
    from tooltrail.collector.suites.remote import Server

    status, body = Server(url, api_key, project).call(
        "GET", f"/api/v1/conversations/{urllib.parse.quote(key, safe='')}")
    if status == 404:
        raise GoldenError(f"no conversation {key!r} on {url}")
    if status >= 400:
        raise GoldenError(f"{url}: {status} {body}")
    return Trajectory([
        [Call(name=c["name"], arguments=c["arguments"] if c["arguments"] is not None else {},
              result=c.get("result"),
              error=c["error"] if c.get("executed", True) else (c["error"] or NOT_EXECUTED),
              call_id=c.get("call_id"), step=c.get("step"))
         for c in turn["tool_calls"]]
        for turn in body["turns"]])


def loosen(value: Any, globs: Sequence[str], path: str = "") -> Any:
    """`{$any: true}` for the values of keys whose name or dotted path matches a glob."""
    if not isinstance(value, Mapping) or "$literal" in value:
        return value
    out = {}
    for key, item in value.items():
        where = f"{path}.{key}" if path else str(key)
        if any(glob_match(g, str(key)) or glob_match(g, where) for g in globs):
            out[key] = {"$any": True}
        else:
            out[key] = loosen(item, globs, where)
    return out


def golden(trajectory: Trajectory, key: str, *, ident: str | None, match: str,
           arguments: str, per_turn: bool, ignore: Sequence[str]) -> dict[str, Any]:
    body = expectation_from_trajectory(trajectory, per_turn=per_turn, match=match,
                                       arguments=arguments)
    for calls in ([t["calls"] for t in body["turns"]] if per_turn else [body["calls"]]):
        for call in calls:
            call["arguments"] = loosen(call["arguments"], ignore)
    from tooltrail.collector.suites.importers import slug

    out = {"id": ident or slug(key, "golden"), "description": f"golden trajectory of {key}",
           "selector": {"conversation": "".join(f"[{c}]" if c in "*?[" else c for c in key)},
           **body}
    try:
        return parse(out, require_id=True).to_dict()
    except InvalidExpectation as exc:
        raise GoldenError(str(exc)) from exc


def run(argv: list[str]) -> int:
    p = Parser(prog="tooltrail golden", description=__doc__,
                                formatter_class=HelpFormatter)
    p.add_argument("inputs", nargs="*", metavar="INPUT")
    p.add_argument("--conversation", required=True, metavar="KEY", help="the conversation to pin")
    p.add_argument("--server", metavar="URL", help="read it from a running tooltrail instead")
    p.add_argument("--api-key", help=f"with --server: an API key (read role) {API_KEY_HELP}")
    p.add_argument("--project", metavar="NAME", help=PROJECT_HELP)
    p.add_argument("--id", help="the expectation id (default: from the key)")
    p.add_argument("--match", default="strict", help="order mode of the expectation")
    p.add_argument("--arguments", default="exact", help="argument mode of its calls")
    p.add_argument("--per-turn", action="store_true", help="one `turns:` entry per turn")
    p.add_argument("--ignore-arg", action="append", default=[], metavar="GLOB",
                   help="match any value for these argument keys (repeatable)")
    p.add_argument("--input-format", help="force the input format (as `tooltrail check`)")
    p.add_argument("-o", "--output", help="write the expectation here (default: stdout)")
    args = p.parse_args(argv)
    if bool(args.server) == bool(args.inputs):
        print("tooltrail golden: give INPUT files or --server URL", file=sys.stderr)
        return 2
    from tooltrail.collector.suites.remote import RemoteError

    try:
        trajectory = (server_trajectory(args.server, args.conversation, args.api_key,
                                        args.project)
                      if args.server else
                      offline_trajectory(args.inputs, args.conversation,
                                         ExtractOptions(DEFAULT_CONVERSATION_KEYS),
                                         args.input_format))
        body = golden(trajectory, args.conversation, ident=args.id, match=args.match,
                      arguments=args.arguments, per_turn=args.per_turn, ignore=args.ignore_arg)
    except (GoldenError, RemoteError) as exc:
        print(f"tooltrail golden: {exc}", file=sys.stderr)
        return 2
    text = yaml.safe_dump(body, sort_keys=False, allow_unicode=True)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0
