"""JSON columns go through one codec on both stores (`jsonio.dumps` / `jsonio.loads`): values
read back as written, NaN is stored as null alike, and SQLite rows that an earlier build wrote
with the standard library's encoder (NaN, Infinity, ASCII escapes, spaced separators) still
read."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import JSON, Column, Engine, Integer, MetaData, Table, insert, select, text

from tooltrail.collector.store import jsonio
from tooltrail.collector.store.db import make_engine

META = MetaData()
ROWS = Table("json_codec_rows", META, Column("id", Integer, primary_key=True),
             Column("value", JSON))


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    engine = make_engine(database_url)
    META.create_all(engine)
    try:
        yield engine
    finally:
        META.drop_all(engine)
        engine.dispose()


def _round_trip(engine: Engine, value: Any) -> tuple[Any, str]:
    with engine.begin() as conn:
        conn.execute(ROWS.delete())
        conn.execute(insert(ROWS), [{"id": 1, "value": value}])
        read = conn.execute(select(ROWS.c.value)).scalar_one()
        stored = conn.execute(text("SELECT CAST(value AS TEXT) FROM json_codec_rows")).scalar_one()
    return read, stored


def test_values_read_back_as_written(engine: Engine) -> None:
    value = {"city": "Zürich", "ids": [2**63, -1, 0.1], "nested": {"ok": True, "none": None},
             "emoji": "👍"}
    read, stored = _round_trip(engine, value)
    assert read == value
    if engine.dialect.name == "sqlite":  # stored as the codec wrote it: compact, raw UTF-8
        assert stored == jsonio.dumps(value)
        assert "Zürich" in stored


def test_nan_is_stored_as_null_on_both_stores(engine: Engine) -> None:
    read, _ = _round_trip(engine, {"score": math.nan, "top": math.inf})
    assert read == {"score": None, "top": None}


def test_sqlite_rows_of_the_standard_encoder_still_read(tmp_path: Any) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'old.db'}")
    META.create_all(engine)
    old = {"score": math.nan, "top": math.inf, "city": "Zürich"}
    try:
        with engine.begin() as conn:  # as an earlier build wrote it: json.dumps, escaped
            conn.execute(text("INSERT INTO json_codec_rows (id, value) VALUES (1, :v)"),
                         {"v": json.dumps(old)})
            read = conn.execute(select(ROWS.c.value)).scalar_one()
    finally:
        engine.dispose()
    assert math.isnan(read["score"]) and read["top"] == math.inf and read["city"] == "Zürich"


def test_loads_refuses_what_no_decoder_reads() -> None:
    with pytest.raises(ValueError):
        jsonio.loads("{not json")
