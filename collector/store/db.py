"""Engine creation and migrations for both stores."""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.engine import make_url

from tooltrail.collector.projects import DEFAULT_PROJECT
from tooltrail.collector.store import jsonio
from tooltrail.collector.tasks import cancel

if TYPE_CHECKING:
    from alembic.config import Config

    from tooltrail.collector.metrics import Metrics

log = logging.getLogger(__name__)

MIGRATIONS = Path(__file__).resolve().parents[2] / "migrations"
VERSION_TABLE = "alembic_version"  # alembic's default; migrations/env.py keeps it
POSTGRES_DRIVER = "postgresql+psycopg"  # psycopg 3, the driver this package depends on


def normalise_url(url: str) -> str:
    """`url` with PostgreSQL on psycopg 3: `postgres://` (the form hosting providers hand out)
    is no SQLAlchemy dialect, and a bare `postgresql://` means psycopg2, which is not a
    dependency. A URL naming its driver (`postgresql+...://`) is kept as given."""
    scheme, sep, rest = url.partition("://")
    if sep and scheme in ("postgres", "postgresql"):
        return f"{POSTGRES_DRIVER}://{rest}"
    return url


def make_engine(
    url: str, *, pool_size: int = 5, read_only: bool = False, background_checkpoint: bool = False
) -> Engine:
    """An engine for `url`.

    SQLite is tuned for one writer and many readers: WAL (readers never block the writer nor
    the writer them), `synchronous=NORMAL` (a commit survives a process crash; WAL is synced at
    checkpoints), a busy timeout, foreign keys on. A `read_only` engine is the separate read
    path of the REST API (`query_only`, its own connections), so reads never wait for the
    writer's connection and cannot write by mistake. With `background_checkpoint`, commits
    never run a WAL checkpoint (and its fsync) themselves: a `WalCheckpointer` must run.
    On both stores JSON columns are written by `jsonio.dumps` and read by `jsonio.loads`.
    """
    url = normalise_url(url)
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30},
                               json_serializer=jsonio.dumps, json_deserializer=jsonio.loads)

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cursor = dbapi_conn.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA temp_store=MEMORY")
            cursor.execute("PRAGMA cache_size=-16000")  # 16 MB per connection
            cursor.execute(f"PRAGMA journal_size_limit={64 * 1024 * 1024}")
            if read_only:
                cursor.execute("PRAGMA query_only=ON")
            if background_checkpoint:
                cursor.execute("PRAGMA wal_autocheckpoint=0")
            cursor.close()

        return engine
    return create_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_pre_ping=True,
        json_serializer=jsonio.dumps,
        json_deserializer=jsonio.loads,
    )



class WalCheckpointer:
    """Checkpoints a SQLite WAL every `interval` seconds from its own connection, so that the
    writer's commits only append to the WAL (a no-op for other stores; safe if never started).

    The round's checkpoint is PASSIVE: it never waits for readers or the writer. But the log
    only starts again from its beginning when no reader is using it, so under steady commits
    with readers whose snapshots overlap (REST, web view, worker) a PASSIVE checkpoint never
    resets it and the file grows without end, every read and checkpoint walking a longer log.
    So once the log in use outgrows `restart_bytes` (0: never), a RESTART checkpoint waits at
    most `restart_wait` seconds for the writer and the readers to leave it, then resets it;
    commits wait behind it meanwhile, which bounds how long acknowledgements stall. If the
    readers stay, it gives up (busy) and the next round tries again."""

    def __init__(self, url: str, interval: float = 0.5, *, restart_bytes: int = 64 * 1024 * 1024,
                 restart_wait: float = 0.2, metrics: Metrics | None = None) -> None:
        self.path = make_url(url).database if url.startswith("sqlite") else None
        self.interval = interval
        self.restart_bytes = restart_bytes
        self.restart_wait = restart_wait
        self.metrics = metrics
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> WalCheckpointer:
        if self.path and self.path != ":memory:":
            self._task = asyncio.create_task(self._run(self.path), name="tooltrail-checkpoint")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._task is not None:
            await cancel(self._task)
            self._task = None
            if self.path:
                await asyncio.to_thread(_checkpoint, self.path, "TRUNCATE")

    async def _run(self, path: str) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await asyncio.to_thread(self.round, path)
            except sqlite3.Error as exc:  # loop boundary: the next round tries again
                log.warning("WAL checkpoint failed: %s", exc)

    def round(self, path: str) -> bool:
        """One PASSIVE checkpoint, and a RESTART when the log outgrew `restart_bytes`; True
        when the log was restarted."""
        log_bytes = _checkpoint(path, "PASSIVE").log_bytes
        restarted = False
        if self.restart_bytes and log_bytes > self.restart_bytes:
            restarted = not _checkpoint(path, "RESTART", self.restart_wait).busy
            if restarted and self.metrics is not None:
                self.metrics.wal_restarts.inc()
        if self.metrics is not None:
            self.metrics.wal_bytes.set(wal_file_bytes(path))
        return restarted


