"""Bulk inserts: PostgreSQL COPY where it pays, a plain executemany elsewhere."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import JSON, Connection, Table

from collector.store.jsonio import dumps

COPY_FROM = 32  # rows; below this an executemany is as fast


def insert_rows(conn: Connection, table: Table, rows: Sequence[dict[str, Any]]) -> None:
    """Insert `rows` (dicts with the same keys) in the connection's transaction."""
    if not rows:
        return
    if conn.dialect.name != "postgresql" or len(rows) < COPY_FROM:
        conn.execute(table.insert(), list(rows))
        return
    columns = list(rows[0])
    as_json = [isinstance(table.c[name].type, JSON) for name in columns]
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    with cursor.copy(f"COPY {table.name} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row([
                dumps(row[name]) if json and row[name] is not None else row[name]
                for name, json in zip(columns, as_json, strict=True)
            ])
