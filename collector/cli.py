"""The `tooltrail` command: serve, worker, migrate, bench, extract, and the subcommands that
the modules of EXTENSIONS register (check, import, golden, apply)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import logging
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tooltrail.collector import __version__, heap
from tooltrail.collector.clihelp import CONVENTIONS_HELP, Parser, usage_error

if TYPE_CHECKING:  # imported where used: spawned child processes re-import this module
    from tooltrail.collector.config import Settings

log = logging.getLogger("tooltrail")


ALL = ("*",)  # Command.settings: every setting
API_KEYS_ON_COMMAND_LINE = (
    "--api-keys puts keys on the command line, where `ps` and shell history show them: "
    "put them in a file and set TOOLTRAIL_API_KEYS_FILE (or TOOLTRAIL_API_KEYS)"
)


@dataclass(frozen=True)
class Command:
    """A `tooltrail NAME` subcommand.

    `settings` names the Settings fields it offers as flags (`--database-url`, …; ALL for every
    one); with any, it also takes `--config FILE`. `arguments` adds options of its own. `run`
    gets the Settings built from defaults < file < environment < flags, and the parsed args.
    """

    name: str
    help: str
    run: Callable[[Settings, argparse.Namespace], int]
    settings: tuple[str, ...] = ()
    arguments: Callable[[argparse.ArgumentParser], None] | None = None


@dataclass(frozen=True)
class Program:
    """A `tooltrail NAME` subcommand that parses its own arguments (options may come before or
    after its files): `entry` is "module:function", a `function(argv) -> int` imported when run.
    It reads no Settings."""

    name: str
    help: str
    entry: str

    def main(self, argv: list[str]) -> int:
        module, function = self.entry.split(":")
        code: int = getattr(importlib.import_module(module), function)(argv)
        return code


@dataclass
class Registry:
    """The subcommands and bench targets of `tooltrail`. A module listed in EXTENSIONS has a
    `register(registry: Registry) -> None` that adds its own."""

    commands: dict[str, Command] = field(default_factory=dict)
    programs: dict[str, Program] = field(default_factory=dict)
    bench: dict[str, str] = field(default_factory=dict)  # target → module with main(argv) -> int
    extensions: set[str] = field(default_factory=set)  # the EXTENSIONS registered so far

    def extend(self, modules: tuple[str, ...]) -> Registry:
        """Let each module not yet seen register its commands; returns self."""
        for name in modules:
            if name not in self.extensions:
                self.extensions.add(name)
                importlib.import_module(name).register(self)
        return self

    def add(self, command: Command | Program) -> None:
        if command.name in self.commands or command.name in self.programs:
            raise ValueError(f"tooltrail {command.name}: registered twice")
        if isinstance(command, Program):
            self.programs[command.name] = command
        else:
            self.commands[command.name] = command

    def add_bench(self, target: str, module: str) -> None:
        if target in self.bench:
            raise ValueError(f"tooltrail bench {target}: registered twice")
        self.bench[target] = module


# modules that register subcommands or bench targets, each with `register(registry)` (imported
# whenever the parser is built: they import what their commands need inside the commands)
EXTENSIONS: tuple[str, ...] = ("tooltrail.collector.suites.cli",
                               "tooltrail.collector.governance.cli")


def add_settings_flags(parser: argparse.ArgumentParser, names: tuple[str, ...]) -> None:
    """One flag per named Settings field (`--database-url`, `--no-worker`, …), with its default
    and environment variable in the help; unset flags stay None."""
    from tooltrail.collector.config import Settings, env_name

    parser.add_argument(
        "--config", metavar="FILE",
        help="a YAML, TOML or JSON settings file (the environment and flags override it)",
    )
    fields = Settings.model_fields
    for name in fields if names == ALL else names:
        info = fields[name]
        flag = "--" + name.replace("_", "-")
        default = info.get_default(call_default_factory=True)
        shown = ", ".join(default) if isinstance(default, list) else default
        help_text = (
            f"{info.description or ''} (default: {'none' if shown in (None, '') else shown}; "
            f"env {env_name(name)})"
        ).replace("%", "%%")
        if info.annotation is bool:
            parser.add_argument(
                flag, dest=name, action=argparse.BooleanOptionalAction, default=None, help=help_text
            )
        elif isinstance(default, list):
            parser.add_argument(flag, dest=name, nargs="*", default=None, help=help_text)
        else:
            kind: Any = {int: int, float: float}.get(info.annotation, str)  # type: ignore[arg-type]
            parser.add_argument(flag, dest=name, type=kind, default=None, help=help_text)


def settings_from(args: argparse.Namespace) -> Settings:
    """Settings from the environment, the config file and the flags given."""
    from tooltrail.collector.config import Settings

    overrides = {name: getattr(args, name, None) for name in Settings.model_fields}
    return Settings.load(getattr(args, "config", None), **overrides)


def setup_logging(level: str, log_format: str = "text") -> None:
    from tooltrail.collector import logs

    logs.setup(level, log_format)


def cmd_migrate(settings: Settings, args: argparse.Namespace) -> int:
    from tooltrail.collector.store.db import migrate

    migrate(settings.database_url, settings.project)
    log.info("database at head: %s", _safe_url(settings.database_url))
    return 0


def cmd_serve(settings: Settings, args: argparse.Namespace) -> int:
    import uvicorn

    from tooltrail.collector.api.app import create_app
    from tooltrail.collector.apikeys import ApiKeys
    from tooltrail.collector.extract.otlp import walk_description
    from tooltrail.collector.service import Service
    from tooltrail.collector.store.db import migrate

    try:  # read before anything starts: a bad keys file is one line, not create_app's traceback
        ApiKeys.parse(settings.api_keys, settings.api_keys_file)
    except (OSError, ValueError) as exc:
        print(f"tooltrail serve: invalid API keys: {exc}", file=sys.stderr)
        return 2
    from tooltrail.collector.governance.redaction import RedactionError, load_policy

    try:  # the same for the redaction rules
        load_policy(settings.redaction_rules, settings.redaction_secret, settings.span_attributes)
    except RedactionError as exc:
        print(f"tooltrail serve: {exc}", file=sys.stderr)
        return 2
    if settings.migrate:
        migrate(settings.database_url, settings.project)
    exposed = exposure_warning(settings)
    if exposed:
        log.warning(exposed)
    from tooltrail.collector.listen import PortInUse, tcp_listener

    try:  # both ports are bound before anything starts: a taken port is exit 2, not a share
        http_socket = tcp_listener("OTLP/HTTP and the REST API", "--http-port",
                                   settings.host, settings.http_port)
    except PortInUse as exc:
        log.error("%s", exc)
        return 2
    service = Service.build(settings)
    app = create_app(settings, service)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.http_port,
        http="httptools",  # a dependency; the REST API has no websockets
        ws="none",
        log_level=settings.log_level,
        lifespan="on",
        access_log=False,  # probes and scrapes would be most of it
        log_config=None,  # uvicorn logs through our handler, in our format
    )
    server = uvicorn.Server(config)

    async def run() -> int:
        try:
            service.grpc_receiver.bind()
        except PortInUse as exc:
            http_socket.close()
            log.error("%s", exc)
            return 2
        task = asyncio.create_task(server.serve(sockets=[http_socket]))
        while not server.started and not task.done():
            await asyncio.sleep(0.02)
        if server.started:
            heap.settle()  # the app, its routes and the service are built: kept for good
            http_port = server.servers[0].sockets[0].getsockname()[1]
            log.info(
                "tooltrail listening: http=%s:%d grpc=%s:%d database=%s worker=%s",
                settings.host,
                http_port,
                settings.host,
                service.grpc_receiver.port,
                _safe_url(settings.database_url),
                "on" if settings.worker else "off",
            )
            log.info("%s", walk_description())
        await task
        return 0

    return asyncio.run(run())


def cmd_worker(settings: Settings, args: argparse.Namespace) -> int:
    from tooltrail.collector.api.gauges import ExpectationGauges
    from tooltrail.collector.health import HealthServer
    from tooltrail.collector.listen import PortInUse
    from tooltrail.collector.metrics import Metrics
    from tooltrail.collector.store.db import make_engine
    from tooltrail.collector.worker import Worker, WorkerConfig

    async def run() -> None:
        engine = make_engine(settings.database_url)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        metrics = Metrics()
        metrics.registry.register(ExpectationGauges(engine))
        worker = Worker.from_config(engine, metrics, WorkerConfig.from_settings(settings))
        async with contextlib.AsyncExitStack() as stack:
            if settings.worker_http_port is not None:
                health = stack.enter_context(HealthServer(
                    settings.host, settings.worker_http_port, engine, metrics.registry))
                log.info("tooltrail worker health and metrics: http=%s:%d",
                         settings.host, health.port)
            await stack.enter_async_context(worker)
            heap.settle()
            log.info(
                "tooltrail worker %s running on %s", worker.owner, _safe_url(settings.database_url)
            )
            await stop.wait()
        engine.dispose()

    try:
        asyncio.run(run())
    except PortInUse as exc:
        log.error("%s", exc)
        return 2
    return 0


def exposure_warning(settings: Settings) -> str | None:
    """A loud warning when the service listens beyond loopback with no API keys."""
    if is_loopback(settings.host) or settings.api_keys or settings.api_keys_file:
        return None
    return (
        f"!!! binding {settings.host} with NO API keys: anyone who can reach this host can send "
        "spans, read results and change expectations. Set TOOLTRAIL_API_KEYS. !!!"
    )


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1)."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _safe_url(url: str) -> str:
    """The database URL without its password."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def add_bench_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", choices=sorted(registry().bench))
    parser.add_argument("rest", nargs=argparse.REMAINDER, help="the target's options (--help)")


