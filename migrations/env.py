"""Alembic environment: runs migrations online against the configured URL."""

from __future__ import annotations

from alembic import context

from tooltrail.collector.store.db import make_engine
from tooltrail.collector.store.tables import metadata

config = context.config


def run() -> None:
    """Run migrations within one transaction (batch mode so SQLite can alter tables)."""
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = make_engine(config.get_main_option("sqlalchemy.url") or "")
    with engine.connect() as conn:
        if conn.dialect.name == "sqlite":
            # Batch mode rebuilds a table by dropping it: with foreign keys on, dropping a
            # parent (conversations) would cascade-delete its children. (A no-op inside a
            # transaction, so it is set before one begins.)
            conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
            conn.commit()
        context.configure(connection=conn, target_metadata=metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


run()
