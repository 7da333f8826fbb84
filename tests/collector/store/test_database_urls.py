"""Database URLs as hosting providers and users write them: `postgres://` (Heroku, Render,
Supabase) and a bare `postgresql://` both reach PostgreSQL through psycopg 3, the driver this
package depends on, wherever a URL becomes an engine (commands, migrations, the API)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.conftest import drop_postgres_database, new_postgres_database
from tooltrail.collector.store.db import at_head, make_engine, normalise_url


@pytest.mark.parametrize(
    ("given", "used"),
    [
        ("postgres://u:p@h:5432/db", "postgresql+psycopg://u:p@h:5432/db"),
        ("postgresql://u@h/db?sslmode=require", "postgresql+psycopg://u@h/db?sslmode=require"),
        ("postgresql+psycopg://u@h/db", "postgresql+psycopg://u@h/db"),
        ("postgresql+psycopg2://u@h/db", "postgresql+psycopg2://u@h/db"),  # a chosen driver
        ("sqlite:///tooltrail.db", "sqlite:///tooltrail.db"),
    ],
)
def test_normalise_url(given: str, used: str) -> None:
    assert normalise_url(given) == used


@pytest.fixture
def bare_pg_url() -> Iterator[str]:
    """An empty PostgreSQL database, its URL without a driver (`postgresql://…`)."""
    url = new_postgres_database()
    try:
        yield url.replace("postgresql+psycopg://", "postgresql://", 1)
    finally:
        drop_postgres_database(url)


@pytest.mark.parametrize("scheme", ["postgres", "postgresql"])
def test_migrate_and_engines_accept_the_bare_schemes(scheme: str, bare_pg_url: str) -> None:
    url = bare_pg_url.replace("postgresql://", f"{scheme}://", 1)
    done = subprocess.run([sys.executable, "-m", "tooltrail", "migrate", "--database-url",
                           url], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    engine = make_engine(url)
    try:
        assert engine.dialect.driver == "psycopg"
        assert at_head(engine)
    finally:
        engine.dispose()