def cmd_bench(settings: Settings, args: argparse.Namespace) -> int:
    """`tooltrail bench TARGET …`: each benchmark module has `main(argv) -> int`."""
    try:
        module = importlib.import_module(registry().bench[args.target])
        result: int = module.main(args.rest)
    except ModuleNotFoundError as exc:
        print(f"tooltrail bench {args.target}: {missing_module_hint(exc.name or '')}",
              file=sys.stderr)
        return 2
    return result


def missing_module_hint(module: str) -> str:
    """What to install for `module`: the extra of this package that provides it, if any."""
    import re
    from importlib.metadata import PackageNotFoundError, requires

    try:
        requirements = requires("tooltrail") or []
    except PackageNotFoundError:
        requirements = []
    wanted = re.sub(r"[._]", "-", module.lower())
    for requirement in requirements:
        name = re.match(r"[A-Za-z0-9._-]+", requirement)
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", requirement)
        dist = re.sub(r"[._]", "-", name.group(0).lower()) if name else ""
        if extra and dist and (wanted == dist or wanted.startswith(dist + "-")):
            return (f"needs {module}, from the `{extra.group(1)}` extra: "
                    f"pip install 'tooltrail[{extra.group(1)}]'")
    return f"needs the module {module}, which is not installed"


def add_extract_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "What each span of FILE contributed (or why not), and the resulting trajectory; or a "
        "stored conversation (--database-url URL --conversation KEY). FILE is read as "
        "`tooltrail check` reads it: OTLP/protobuf, OTLP/JSON, JSON Lines of OTLP/JSON "
        "requests, or ADK session events (JSON Lines, a JSON array, kagent rows); gzip ok.")
    parser.add_argument("file", nargs="?", help="an OTLP or ADK events file (.gz ok)")
    parser.add_argument("--database-url", help="read a stored conversation instead of a file")
    parser.add_argument("--conversation", help="the stored conversation's key (with FILE: the "
                        "key of ADK events that carry no session id; default the file's name)")
    parser.add_argument("--summary", action="store_true",
                        help="one line per span, then trajectory (either way: a conventions "
                        "entry to start from for tool-like spans no convention matched)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--conversation-key", action="append", dest="keys", metavar="KEY",
                        help="an extra attribute key carrying the conversation id (repeatable)")
    parser.add_argument("--keep-plumbing", action="store_true",
                        help="keep framework plumbing calls")
    parser.add_argument("--conventions", metavar="FILE", help=CONVENTIONS_HELP)


