"""`tooltrail check | import | golden | apply`: suites in CI (registered with collector.cli).

Exit status of `check`: 0 every selected expectation passed, 1 at least one failed, 2 usage
error, unreadable input or invalid suite. Errors are one line naming the file; never a
traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tooltrail.collector.cli import Program, Registry
from tooltrail.collector.clihelp import (
    API_KEY_HELP,
    CONVENTIONS_HELP,
    PROJECT_HELP,
    HelpFormatter,
    Parser,
)
from tooltrail.collector.suites.report import EXIT_ERROR

if TYPE_CHECKING:
    from tooltrail.collector.suites.report import Report


def check_parser() -> argparse.ArgumentParser:
    from tooltrail.collector.suites.inputs import FORMATS

    p = Parser(prog="tooltrail check", formatter_class=HelpFormatter, description=(
        "Score recorded conversations against a suite. Exit 0: all passed; 1: a check "
        "failed; 2: usage error, unreadable input or invalid suite."))
    p.add_argument("suite", help="suite file (YAML or JSON)")
    p.add_argument("inputs", nargs="*", metavar="INPUT",
                   help="OTLP (protobuf, JSON, JSON Lines; .gz ok), OpenAI messages, ADK "
                        "events; directories recursively; - for stdin")
    p.add_argument("--input-format", choices=FORMATS, help="force the input format")
    p.add_argument("--format", choices=("table", "json", "github"), default="table")
    p.add_argument("--junit", metavar="FILE", help="also write JUnit XML here")
    p.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report "
                                                  "(each verdict with its aligned diff)")
    p.add_argument("--server", metavar="URL", help="score the conversations stored on a "
                                                   "running tooltrail instead of inputs")
    p.add_argument("--wait", type=float, default=60.0, metavar="SECONDS",
                   help="with --server: how long to wait for pending scoring (default 60)")
    p.add_argument("--api-key", help=f"with --server: an API key (read role) {API_KEY_HELP}")
    p.add_argument("--project", metavar="NAME", help=PROJECT_HELP)
    p.add_argument("--conversation-key", action="append", dest="keys", metavar="KEY",
                   help="an extra attribute key carrying the conversation id (repeatable)")
    p.add_argument("--keep-plumbing", action="store_true", help="keep framework plumbing calls")
    p.add_argument("--conventions", metavar="FILE", help=CONVENTIONS_HELP)
    return p


def register(registry: Registry) -> None:
    """`tooltrail check | import | golden | apply` and `tooltrail bench check`."""
    for name, help_text, function in (
        ("check", "score recorded conversations (or a server's) against a suite: exit 0/1/2",
         "run_check"),
        ("import", "write a suite from ArkSim, kagent, agentevals, ADK or Rhesis files",
         "run_import"),
        ("golden", "pin a recorded conversation as a regression expectation", "run_golden"),
        ("apply", "register a suite's expectations on a server, idempotently", "run_apply"),
    ):
        registry.add(Program(name, help_text, f"{__name__}:{function}"))
    registry.add_bench("check", "tooltrail.collector.suites.bench")
    registry.add_bench("check-server", "tooltrail.collector.suites.bench_server")


def _error(command: str, message: str) -> int:
    print(f"tooltrail {command}: {message}", file=sys.stderr)
    return EXIT_ERROR


def run_check(argv: list[str]) -> int:
    from tooltrail.collector.extract import DEFAULT_CONVERSATION_KEYS, ExtractOptions
    from tooltrail.collector.extract.conventions import ConventionsError, given_conventions
    from tooltrail.collector.suites.inputs import InputError, expand
    from tooltrail.collector.suites.suite import SuiteError, load_suite

    args = check_parser().parse_args(argv)
    if args.server and args.inputs:
        return _error("check", "give INPUT files or --server URL, not both")
    if not args.server and not args.inputs:
        return _error("check", "give at least one INPUT (a file, a directory or -)")
    try:
        suite = load_suite(Path(args.suite))
    except SuiteError as exc:
        return _error("check", str(exc))
    if args.server:
        from tooltrail.collector.suites.remote import RemoteError, check_remote

        try:
            report = check_remote(suite, args.server, wait=args.wait, api_key=args.api_key,
                                  with_conversations=args.format == "json" or bool(args.html),
                                  project=args.project)
        except RemoteError as exc:
            return _error("check", str(exc))
        return _output(report, args)
    from tooltrail.collector.suites.run import check_offline

    try:
        conventions = given_conventions(args.conventions)
    except ConventionsError as exc:
        return _error("check", str(exc))
    options = ExtractOptions((*DEFAULT_CONVERSATION_KEYS, *(args.keys or ())),
                             keep_plumbing=args.keep_plumbing, conventions=conventions)
    try:
        sources = list(expand(args.inputs))
    except InputError as exc:
        return _error("check", str(exc))
    progress = _progress(len(sources))
    with check_offline(suite, sources, options, forced=args.input_format,
                       with_conversations=args.format == "json" or bool(args.html),
                       with_results=(args.format == "json" or bool(args.junit)
                                     or bool(args.html)),
                       progress=progress) as report:
        if progress:
            print(file=sys.stderr)
        return _output(report, args)


def _output(report: Report, args: argparse.Namespace) -> int:
    """Write the report (stdout, then --junit and --html) as it is rendered."""
    from tooltrail.collector.suites.report import junit, render, write_html

    for piece in render(report, args.format):
        sys.stdout.write(piece)
    sys.stdout.flush()
    for path, what, write in (
        (args.junit, "JUnit XML", lambda out: out.writelines(junit(report))),
        (args.html, "the HTML report", lambda out: write_html(report, out)),
    ):
        if path:
            try:
                with Path(path).open("w", encoding="utf-8") as out:
                    write(out)
            except OSError as exc:
                return _error("check", f"{path}: cannot write {what}: {exc}")
    return report.exit_code


PROGRESS_FROM = 20  # inputs; fewer finish before a progress line would help


def _progress(count: int) -> Callable[[str], None] | None:
    """A one-line progress writer on stderr when inputs are many and stderr is a terminal."""
    if count < PROGRESS_FROM or not sys.stderr.isatty():
        return None

    def say(text: str) -> None:
        print(f"\r\x1b[Ktooltrail check: {text}", end="", file=sys.stderr, flush=True)

    return say


def run_import(argv: list[str]) -> int:
    from tooltrail.collector.suites.importers import run

    return run(argv)


def run_golden(argv: list[str]) -> int:
    from tooltrail.collector.suites.golden import run

    return run(argv)


def run_apply(argv: list[str]) -> int:
    from tooltrail.collector.suites.remote import run_apply as apply

    return apply(argv)
