"""The one settings object: built once in the CLI and passed down; nothing else reads the
environment."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BeforeValidator, Field
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

MIB = 1024 * 1024


def _split(value: Any) -> Any:
    """Lists may be given as comma-separated text (environment variables) or as lists."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


CommaList = Annotated[list[str], NoDecode, BeforeValidator(_split)]


class Settings(BaseSettings):
    """Service configuration: `TOOLTRAIL_*` environment variables, a YAML/TOML/JSON file, flags."""

    model_config = SettingsConfigDict(env_prefix="TOOLTRAIL_", extra="forbid", frozen=True)

    database_url: str = Field(
        "sqlite:///tooltrail.db",
        description="SQLAlchemy URL; postgresql+psycopg://... selects PostgreSQL",
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
    worker_poll_seconds: float = Field(0.25, gt=0, description="worker idle poll interval")
    worker_batch: int = Field(64, gt=0, description="conversations claimed per worker round")
    lease_seconds: float = Field(60.0, gt=0, description="a claimed conversation's lease")
    conversation_keys: CommaList = Field(
        default_factory=lambda: [
            "traceloop.association.properties.session_id",
            "ai.telemetry.metadata.sessionId",
        ],
        description="extra span/resource attribute keys that carry a conversation id",
    )
    keep_plumbing: bool = Field(
        False, description="keep framework plumbing tool calls (adk_*, handoffs, final_result)"
    )
    api_keys: CommaList = Field(
        default_factory=list,
        description="API keys, `role:key` (roles ingest, read, admin; a bare key is admin); "
        "when any is configured, ingest and /api/v1 require one",
    )
    api_keys_file: str | None = Field(None, description="a file of API keys, one per line")
    log_level: str = Field("info", description="debug | info | warning | error")

    @classmethod
    def load(cls, config_file: str | Path | None = None, **overrides: Any) -> Settings:
        """Settings from (lowest first) defaults, a config file, the environment, then overrides."""
        file_values: dict[str, Any] = {}
        if config_file is not None:
            file_values = read_config_file(Path(config_file))
        env_values = cls().model_dump(exclude_defaults=True)
        merged = {
            **file_values,
            **env_values,
            **{k: v for k, v in overrides.items() if v is not None},
        }
        return cls(**merged)

    @property
    def is_sqlite(self) -> bool:
        """True when the store is the embedded SQLite database."""
        return self.database_url.startswith("sqlite")


def read_config_file(path: Path) -> dict[str, Any]:
    """Read a YAML, TOML or JSON settings file into a dict of field values."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".toml":
        data: Any = tomllib.loads(text)
    elif path.suffix == ".json":
        data = json.loads(text)
    else:
        data = yaml.safe_load(text) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of settings")
    section = data.get("tooltrail", data)
    return {str(k).replace("-", "_"): v for k, v in section.items()}
