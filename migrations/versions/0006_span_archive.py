"""span_archive: the raw spans extraction read, compressed, for re-extraction

One row per request and trace: that request's spans of the trace as an
ExportTraceServiceRequest, zlib-compressed (collector.store.archive). A new table only:
conversations stored before keep no archive and are skipped by `reextract` jobs.

Revises 0004 for now: 0005 (projects) is being added concurrently and this revision is to be
re-chained onto it when both are merged.

Revision ID: 0006
Revises: 0004
Create Date: 2026-12-01 20:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0004"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "span_archive",
        sa.Column("id", Id, primary_key=True, autoincrement=True),
        sa.Column("conversation_id", Id, nullable=False),
        sa.Column("turn_id", Id, nullable=False),
        sa.Column("trace_id", sa.Text(), nullable=False),
        sa.Column("digest", sa.Text(), nullable=False),
        sa.Column("span_count", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
        sa.UniqueConstraint("trace_id", "digest", name="uq_span_archive_content"),
    )
    op.create_index("ix_span_archive_conversation", "span_archive", ["conversation_id"])
    op.create_index("ix_span_archive_turn", "span_archive", ["turn_id"])


def downgrade() -> None:
    op.drop_table("span_archive")
