"""The `tooltrail` command line as a user meets it: each subcommand offers only the settings it
uses, with defaults and environment names; `--version`; warnings; the subcommand registry."""

from __future__ import annotations

import copy
import os
import re
import socket
import subprocess
import sys
import time
from importlib.metadata import version
from types import ModuleType

import httpx
import pytest

from tooltrail.collector import cli
from tooltrail.collector.config import Settings, env_name

WORKER = {"database_url", "settle_seconds", "worker_poll_seconds", "worker_batch",
          "lease_seconds", "host", "worker_http_port", "log_level", "log_format", "retention"}


def tooltrail(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tooltrail", *args], capture_output=True,
                          text=True, timeout=60, check=False,
                          env={**os.environ, "COLUMNS": "200", **(env or {})})


def flags_of(help_text: str) -> set[str]:
    """The options in a help text (a boolean's `--no-X` counted as `X`)."""
    found = set(re.findall(r"(?<![\w-])--([a-z][a-z-]*)", help_text))
    return {f for f in found if not (f.startswith("no-") and f[3:] in found)}


def flag(name: str) -> str:
    return name.replace("_", "-")


@pytest.mark.parametrize(
    ("command", "settings"),
    [("migrate", {"database_url", "project", "log_level", "log_format"}), ("worker", WORKER),
     ("serve", set(Settings.model_fields))],
)
def test_each_command_offers_only_its_settings(command: str, settings: set[str]) -> None:
    done = tooltrail(command, "--help")
    assert done.returncode == 0, done.stderr
    assert flags_of(done.stdout) == {"help", "config"} | {flag(n) for n in settings}
    text = " ".join(done.stdout.split())
    for name in settings:  # each flag's help ends with its default and its environment variable
        default = Settings.model_fields[name].get_default(call_default_factory=True)
        shown = ", ".join(default) if isinstance(default, list) else default
        shown = "none" if shown in (None, "") else shown
        assert f"(default: {shown}; env {env_name(name)})" in text, (name, text)


def test_a_command_refuses_a_setting_it_does_not_use() -> None:
    done = tooltrail("migrate", "--http-port", "5000")
    assert done.returncode == 2 and "unrecognized arguments: --http-port" in done.stderr


def test_version() -> None:
    done = tooltrail("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"tooltrail {version('tooltrail')}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_serve_with_warn_level_and_api_keys_on_the_command_line(tmp_path: object) -> None:
    """`warn` reaches uvicorn as `warning` (it knows no `warn`), and keys given as a flag are
    warned about, pointing to the keys file."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tooltrail", "serve", "--log-level", "warn", "--api-keys",
         "admin:k3y", "--http-port", str(port), "--grpc-port", "0", "--no-worker",
         "--database-url", f"sqlite:///{tmp_path}/t.db"],
        stderr=subprocess.PIPE, text=True)
    try:
        deadline, status = time.monotonic() + 30, 0
        while time.monotonic() < deadline and process.poll() is None and status != 200:
            try:
                status = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code
            except httpx.TransportError:
                time.sleep(0.1)
        assert status == 200, process.poll()
    finally:
        process.terminate()
        _, err = process.communicate(timeout=30)
    assert "Traceback" not in err, err
    assert re.search(r"WARNING tooltrail: --api-keys .* TOOLTRAIL_API_KEYS_FILE", err), err
    assert "k3y" not in err


def test_a_bad_level_is_one_line_without_traceback() -> None:
    done = tooltrail("worker", "--log-level", "verbose")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "log_level 'verbose'" in done.stderr, done.stderr


def test_an_extension_registers_a_subcommand_and_a_bench_target(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The mechanism the other packages use: a module in EXTENSIONS with `register`."""
    seen: list[tuple[str, str]] = []

    def hello(settings: Settings, args: object) -> int:
        seen.append((settings.database_url, getattr(args, "name", "")))
        return 0

    def register(registry: cli.Registry) -> None:
        registry.add(cli.Command(
            "hello", "say hello", hello, ("database_url",),
            arguments=lambda parser: parser.add_argument("name")))
        registry.add_bench("hello", "tests.collector.test_cli")

    module = ModuleType("tooltrail_test_extension")
    module.register = register  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(cli, "REGISTRY", copy.deepcopy(cli.REGISTRY))
    monkeypatch.setattr(cli, "EXTENSIONS", (module.__name__,))
    assert cli.main(["hello", "--database-url", "sqlite:///x.db", "world"]) == 0
    assert seen == [("sqlite:///x.db", "world")]
    assert cli.main(["bench", "hello", "--flag"]) == 0
    assert BENCH_ARGV == [["--flag"]]
    with pytest.raises(SystemExit):
        cli.main(["hello", "--help"])
    assert flags_of(capsys.readouterr().out) == {"help", "config", "database-url"}


BENCH_ARGV: list[list[str]] = []


def main(argv: list[str]) -> int:
    """This module as a bench target (the extension test above)."""
    BENCH_ARGV.append(argv)
    return 0


def test_bench_says_which_extra_provides_a_missing_module(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bench target needing the `sdk` extra (the OTLP/gRPC exporter), where it is not
    importable."""
    def needs_sdk(argv: list[str]) -> int:
        import opentelemetry.exporter.otlp.proto.grpc.trace_exporter  # noqa: F401

        return 0

    module = ModuleType("tooltrail_test_sdk_bench")
    module.main = needs_sdk  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
                        None)
    monkeypatch.setattr(cli, "REGISTRY", copy.deepcopy(cli.REGISTRY))
    cli.REGISTRY.add_bench("sdk", module.__name__)
    assert cli.main(["bench", "sdk"]) == 2
    err = capsys.readouterr().err
    assert err == ("tooltrail bench sdk: needs opentelemetry.exporter.otlp.proto.grpc"
                   ".trace_exporter, from the `sdk` extra: pip install 'tooltrail[sdk]'\n")


@pytest.mark.parametrize(("command", "shown"), [
    (("golden",), ["--match MATCH order mode of the expectation (default: strict)",
                   "--arguments ARGUMENTS argument mode of its calls (default: exact)"]),
    (("check",), ["--format {table,json,github} default: table"]),
    (("bench", "check"), ["--conversations CONVERSATIONS default: 10000"]),
    (("bench", "capture"), ["--calls CALLS calls per capture (default: 1000)"]),
])
def test_commands_parsing_their_own_arguments_show_defaults(
    command: tuple[str, ...], shown: list[str]
) -> None:
    """`tooltrail golden --help` said `--match MATCH` and nothing of what it is when not given:
    the commands that parse their own arguments share collector.clihelp.HelpFormatter."""
    done = tooltrail(*command, "--help")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    for option in shown:
        assert option in text, text


@pytest.mark.parametrize("argv", [
    ("serve", "--bogus"), ("serve", "--database-url"), ("check", "s.yaml", "x", "--bogus"),
    ("extract", "--bogus"), ("bench", "ingest", "--bogus"), ("golden", "--bogus"),
    ("apply", "--bogus"), ("import", "--bogus"), ("bench", "check", "--bogus"),
])
def test_a_bad_flag_is_one_line_naming_it_and_the_help(argv: tuple[str, ...]) -> None:
    done = tooltrail(*argv)
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    command = " ".join(argv[:2] if argv[0] == "bench" else argv[:1])
    assert line.startswith(f"tooltrail {command}: ")
    assert line.endswith(f"(`tooltrail {command} --help` lists the options)")
    assert "--bogus" in line or "--database-url" in line or "required" in line
