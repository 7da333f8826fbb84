"""The one settings object: built once in the CLI and passed down; nothing else reads the
environment.

Precedence, lowest first: defaults < a config file < `TOOLTRAIL_*` environment variables <
command-line flags. Each layer is one of pydantic-settings' own sources (the file sources for
YAML, TOML and JSON, the environment source, and init arguments for flags), so a layer's value
wins whether or not it equals the default.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import yaml
from pydantic import (
    BeforeValidator,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    JsonConfigSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
    YamlConfigSettingsSource,
)

from tooltrail.collector.projects import DEFAULT_PROJECT, project_problem

if TYPE_CHECKING:
    from tooltrail.collector.extract import ExtractOptions

MIB = 1024 * 1024
ENV_PREFIX = "TOOLTRAIL_"
# their values are never echoed in an error
SECRET_FIELDS = frozenset({"api_keys", "redaction_secret"})


class SettingsError(ValueError):
    """Settings that cannot be used; the message is one line, for the user."""


def _split(value: Any) -> Any:
    """Lists may be given as comma-separated text (environment variables) or as lists."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


def _log_level(value: Any) -> Any:
    """Level names are case-insensitive; `warn` (the logging module's alias) is `warning`."""
    if isinstance(value, str):
        value = value.strip().lower()
        return {"warn": "warning"}.get(value, value)
    return value


CommaList = Annotated[list[str], NoDecode, BeforeValidator(_split)]
LogLevel = Annotated[
    Literal["debug", "info", "warning", "error", "critical"], BeforeValidator(_log_level)
]

# The config file of the Settings being built by `Settings.load` (pydantic-settings asks the
# class, not the call, for its sources; a context variable keeps concurrent loads apart).
_config_file: ContextVar[Path | None] = ContextVar("tooltrail_config_file", default=None)


