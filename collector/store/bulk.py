"""The store's bulk mechanics, one helper each, for both stores:

- `among`: many values in one WHERE, as one bound parameter whatever their number (no IN-list
  limit to chunk around; one statement text, so one cached plan);
- `json_rows`: many rows as one bound JSON parameter a statement selects from (an INSERT or
  UPDATE … FROM of any number of rows is one statement, and can return what it wrote);
- `copy_rows`: PostgreSQL COPY, each row rendered by psycopg's C row formatter;
- `insert_rows`: COPY (PostgreSQL) or one statement over `json_rows` (SQLite) where it pays,
  a plain executemany elsewhere.

Column types come from the table definitions (`collector.store.tables`), never from lists kept
in step by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import (
    JSON,
    Column,
    ColumnElement,
    Connection,
    Table,
    Text,
    any_,
    bindparam,
    func,
    select,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects.postgresql import ARRAY

from tooltrail.collector.store.jsonio import dumps

COPY_FROM = 32  # rows; below this an executemany is as fast
_PG = postgresql.dialect()  # type: ignore[no-untyped-call]


def among(
    conn: Connection, column: ColumnElement[Any], values: Iterable[Any]
) -> ColumnElement[bool]:
    """`column IN values`: PostgreSQL `column = ANY(:array)`, SQLite
    `column IN (SELECT value FROM json_each(:json))`; either way the index on `column` is used."""
    items = list(values)
    if conn.dialect.name == "postgresql":
        return column == any_(bindparam(None, items, type_=ARRAY(column.type)))
    each = func.json_each(bindparam(None, dumps(items), type_=Text)).table_valued("value")
    return column.in_(select(each.c.value))


def pg_type(column: Column[Any]) -> str:
    """The column's PostgreSQL type, as its table defines it."""
    return str(column.type.compile(dialect=_PG)).lower()


def json_rows(conn: Connection, table: Table, columns: Sequence[str]) -> str:
    """A FROM item, aliased `r`, of rows given as one JSON array of arrays (in `columns`
    order; JSON columns as JSON text, as in COPY rows) bound to the statement's one
    parameter. Each value takes its column's type."""
    if conn.dialect.name == "postgresql":
        picks = ", ".join(f"(j.v->>{i})::{pg_type(table.c[name])} AS {name}"
                          for i, name in enumerate(columns))
        return f"(SELECT {picks} FROM json_array_elements(%s::json) AS j(v)) AS r"
    picks = ", ".join(f"json_extract(value, '$[{i}]') AS {name}"  # ->> needs SQLite 3.38
                      for i, name in enumerate(columns))
    return f"(SELECT {picks} FROM json_each(?)) AS r"


def copy_rows(conn: Connection, table: str, columns: Sequence[str],
              rows: Iterable[Sequence[Any]]) -> None:
    """COPY `rows` (`columns` order; JSON already as text) into `table` (PostgreSQL)."""
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def insert_rows(conn: Connection, table: Table, rows: Sequence[dict[str, Any]]) -> None:
    """Insert `rows` (dicts with the same keys) in the connection's transaction: as COPY
    (PostgreSQL) or one INSERT … SELECT over `json_rows` (SQLite) where it pays, else as a
    plain executemany. JSON columns' None is SQL NULL either way it pays."""
    if not rows:
        return
    if len(rows) < COPY_FROM:
        conn.execute(table.insert(), list(rows))
        return
    columns = list(rows[0])
    as_json = [isinstance(table.c[name].type, JSON) for name in columns]
    values = (
        [dumps(row[name]) if json and row[name] is not None else row[name]
         for name, json in zip(columns, as_json, strict=True)]
        for row in rows
    )
    if conn.dialect.name == "postgresql":
        copy_rows(conn, table.name, columns, values)
        return
    names = ", ".join(columns)
    conn.exec_driver_sql(f"INSERT INTO {table.name} ({names}) SELECT {names} "
                         f"FROM {json_rows(conn, table, columns)}", (dumps(list(values)),))
