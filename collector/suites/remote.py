"""A running tooltrail over REST: `tooltrail apply SUITE --server URL` and
`tooltrail check SUITE --server URL`.

`apply` registers the suite's expectations, each carrying `suite: <name>`: missing ones are
created, changed (or deactivated) ones get a new version, equal ones are left alone;
`--prune` deactivates the server's expectations of this suite that the file no longer has.

`check --server` reads verdicts the server computed: every suite expectation must be on the
server as the file says (else `apply` first). The server lists the conversations each
expectation's selector picks (`GET /api/v1/conversations?selected_by=`); only those are read,
each one's results with `GET /api/v1/conversations/{key}/results?wait=…` until its scoring is
`scored`, so a verdict is never one the worker is about to replace. A selected conversation
still pending after `--wait` seconds is an error (exit 2) for each expectation selecting it,
never a pass; one no expectation selects is never read, so it cannot hold the gate.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tooltrail.collector.clihelp import (
    API_KEY_ENV,
    API_KEY_HELP,
    PROJECT_HELP,
    HelpFormatter,
    Parser,
)
from tooltrail.collector.suites.report import Check, Report
from tooltrail.collector.suites.suite import Suite, SuiteError, load_suite
from tooltrail.matcher import parse_expectation

TIMEOUT = 30.0  # seconds per request (plus the long-poll's wait)
PAGE = 1000
MAX_POLL = 20.0  # the server's bound on ?wait


class RemoteError(Exception):
    """The server cannot be used (unreachable, refused, the suite not applied)."""


@dataclass(frozen=True, slots=True)
class Server:
    url: str
    api_key: str | None = None
    project: str | None = None  # every call names it (?project=); None: the server's default

    def call(self, method: str, path: str, body: Any = None, *,
             timeout: float = TIMEOUT) -> tuple[int, Any]:
        if self.project is not None:
            path += ("&" if "?" in path else "?") + urllib.parse.urlencode(
                {"project": self.project})
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url.rstrip("/") + path, data=data, method=method)
        if data is not None:
            request.add_header("content-type", "application/json")
        api_key = self.api_key or os.environ.get(API_KEY_ENV)
        if api_key:
            request.add_header("authorization", f"Bearer {api_key}")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                raw = answer.read()
                return answer.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                return exc.code, json.loads(raw) if raw else None
            except ValueError:
                return exc.code, {"error": {"message": raw.decode(errors="replace")[:200]}}
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise RemoteError(f"cannot reach {self.url}: {getattr(exc, 'reason', exc)}") from exc

    def ok(self, method: str, path: str, body: Any = None, *, timeout: float = TIMEOUT) -> Any:
        status, answer = self.call(method, path, body, timeout=timeout)
        if status >= 400:
            message = (answer or {}).get("error", {}).get("message", "") if isinstance(
                answer, dict) else ""
            raise RemoteError(f"{method} {path}: {status} {message}".rstrip())
        return answer

    def pages(self, path: str, **params: Any) -> Iterator[dict[str, Any]]:
        cursor = None
        while True:
            query = {**params, "limit": PAGE, **({"cursor": cursor} if cursor else {})}
            page = self.ok("GET", f"{path}?{urllib.parse.urlencode(query)}")
            yield from page["data"]
            cursor = page.get("next_cursor")
            if not cursor:
                return


def _quoted(key: str) -> str:
    return urllib.parse.quote(key, safe="")


def wanted_bodies(suite: Suite) -> dict[str, dict[str, Any]]:
    """Each expectation as the server stores it (normalised), tagged with the suite."""
    return {e.id: parse_expectation({**e.body, "suite": suite.name}).to_dict()
            for e in suite.entries}


def apply(suite: Suite, server: Server, *, prune: bool) -> list[str]:
    """Make the server's expectations match the suite; returns one line per action."""
    stored = {e["id"]: e for e in server.pages("/api/v1/expectations", include_inactive="true")}
    lines = []
    for ident, body in wanted_bodies(suite).items():
        have = stored.get(ident)
        if have is None:
            version = server.ok("POST", "/api/v1/expectations", body)["version"]
            lines.append(f"created {ident} (version {version})")
        elif have["active"] and have["expectation"] == body:
            lines.append(f"unchanged {ident} (version {have['version']})")
        else:
            version = server.ok("PUT", f"/api/v1/expectations/{_quoted(ident)}", body)["version"]
            verb = "updated" if have["active"] else "reactivated"
            lines.append(f"{verb} {ident} (version {version})")
    if prune:
        for ident, have in sorted(stored.items()):
            if (have["active"] and have["expectation"].get("suite") == suite.name
                    and ident not in wanted_bodies(suite)):
                server.ok("DELETE", f"/api/v1/expectations/{_quoted(ident)}")
                lines.append(f"deactivated {ident}")
    return lines