@dataclass(frozen=True, slots=True)
class Checkpoint:
    busy: bool  # the checkpoint could not finish: a reader or the writer held on
    log_bytes: int  # the log in use (frames since the last restart), not the file's size


def _checkpoint(path: str, mode: str, wait: float = 5.0) -> Checkpoint:
    conn = sqlite3.connect(path, timeout=wait)
    try:
        busy, frames, _done = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        return Checkpoint(bool(busy), max(frames, 0) * (page + WAL_FRAME_HEADER))
    except sqlite3.OperationalError as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            return Checkpoint(True, 0)
        raise
    finally:
        conn.close()


WAL_FRAME_HEADER = 24  # bytes before each page in a WAL file (SQLite's file format)


def wal_file_bytes(path: str) -> int:
    """The size of SQLite database `path`'s WAL file (0 when there is none)."""
    try:
        return os.stat(f"{path}-wal").st_size
    except FileNotFoundError:
        return 0


def alembic_config(url: str, project: str = DEFAULT_PROJECT) -> Config:
    """An alembic Config for our migrations directory and `url`; `project` is the default
    project rows stored before projects move to (migration 0005). (Alembic is imported where
    it is used: processes that never migrate, such as workers, do not pay its memory.)"""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("sqlalchemy.url", normalise_url(url).replace("%", "%%"))
    config.attributes["default_project"] = project
    return config


# pg_advisory_lock key of `migrate` (any constant; the same in every tooltrail version)
MIGRATION_LOCK = 0x746F6F6C7472  # "tooltr"


def migrate(url: str, project: str = DEFAULT_PROJECT) -> None:
    """Apply every migration up to head (`project`: the default project, `alembic_config`).
    On PostgreSQL under a session advisory lock, so replicas starting together migrate one
    after another (the later ones find it at head) instead of racing to create the same
    tables."""
    from alembic import command

    config = alembic_config(url, project)
    if not normalise_url(url).startswith("postgresql"):
        command.upgrade(config, "head")
        return
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK})
            conn.commit()
            try:
                config.attributes["connection"] = conn
                command.upgrade(config, "head")
                conn.commit()
            finally:  # (closing the session would release it too)
                conn.rollback()
                conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK})
                conn.commit()
    finally:
        engine.dispose()


def schema_revisions(engine: Engine) -> tuple[str | None, str | None]:
    """The database's schema revision (None: never migrated) and the newest migration's.
    (The stored revision is read from alembic's version table directly: a MigrationContext
    logs two lines each time, and a waiting worker asks again and again.)"""
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config(str(engine.url))).get_current_head()
    with engine.connect() as conn:
        if not inspect(conn).has_table(VERSION_TABLE):
            return None, head
        current = conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalar()
    return current, head


def at_head(engine: Engine) -> bool:
    """True when the database's schema is at the newest migration."""
    current, head = schema_revisions(engine)
    return current == head
