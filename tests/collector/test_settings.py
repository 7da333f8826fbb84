"""Settings: defaults < config file < environment < flags, each layer winning even with a value
equal to the default; every bad value is one line on stderr and exit 2."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from tooltrail.collector import cli
from tooltrail.collector.config import Settings, SettingsError

LAYERS = ("default", "file", "env", "flag")
DEFAULT_PORT = Settings.model_fields["http_port"].default


def settings_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ports: dict[str, int],
                  suffix: str = ".yaml") -> Settings:
    """Settings as the CLI builds them, with http_port set in the given layers."""
    monkeypatch.delenv("TOOLTRAIL_HTTP_PORT", raising=False)
    argv = ["serve"]
    if "file" in ports:
        path = tmp_path / f"tooltrail{suffix}"
        if suffix == ".toml":
            path.write_text(f"[tooltrail]\nhttp-port = {ports['file']}\n")
        elif suffix == ".json":
            path.write_text(json.dumps({"http_port": ports["file"]}))
        else:
            path.write_text(f"http_port: {ports['file']}\n")
        argv += ["--config", str(path)]
    if "env" in ports:
        monkeypatch.setenv("TOOLTRAIL_HTTP_PORT", str(ports["env"]))
    if "flag" in ports:
        argv += ["--http-port", str(ports["flag"])]
    return cli.settings_from(cli.build_parser(cli.registry()).parse_args(argv))


@pytest.mark.parametrize(("low", "high"), list(itertools.combinations(LAYERS, 2)))
def test_each_layer_beats_the_ones_below(
    low: str, high: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if low == "default":  # the default is beaten by any value set above it
        assert settings_with(tmp_path, monkeypatch, {high: 5001}).http_port == 5001
        return
    # the higher layer wins with another value, and with the default's own value
    assert settings_with(tmp_path, monkeypatch, {low: 5000, high: 5001}).http_port == 5001
    assert settings_with(tmp_path, monkeypatch, {low: 5000, high: DEFAULT_PORT}).http_port == (
        DEFAULT_PORT)


@pytest.mark.parametrize("suffix", [".yaml", ".toml", ".json"])
def test_environment_beats_every_file_format(
    suffix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = settings_with(tmp_path, monkeypatch, {"file": 5000, "env": DEFAULT_PORT}, suffix)
    assert settings.http_port == DEFAULT_PORT
    assert settings_with(tmp_path, monkeypatch, {"file": 5000}, suffix).http_port == 5000


def test_all_layers_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("tooltrail:\n  http-port: 5000\n  grpc_port: 5001\n  settle_seconds: 9\n")
    monkeypatch.setenv("TOOLTRAIL_GRPC_PORT", "4317")
    monkeypatch.setenv("TOOLTRAIL_SETTLE_SECONDS", "3")
    settings = Settings.load(path, settle_seconds=2.0, http_port=None)
    assert (settings.http_port, settings.grpc_port, settings.settle_seconds) == (5000, 4317, 2.0)


@pytest.mark.parametrize("level", ["warn", "WARN", "Warning"])
def test_warn_is_warning(level: str) -> None:
    assert Settings.load(log_level=level).log_level == "warning"


@pytest.mark.parametrize(
    ("argv", "env", "file_text", "said"),
    [
        (["--log-level", "verbose"], {}, None, "log_level 'verbose' (--log-level / "
         "TOOLTRAIL_LOG_LEVEL): Input should be 'debug', 'info', 'warning', 'error' or "
         "'critical'"),
        ([], {"TOOLTRAIL_LOG_LEVEL": "loud"}, None, "log_level 'loud'"),
        (["--database-url", "mysql://u@h/db"], {}, None, "unsupported database 'mysql'"),
        (["--database-url", "not a url"], {}, None, "not a database URL"),
        ([], {}, "log_levl: debug\n", "log_levl 'debug': Extra inputs are not permitted"),
        ([], {}, "log_level: [unclosed\n", "config file"),
        ([], {}, "- a list\n", "expected a mapping of settings"),
    ],
)
def test_bad_settings_are_one_line_and_exit_2(
    argv: list[str], env: dict[str, str], file_text: str | None, said: str,
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if file_text is not None:
        (tmp_path / "t.yaml").write_text(file_text)
        argv = [*argv, "--config", str(tmp_path / "t.yaml")]
    assert cli.main(["migrate", *argv]) == 2
    err = capsys.readouterr().err
    assert said in err
    assert err.count("\n") == 1 and err.startswith("tooltrail migrate: "), err


def test_serve_flags_are_validated_like_the_rest(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["serve", "--http-port", "70000", "--settle-seconds", "-1"]) == 2
    err = capsys.readouterr().err
    assert "http_port 70000" in err and "settle_seconds -1.0" in err and err.count("\n") == 1


def test_api_keys_are_never_echoed() -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.load(api_keys={"hunter2": "a mapping, not a list"})
    assert "api_keys" in str(raised.value) and "hunter2" not in str(raised.value)


def test_a_missing_config_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="not found"):
        Settings.load(tmp_path / "absent.yaml")


@pytest.mark.parametrize(("content", "said"), [
    (None, "No such file or directory"), ("read:\n", "an API key entry has an empty key")])
def test_a_bad_api_keys_file_is_one_line_and_exit_2(
    content: str | None, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = tmp_path / "keys"
    if content is not None:
        keys.write_text(content)
    assert cli.main(["serve", "--api-keys-file", str(keys), "--no-migrate"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tooltrail serve: invalid API keys: ") and said in err, err
    assert err.count("\n") == 1


def test_the_default_conversation_keys_are_extractions() -> None:
    """`serve` and `tooltrail extract` read the same keys unless told otherwise (a key added to
    extraction's default, such as LangSmith's thread id, reaches the server too)."""
    from tooltrail.collector.extract.analyze import DEFAULT_CONVERSATION_KEYS

    assert "langsmith.metadata.thread_id" in DEFAULT_CONVERSATION_KEYS
    assert tuple(Settings().conversation_keys) == DEFAULT_CONVERSATION_KEYS
    assert Settings().extract_options().conversation_keys == DEFAULT_CONVERSATION_KEYS