class Settings(BaseSettings):
    """Service configuration: `TOOLTRAIL_*` environment variables, a YAML/TOML/JSON file, flags."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid", frozen=True)

    database_url: str = Field(
        "sqlite:///tooltrail.db",
        description="SQLAlchemy URL; postgresql://... or postgres://... selects PostgreSQL "
        "(through psycopg 3)",
    )
    host: str = Field("127.0.0.1", description="bind address of both receivers and the REST API")
    http_port: int = Field(4318, ge=0, le=65535, description="OTLP/HTTP + REST port (0: any free)")
    grpc_port: int = Field(4317, ge=0, le=65535, description="OTLP/gRPC port (0: any free)")
    settle_seconds: float = Field(
        2.0, ge=0, description="a conversation is scored once quiet this long"
    )
    worker: bool = Field(True, description="run the embedded scoring worker in `serve`")
    worker_process: bool = Field(
        True,
        description="run the embedded worker in a child process (on another core) rather than "
        "a thread of the server",
    )
    migrate: bool = Field(True, description="apply migrations when `serve` starts")
    max_request_bytes: int = Field(
        64 * MIB, gt=0, description="largest OTLP request accepted, after decompression"
    )
    max_queue_bytes: int = Field(
        8 * MIB, gt=0,
        description="bytes of requests admitted and not yet answered; above it, ingest answers "
        "a retryable overload (503 / UNAVAILABLE)",
    )
    writer_concurrency: int = Field(
        1, gt=0,
        description="group commits in flight at once on PostgreSQL (SQLite: always 1); more "
        "overlaps round trips but groups sharing conversations then wait on each other's locks",
    )
    writer_max_group_spans: int = Field(
        50_000, gt=0, description="most spans committed in one transaction"
    )
    sqlite_wal_restart_bytes: int = Field(
        64 * MIB, ge=0,
        description="SQLite: when the WAL file outgrows this, the checkpointer restarts it "
        "(waiting at most a moment for readers) so steady readers cannot let it grow without "
        "end (0: never)",
    )
    ingest_processes: int = Field(
        2, ge=0, description="worker processes that decode and extract large requests (0: none)"
    )
    ingest_inline_bytes: int = Field(
        32 * 1024, ge=0, description="requests smaller than this are decoded in the event loop"
    )
    ingest_errors_keep: int = Field(
        10_000, gt=0, description="newest ingest-error rows kept for /api/v1/ingest/errors"
    )
    store_retry_seconds: float = Field(
        1.0, gt=0, description="retry hint given while the store is unavailable or overloaded"
    )
    writer_max_batch: int = Field(
        256, gt=0, description="most requests committed in one transaction"
    )
    worker_http_port: int | None = Field(
        None, ge=0, le=65535,
        description="`tooltrail worker`: serve /healthz, /readyz and /metrics on this port of "
        "--host (0: any free; unset: off)",
    )
    log_format: Literal["text", "json"] = Field(
        "text", description="log lines as text, or as one JSON object each (tooltrail and uvicorn)"
    )
    worker_poll_seconds: float = Field(0.25, gt=0, description="worker idle poll interval")
    worker_batch: int = Field(64, gt=0, description="conversations claimed per worker round")
    lease_seconds: float = Field(60.0, gt=0, description="a claimed conversation's lease")
    conversation_keys: CommaList = Field(
        default_factory=lambda: list(_default_conversation_keys()),
        description="extra span/resource attribute keys that carry a conversation id",
    )
    project: str = Field(
        DEFAULT_PROJECT, description="the project of data that names none (an OTLP resource "
        "without `tooltrail.project`, a REST call without `?project=`); `migrate` moves data "
        "stored before projects into it",
    )
    keep_plumbing: bool = Field(
        False,
        description="keep framework plumbing calls (adk_*, handoffs, final_result, final_answer)",
    )
    conventions: str | None = Field(
        None, description="a YAML file of tool-span conventions tried before the built-in ones "
        "(docs/conventions.md, \"Conventions files\")",
    )
    _conventions_text: str = PrivateAttr("")

    @field_validator("conventions")
    @classmethod
    def _valid_conventions(cls, value: str | None) -> str | None:
        from tooltrail.collector.extract.conventions import read_conventions

        if value:
            read_conventions(value)  # ConventionsError names the entry and the field
        return value or None

    @model_validator(mode="after")
    def _read_conventions(self) -> Settings:
        from tooltrail.collector.extract.conventions import read_conventions

        # read at start: every extraction (ingest processes, reextract jobs) uses this text
        self._conventions_text = read_conventions(self.conventions) if self.conventions else ""
        return self

    def extract_options(self) -> ExtractOptions:
        """The extraction options these settings give (ingest, capture, reextract jobs)."""
        from tooltrail.collector.extract import ExtractOptions

        return ExtractOptions(conversation_keys=tuple(self.conversation_keys),
                              keep_plumbing=self.keep_plumbing, project=self.project,
                              conventions=self._conventions_text)
    api_keys: CommaList = Field(
        default_factory=list,
        description="API keys, `role:key` (roles ingest, read, admin; a bare key is admin); "
        "when any is configured, ingest and /api/v1 require one",
    )
    api_keys_file: str | None = Field(None, description="a file of API keys, one per line")
    log_level: LogLevel = Field("info", description="debug | info | warning | error | critical")
    # data governance (collector.governance; docs/redaction.md)
    retention: str | None = Field(
        None, description="delete conversations last seen longer ago than this (30d, 12h, 90m, "
        "45s); unset keeps them forever",
    )
    redaction_rules: str | None = Field(
        None, description="a YAML/JSON file of redaction rules applied before anything is stored"
    )
    redaction_secret: str | None = Field(
        None, description="the HMAC key of `hash` redaction rules (keep it secret and stable)"
    )
    span_attributes: str = Field(
        "all", description="span attributes kept beside each call: all | none | key globs, "
        "comma-separated (extracted arguments and results are never kept twice)",
    )

    @field_validator("project")
    @classmethod
    def _project(cls, value: str) -> str:
        problem = project_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    archive_spans: bool | None = Field(
        None, description="keep the raw spans of each trace, compressed, as long as its "
        "conversation, so that `reextract` jobs can extract them again; unset: on unless "
        "redaction rules are set",
    )

    @model_validator(mode="after")
    def _archive_unredacted(self) -> Settings:
        if self.archive_spans and self.redaction_rules:
            raise ValueError("archive_spans keeps spans as received, before redaction: it "
                             "cannot be on together with redaction_rules")
        return self

    @property
    def archive_enabled(self) -> bool:
        """Whether ingest archives raw spans: on by default, so that an upgraded extractor
        can fix stored conversations; off with redaction rules (the archive would keep what
        they remove) or when switched off."""
        return self.archive_spans if self.archive_spans is not None else not self.redaction_rules

    @field_validator("retention")
    @classmethod
    def _duration(cls, value: str | None) -> str | None:
        from tooltrail.collector.governance.retention import parse_duration

        if value is not None:
            parse_duration(value)
        return value

    # Production signals and drift (collector.production; docs/signals.md)
    signals: bool = Field(
        True, description="the worker keeps production signals per service version and agent"
    )
    signals_gauge_versions: int = Field(
        5, gt=0, description="versions per service kept in the signal gauges (most recent)"
    )
    signals_gauge_window_seconds: float = Field(
        86400.0, gt=0, description="the signal gauges cover the last this many seconds"
    )
    drift_alpha: float = Field(
        0.01, gt=0, lt=1, description="a drift measure is flagged only below this p-value"
    )
    drift_min_turns: int = Field(30, ge=1, description="turns each side needs for a drift flag")
    drift_min_zero_rate_diff: float = Field(
        0.10, ge=0, le=1, description="smallest zero-tool-turn rate difference flagged"
    )
    drift_min_tool_mix_distance: float = Field(
        0.10, ge=0, le=1, description="smallest tool-mix Jensen-Shannon distance flagged"
    )
    export_otlp_endpoint: str | None = Field(
        None, description="send every verdict as a gen_ai.evaluation.result event over "
        "OTLP/HTTP to this URL (…/v1/logs is added when missing)"
    )
    export_otlp_headers: CommaList = Field(
        default_factory=list, description="headers of the verdict export, key=value"
    )
    export_queue_size: int = Field(
        2048, gt=0, description="verdict events queued for export at most (then dropped)"
    )
    drift_min_calls_shift: float = Field(
        0.5, ge=0, description="smallest change of mean calls per turn flagged"
    )

    @field_validator("export_otlp_headers")
    @classmethod
    def _export_headers(cls, value: list[str]) -> list[str]:
        from tooltrail.collector.production.evaluation import parse_headers

        parse_headers(value)  # ValueError: `key=value` expected
        return value

    @field_validator("database_url")
    @classmethod
    def _known_store(cls, value: str) -> str:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        from tooltrail.collector.store.db import normalise_url

        try:
            backend = make_url(normalise_url(value)).get_backend_name()
        except ArgumentError:
            raise ValueError("not a database URL (sqlite:///FILE or postgresql://...)") from None
        if backend not in ("sqlite", "postgresql"):
            raise ValueError(f"unsupported database {backend!r} (SQLite or PostgreSQL)")
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Highest first: init arguments (the flags), the environment, the config file."""
        path = _config_file.get()
        files = () if path is None else (file_source(settings_cls, path),)
        return init_settings, env_settings, *files

    @classmethod
    def load(cls, config_file: str | Path | None = None, **overrides: Any) -> Settings:
        """Settings from (lowest first) defaults, a config file, the environment, then overrides
        (None meaning not given). Raises SettingsError with a one-line message."""
        path = None if config_file is None else Path(config_file)
        if path is not None and not path.is_file():
            raise SettingsError(f"config file {path}: not found")
        given = {k: v for k, v in overrides.items() if v is not None}
        try:
            with _reading(path):
                return cls(**given)
        except ValidationError as exc:
            raise SettingsError(describe(exc)) from None
        except (ValueError, TypeError, OSError, yaml.YAMLError) as exc:  # reading a source
            source = "invalid settings" if path is None else f"config file {path}"
            raise SettingsError(f"{source}: {' '.join(str(exc).split())}") from None

    @property
    def is_sqlite(self) -> bool:
        """True when the store is the embedded SQLite database."""
        return self.database_url.startswith("sqlite")