def check_remote(suite: Suite, url: str, *, wait: float, api_key: str | None = None,
                 with_conversations: bool = False, project: str | None = None) -> Report:
    """Verdicts the server computed for the suite's expectations, once scoring is current
    (the conversations and expectations of `project`, else of the server's default)."""
    server = Server(url, api_key, project)
    wanted = wanted_bodies(suite)
    stored = {e["id"]: e for e in server.pages("/api/v1/expectations", include_inactive="true")}
    versions: dict[str, int] = {}
    for ident, body in wanted.items():
        have = stored.get(ident)
        if have is None or not have["active"] or have["expectation"] != body:
            state = "missing" if have is None else ("inactive" if not have["active"]
                                                    else "different")
            raise RemoteError(f"expectation {ident!r} is {state} on {url}: run "
                              f"`tooltrail apply {suite.source} --server {url}` first")
        versions[ident] = have["version"]
    # the server lists what each expectation's selector picks: nothing else is read
    selected = {e.id: {c["key"]: c for c in server.pages("/api/v1/conversations",
                                                         selected_by=e.id)}
                for e in suite.entries}
    summaries = {k: c for picked in selected.values() for k, c in picked.items()}
    keys = sorted(summaries)
    deadline = time.monotonic() + wait
    results: dict[str, list[dict[str, Any]]] = {}
    pending: set[str] = set()
    for key in keys:
        while True:
            left = max(0.0, deadline - time.monotonic())
            poll = min(left, MAX_POLL)
            answer = server.ok("GET", f"/api/v1/conversations/{_quoted(key)}/results"
                               f"?wait={poll:.3f}", timeout=TIMEOUT + poll)
            if answer["scoring"] == "scored" or left <= 0:
                break
        if answer["scoring"] != "scored":
            pending.add(key)
        results[key] = answer["data"]
    checks: list[Check] = []
    for entry in suite.entries:
        for key in sorted(selected[entry.id]):
            if key in pending:
                last = summaries[key]["last_seen"]
                checks.append(Check(entry.id, key, "error",
                                    f"scoring still pending after {wait:g} s (last span "
                                    f"received {last})", None))
                continue
            mine = [r for r in results[key] if r["expectation"] == entry.id
                    and r["expectation_version"] == versions[entry.id]]
            if not mine:  # the worker's matcher raised (it logged why): never a silent pass
                checks.append(Check(entry.id, key, "fail", "the conversation was not scored",
                                    None))
            for r in sorted(mine, key=lambda r: (r["scope"].get("kind") == "turn",
                                                 r["scope"].get("turn") or 0)):
                checks.append(Check(entry.id, key, "pass" if r["passed"] else "fail",
                                    r["reason"], r))
        if not selected[entry.id]:
            checks.append(Check(entry.id, None, "skipped" if entry.optional else "fail",
                                "no conversation matched", None))
    conversations = {
        key: server.ok("GET", f"/api/v1/conversations/{_quoted(key)}") for key in keys
    } if with_conversations else {}
    return Report(suite=suite, reads=[], checks=checks, conversations=conversations,
                  conversation_keys=keys, unselected=[], origin={k: url for k in keys})


def run_apply(argv: list[str]) -> int:
    p = Parser(prog="tooltrail apply", formatter_class=HelpFormatter, description=(
        "Register a suite's expectations on a server, idempotently."))
    p.add_argument("suite")
    p.add_argument("--server", required=True, metavar="URL")
    p.add_argument("--prune", action="store_true",
                   help="deactivate this suite's expectations that the file no longer has")
    p.add_argument("--api-key", help=f"an admin API key {API_KEY_HELP}")
    p.add_argument("--project", metavar="NAME", help=PROJECT_HELP)
    args = p.parse_args(argv)
    try:
        suite = load_suite(Path(args.suite))
        for line in apply(suite, Server(args.server, args.api_key, args.project),
                          prune=args.prune):
            print(line)
    except (SuiteError, RemoteError) as exc:
        print(f"tooltrail apply: {exc}", file=sys.stderr)
        return 2
    return 0
