"""The SQL store: tables, the engine, the group-commit writer and the read queries."""
