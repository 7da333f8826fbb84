"""Every row of every table in a database, as text: for proving a value is stored nowhere."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import MetaData, create_engine, select

from tooltrail.collector.store.db import normalise_url


def rows_as_text(database_url: str) -> dict[str, list[dict[str, str]]]:
    """Table name → its rows, every column's value as text (JSON values as their JSON), for
    every table the database holds (reflected, not only the ones tooltrail defines)."""
    engine = create_engine(normalise_url(database_url))
    try:
        reflected = MetaData()
        reflected.reflect(engine)
        with engine.connect() as conn:
            return {
                name: [{column: _text(value) for column, value in row._mapping.items()}
                       for row in conn.execute(select(table))]
                for name, table in reflected.tables.items()
            }
    finally:
        engine.dispose()


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, default=str, ensure_ascii=False)


def where_found(database_url: str, needles: list[str]) -> list[tuple[str, str, str]]:
    """(table, column, needle) for each needle found in any stored value."""
    found = []
    for table, rows in rows_as_text(database_url).items():
        for row in rows:
            for column, value in row.items():
                found += [(table, column, n) for n in needles if n in value]
    return sorted(set(found))
