"""The migrations build exactly the schema `collector.store.tables` defines: alembic's
autogenerate comparison of a freshly migrated database with the table metadata finds no
difference, on each store. A column, index or constraint added to one and not the other fails
here."""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text

from tooltrail.collector.store.db import make_engine, migrate
from tooltrail.collector.store.tables import metadata


def differences(url: str) -> list[Any]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True,
                                                             "compare_server_default": True})
            return compare_metadata(context, metadata)
    finally:
        engine.dispose()


def test_migrated_schema_matches_the_tables(database_url: str) -> None:
    migrate(database_url)
    assert differences(database_url) == []


def test_a_drift_is_found(database_url: str) -> None:
    """The comparison is not blind: a column the metadata does not define is reported."""
    migrate(database_url)
    engine = make_engine(database_url)
    with engine.begin() as conn:
        conn.execute(text("ALTER TABLE turns ADD COLUMN stray TEXT"))
    engine.dispose()
    found = differences(database_url)
    assert [d[0] for d in found] == ["remove_column"], found
    assert found[0][3].name == "stray"
