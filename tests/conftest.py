"""Shared fixtures: a fresh database on each store (SQLite file, PostgreSQL database)."""

from __future__ import annotations

import importlib.abc
import os
import sys
import uuid
from collections.abc import Iterator, Sequence
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import ModuleType

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError


class OldNames(importlib.abc.MetaPathFinder):
    """Refuses the folders' own names as top-level modules. The checkout is on the test
    process's path, so `import collector` would load a second copy of tooltrail.collector
    (two registries, two sets of classes) instead of failing."""

    OLD = frozenset({"collector", "matcher", "migrations"})

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if fullname.split(".")[0] in self.OLD:
            raise ImportError(f"{fullname} is tooltrail.{fullname} (the only name it is "
                              "installed under; scripts/dev/rename_imports.py rewrites imports)")
        return None


sys.meta_path.insert(0, OldNames())

PG_ADMIN = os.environ.get("TOOLTRAIL_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test")


def _pg_server_url() -> str:
    return PG_ADMIN.rsplit("/", 1)[0]


def new_postgres_database(options: str = "") -> str:
    """Create an empty database on the test server (`options`: extra CREATE DATABASE clauses);
    fail in CI, skip elsewhere, if unreachable."""
    name = f"tooltrail_{uuid.uuid4().hex[:12]}"
    admin = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}" {options}'))
    except OperationalError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL is unreachable at {PG_ADMIN}: {exc}")
        pytest.skip(f"PostgreSQL is unreachable at {PG_ADMIN}")
    finally:
        admin.dispose()
    return f"{_pg_server_url()}/{name}"


def drop_postgres_database(url: str) -> None:
    name = url.rsplit("/", 1)[1]
    admin = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def fresh_database(kind: str, tmp_path: Path) -> Iterator[str]:
    """A URL of an empty database of `kind`, removed afterwards."""
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'tooltrail.db'}"
        return
    url = new_postgres_database()
    try:
        yield url
    finally:
        drop_postgres_database(url)


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database, once on SQLite and once on PostgreSQL."""
    yield from fresh_database(request.param, tmp_path)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def module_database_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """Like database_url, shared by a module's tests."""
    yield from fresh_database(request.param, tmp_path_factory.mktemp("db"))


@pytest.fixture
def pg_url(tmp_path: Path) -> Iterator[str]:
    """An empty PostgreSQL database at the newest schema (PostgreSQL-only tests)."""
    from tooltrail.collector.store.db import migrate

    for url in fresh_database("postgres", tmp_path):
        migrate(url)
        yield url