def _default_conversation_keys() -> tuple[str, ...]:
    """Extraction's own default (one list: `tooltrail extract` and `serve` read the same keys);
    imported when first needed, as extraction imports more than settings need."""
    from tooltrail.collector.extract.analyze import DEFAULT_CONVERSATION_KEYS

    return DEFAULT_CONVERSATION_KEYS


@contextmanager
def _reading(path: Path | None) -> Iterator[None]:
    token = _config_file.set(path)
    try:
        yield
    finally:
        _config_file.reset(token)


def file_source(settings_cls: type[BaseSettings], path: Path) -> PydanticBaseSettingsSource:
    """pydantic-settings' source for the file's format (by suffix; YAML unless .toml/.json)."""
    if path.suffix == ".toml":
        return _TomlFile(settings_cls, toml_file=path)
    if path.suffix == ".json":
        return _JsonFile(settings_cls, json_file=path)
    return _YamlFile(settings_cls, yaml_file=path)


def _section(data: Any) -> dict[str, Any]:
    """A file's settings: its top level, or its `tooltrail` key when it has one; `-` in a key
    reads as `_` (`http-port` is `http_port`)."""
    if not isinstance(data, dict):
        raise ValueError("expected a mapping of settings")
    section = data.get("tooltrail", data)
    if not isinstance(section, dict):
        raise ValueError("`tooltrail` must be a mapping of settings")
    return {str(k).replace("-", "_"): v for k, v in section.items()}


class _YamlFile(YamlConfigSettingsSource):
    def _read_file(self, file_path: Any) -> dict[str, Any]:
        return _section(super()._read_file(file_path))


class _TomlFile(TomlConfigSettingsSource):
    def _read_file(self, file_path: Any) -> dict[str, Any]:
        return _section(super()._read_file(file_path))


class _JsonFile(JsonConfigSettingsSource):
    def _read_file(self, file_path: Any) -> dict[str, Any]:
        return _section(super()._read_file(file_path))


def env_name(field: str) -> str:
    """The environment variable of a setting."""
    return ENV_PREFIX + field.upper()


def describe(exc: ValidationError) -> str:
    """A validation failure as one line naming each setting, where it is set, and why."""
    parts = []
    for error in exc.errors():
        field = str(error["loc"][0]) if error["loc"] else "settings"
        shown = "" if field in SECRET_FIELDS or "input" not in error else f" {error['input']!r}"
        where = f" (--{field.replace('_', '-')} / {env_name(field)})" if field in (
            Settings.model_fields) else ""
        parts.append(f"{field}{shown}{where}: {error['msg']}")
    return "invalid settings: " + "; ".join(parts)