def cmd_extract(settings: Settings, args: argparse.Namespace) -> int:
    """`tooltrail extract`: the report of collector.extract_report, as text or JSON."""
    import json
    from pathlib import Path

    from tooltrail.collector import extract_report
    from tooltrail.collector.errors import InvalidPayload
    from tooltrail.collector.extract import DEFAULT_CONVERSATION_KEYS, ExtractOptions
    from tooltrail.collector.extract.conventions import given_conventions

    try:
        if args.file and not args.database_url:
            options = ExtractOptions((*DEFAULT_CONVERSATION_KEYS, *(args.keys or ())),
                                     keep_plumbing=args.keep_plumbing,
                                     conventions=given_conventions(args.conventions))
            report = extract_report.file_report(Path(args.file), options, args.conversation)
        elif args.database_url and args.conversation and not args.file:
            report = extract_report.stored_report(args.database_url, args.conversation)
        else:
            print("tooltrail extract: give FILE, or --database-url URL --conversation KEY",
                  file=sys.stderr)
            return 2
    except (OSError, ValueError, LookupError, InvalidPayload) as exc:
        print(f"tooltrail extract: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print("\n".join(extract_report.render(report, summary=args.summary)))
    return 0


def registry() -> Registry:
    """The subcommands and bench targets, EXTENSIONS included."""
    return REGISTRY.extend(EXTENSIONS)


REGISTRY = Registry()
REGISTRY.add(Command("serve", "receivers + REST API + embedded worker", cmd_serve, ALL))
REGISTRY.add(Command(
    "worker", "a standalone scoring worker", cmd_worker,
    ("database_url", "settle_seconds", "worker_poll_seconds", "worker_batch", "lease_seconds",
     "host", "worker_http_port", "log_level", "log_format", "retention"),
))
REGISTRY.add(Command(
    "migrate", "upgrade the database to the newest schema", cmd_migrate,
    ("database_url", "project", "log_level", "log_format"),
))
REGISTRY.add(Command(
    "bench", "benchmarks (`tooltrail bench TARGET --help`)", cmd_bench,
    arguments=add_bench_arguments,
))
REGISTRY.add_bench("matcher", "tooltrail.matcher.bench")
REGISTRY.add_bench("ingest", "tooltrail.collector.bench.ingest")
REGISTRY.add_bench("extract", "tooltrail.collector.bench.extract")
REGISTRY.add_bench("scoring", "tooltrail.collector.bench.scoring")
REGISTRY.add_bench("ui", "tooltrail.collector.bench.ui")
REGISTRY.add_bench("capture", "tooltrail.collector.bench.capture")
REGISTRY.add_bench("soak", "tooltrail.collector.bench.soak")
REGISTRY.add(Command(
    "extract", "show what each span (or event) contributed, and why not", cmd_extract,
    arguments=add_extract_arguments,
))


def build_parser(registry: Registry) -> argparse.ArgumentParser:
    """The parser of every subcommand in `registry`."""
    parser = Parser(
        prog="tooltrail",
        description="Collect AI agents' OpenTelemetry traces and score their tool calls. "
        "`tooltrail COMMAND --help` lists a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"tooltrail {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in registry.commands.values():
        own = sub.add_parser(command.name, help=command.help, description=command.help)
        if command.settings:
            add_settings_flags(own, command.settings)
        if command.arguments is not None:
            command.arguments(own)
    for program in registry.programs.values():  # listed here; run before parsing (main)
        own = sub.add_parser(program.name, help=program.help, add_help=False)
        own.add_argument("rest", nargs=argparse.REMAINDER)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `tooltrail` console script."""
    from tooltrail.collector.config import SettingsError

    argv = sys.argv[1:] if argv is None else argv
    commands = registry()
    program = commands.programs.get(argv[0]) if argv else None
    if program is not None:
        with contextlib.suppress(KeyboardInterrupt):
            return program.main(argv[1:])
        return 130
    parser = build_parser(commands)
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # argparse would name only `tooltrail`: name the command they were given to
        usage_error(f"tooltrail {args.command}", f"unrecognized arguments: {' '.join(unknown)}")
    try:
        settings = settings_from(args)
    except SettingsError as exc:
        print(f"tooltrail {args.command}: {exc}", file=sys.stderr)
        return 2
    setup_logging(settings.log_level, settings.log_format)
    if getattr(args, "api_keys", None):
        log.warning(API_KEYS_ON_COMMAND_LINE)
    with contextlib.suppress(KeyboardInterrupt):
        return commands.commands[args.command].run(settings, args)
    return 130


if __name__ == "__main__":  # `-m tooltrail.collector.cli`: run the one module extensions import
    sys.exit(importlib.import_module("tooltrail.collector.cli").main())
