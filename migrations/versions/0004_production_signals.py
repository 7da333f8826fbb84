"""signal_turns and signal_buckets: production signals per agent version

`signal_turns` keeps each logical turn's contribution (calls, failed, never executed,
pending approval, calls per tool) under its (service, service.version, agent, hour);
`signal_buckets` their sums per hour, corrected by differences as conversations change
(collector.store.production). New tables only: nothing stored before is rewritten; the worker
fills them for conversations that change from now on.

`turns.root_span_id`: the trace's root span id, so verdicts exported as OpenTelemetry
`gen_ai.evaluation.result` events are parented to the turn they judge (null for turns stored
before, or whose root span never arrived).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 17:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Json = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    op.add_column("turns", sa.Column("root_span_id", sa.Text()))
    op.create_table(
        "signal_turns",
        sa.Column("turn_id", Id, primary_key=True, autoincrement=False),
        sa.Column("conversation_id", Id, nullable=False),
        sa.Column("service", sa.Text(), nullable=False),
        sa.Column("version", sa.Text(), nullable=False),
        sa.Column("agent", sa.Text(), nullable=False),
        sa.Column("bucket", sa.BigInteger(), nullable=False),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("unexecuted", sa.Integer(), nullable=False),
        sa.Column("pending", sa.Integer(), nullable=False),
        sa.Column("tools", Json, nullable=False),
    )
    op.create_index("ix_signal_turns_conversation", "signal_turns", ["conversation_id"])
    op.create_table(
        "signal_buckets",
        sa.Column("service", sa.Text(), nullable=False),
        sa.Column("version", sa.Text(), nullable=False),
        sa.Column("agent", sa.Text(), nullable=False),
        sa.Column("bucket", sa.BigInteger(), nullable=False),
        sa.Column("turns", sa.Integer(), nullable=False),
        sa.Column("zero_turns", sa.Integer(), nullable=False),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.Column("calls_sq", sa.BigInteger(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("unexecuted", sa.Integer(), nullable=False),
        sa.Column("pending", sa.Integer(), nullable=False),
        sa.Column("histogram", Json, nullable=False),
        sa.Column("tools", Json, nullable=False),
        sa.PrimaryKeyConstraint("service", "version", "agent", "bucket"),
    )
    op.create_index("ix_signal_buckets_bucket", "signal_buckets", ["bucket"])


def downgrade() -> None:
    op.drop_table("signal_buckets")
    op.drop_table("signal_turns")
    with op.batch_alter_table("turns") as batch_op:
        batch_op.drop_column("root_span_id")
