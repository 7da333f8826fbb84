"""The `tooltrail` command: serve, worker, migrate, bench."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: spawned child processes re-import this module
    from collector.config import Settings

log = logging.getLogger("tooltrail")


def add_settings_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per Settings field (`--database-url`, `--no-worker`, …); unset flags stay None."""
    from collector.config import Settings

    parser.add_argument("--config", help="a YAML, TOML or JSON settings file")
    for name, field in Settings.model_fields.items():
        flag = "--" + name.replace("_", "-")
        help_text = field.description or ""
        if field.annotation is bool:
            parser.add_argument(
                flag, dest=name, action=argparse.BooleanOptionalAction, default=None, help=help_text
            )
        elif field.annotation == list[str] or name in ("api_keys", "conversation_keys"):
            parser.add_argument(flag, dest=name, nargs="*", default=None, help=help_text)
        else:
            kind: Any = {int: int, float: float}.get(field.annotation, str)  # type: ignore[arg-type]
            parser.add_argument(flag, dest=name, type=kind, default=None, help=help_text)


def settings_from(args: argparse.Namespace) -> Settings:
    """Settings from the environment, the config file and the flags given."""
    from collector.config import Settings

    overrides = {name: getattr(args, name, None) for name in Settings.model_fields}
    return Settings.load(args.config, **overrides)


def setup_logging(level: str) -> None:
    logging.basicConfig(
        level=level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def cmd_migrate(settings: Settings) -> int:
    from collector.store.db import migrate

    migrate(settings.database_url)
    log.info("database at head: %s", _safe_url(settings.database_url))
    return 0


def cmd_serve(settings: Settings) -> int:
    import uvicorn

    from collector.api.app import create_app
    from collector.store.db import migrate

    if settings.migrate:
        migrate(settings.database_url)
    if not is_loopback(settings.host) and not (settings.api_keys or settings.api_keys_file):
        log.warning(
            "!!! binding %s with NO API keys: anyone who can reach this host can send spans, "
            "read results and change expectations. Set TOOLTRAIL_API_KEYS. !!!",
            settings.host,
        )
    app = create_app(settings)
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.http_port,
        log_level=settings.log_level,
        lifespan="on",
        access_log=False,
    )
    server = uvicorn.Server(config)

    async def run() -> None:
        task = asyncio.create_task(server.serve())
        while not server.started and not task.done():
            await asyncio.sleep(0.02)
        if server.started:
            http_port = server.servers[0].sockets[0].getsockname()[1]
            log.info(
                "tooltrail listening: http=%s:%d grpc=%s:%d database=%s worker=%s",
                settings.host,
                http_port,
                settings.host,
                app.state.grpc_port,
                _safe_url(settings.database_url),
                "on" if settings.worker else "off",
            )
        await task

    asyncio.run(run())
    return 0


def cmd_worker(settings: Settings) -> int:
    from collector.metrics import Metrics
    from collector.store.db import make_engine
    from collector.worker import Worker, WorkerConfig

    async def run() -> None:
        engine = make_engine(settings.database_url)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        worker = Worker.from_config(engine, Metrics(), WorkerConfig.from_settings(settings))
        async with worker:
            log.info(
                "tooltrail worker %s running on %s", worker.owner, _safe_url(settings.database_url)
            )
            await stop.wait()
        engine.dispose()

    asyncio.run(run())
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


def run_bench(target: str, argv: list[str]) -> int:
    """`tooltrail bench TARGET …`: each benchmark module has `main(argv) -> int`."""
    import importlib

    module = {
        "matcher": "matcher.bench",
        "ingest": "collector.bench.ingest",
        "scoring": "collector.bench.scoring",
        "capture": "collector.bench.capture",
    }[target]
    result: int = importlib.import_module(module).main(argv)
    return result


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `tooltrail` console script."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["extract"]:  # its own parser: options may come before the file
        import importlib

        code: int = importlib.import_module("collector.extract_report").main(argv[1:])
        return code
    parser = argparse.ArgumentParser(prog="tooltrail", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (
        ("serve", "receivers + REST API + embedded worker"),
        ("worker", "a standalone scoring worker"),
        ("migrate", "upgrade the database to the newest schema"),
    ):
        add_settings_flags(sub.add_parser(name, help=help_text))
    report = sub.add_parser(
        "extract", help="show what each span contributed, and why not", add_help=False
    )
    report.add_argument("rest", nargs=argparse.REMAINDER)
    bench = sub.add_parser("bench", help="benchmarks")
    bench.add_argument("target", choices=["matcher", "ingest", "scoring", "capture"])
    bench.add_argument("rest", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command == "bench":
        return run_bench(args.target, args.rest)
    try:
        settings = settings_from(args)
    except (ValueError, OSError) as exc:
        print(f"tooltrail: invalid settings: {exc}", file=sys.stderr)
        return 2
    setup_logging(settings.log_level)
    commands = {"serve": cmd_serve, "worker": cmd_worker, "migrate": cmd_migrate}
    with contextlib.suppress(KeyboardInterrupt):
        return commands[args.command](settings)
    return 130


if __name__ == "__main__":
    sys.exit(main())
