"""Engine creation and migrations for both stores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, event

MIGRATIONS = Path(__file__).resolve().parents[2] / "migrations"


def make_engine(url: str, *, pool_size: int = 5, read_only: bool = False) -> Engine:
    """An engine for `url`.

    SQLite is tuned for one writer and many readers: WAL (readers never block the writer nor
    the writer them), `synchronous=NORMAL` (a commit survives a process crash; WAL is synced at
    checkpoints), a busy timeout, foreign keys on. A `read_only` engine is the separate read
    path of the REST API (`query_only`, its own connections), so reads never wait for the
    writer's connection and cannot write by mistake.
    """
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cursor = dbapi_conn.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA temp_store=MEMORY")
            cursor.execute("PRAGMA cache_size=-16000")  # 16 MB per connection
            if read_only:
                cursor.execute("PRAGMA query_only=ON")
            cursor.close()

        return engine
    return create_engine(url, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True)


def alembic_config(url: str) -> Config:
    """An alembic Config for our migrations directory and `url`."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def migrate(url: str) -> None:
    """Apply every migration up to head."""
    command.upgrade(alembic_config(url), "head")


def at_head(engine: Engine) -> bool:
    """True when the database's schema is at the newest migration."""
    head = ScriptDirectory.from_config(alembic_config(str(engine.url))).get_current_head()
    with engine.connect() as conn:
        current = MigrationContext.configure(conn).get_current_revision()
    return current == head
