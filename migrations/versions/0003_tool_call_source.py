"""tool_calls.source: where each stored call came from

`otel` (extracted from OTLP spans; every row stored before this revision), `explicit` (posted
by the agent's own code), `a2a` (an A2A Task's tool-call-capture artifact), `adk_events` (ADK /
kagent session events). Readers merge explicit calls with the traced calls of their turn by it
(collector.capture.merge); the REST API shows it and filters conversations by it.

A constant server default: PostgreSQL adds the column without rewriting the table, SQLite
with a plain ALTER TABLE.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 16:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("tool_calls", sa.Column("source", sa.Text(), nullable=False,
                                          server_default="otel"))


def downgrade() -> None:
    with op.batch_alter_table("tool_calls") as batch_op:
        batch_op.drop_column("source")
