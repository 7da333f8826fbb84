"""span_archive, span_archive_traces: the raw spans extraction read, for re-extraction

`span_archive`: each request's decoded spans as an ExportTraceServiceRequest, zlib-compressed
(collector.store.archive); `span_archive_traces`: which conversation and turn each of its
traces belongs to. New tables only: conversations stored before keep no archive and are
skipped by `reextract` jobs.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 20:50:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "span_archive",
        sa.Column("id", Id, primary_key=True, autoincrement=True),
        sa.Column("digest", sa.Text(), nullable=False, unique=True),
        sa.Column("span_count", sa.Integer(), nullable=False),
        sa.Column("data", sa.LargeBinary(), nullable=False),
    )
    op.create_table(
        "span_archive_traces",
        sa.Column("archive_id", Id, nullable=False),
        sa.Column("trace_id", sa.Text(), nullable=False),
        sa.Column("conversation_id", Id, nullable=False),
        sa.Column("turn_id", Id, nullable=False),
        sa.PrimaryKeyConstraint("archive_id", "trace_id"),
    )
    op.create_index("ix_span_archive_traces_conversation", "span_archive_traces",
                    ["conversation_id"])
    op.create_index("ix_span_archive_traces_turn", "span_archive_traces", ["turn_id"])


def downgrade() -> None:
    op.drop_table("span_archive_traces")
    op.drop_table("span_archive")
