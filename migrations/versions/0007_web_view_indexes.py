"""indexes the web view reads by: calls by tool, turns by service version

`ix_tool_calls_name` on (name) becomes (name, conversation_id): the conversations calling a
tool are read from the index alone (queries.list_conversations, `?tool=`). signal_turns gets
(project, service, version, conversation_id): the newest conversations of one version
(production.version_conversations, the compare page) are read from it newest first instead of
scanning every kept turn.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-04 18:10:00
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_tool_calls_name", table_name="tool_calls")
    op.create_index("ix_tool_calls_name", "tool_calls", ["name", "conversation_id"])
    op.create_index("ix_signal_turns_version", "signal_turns",
                    ["project", "service", "version", "conversation_id"])


def downgrade() -> None:
    op.drop_index("ix_signal_turns_version", table_name="signal_turns")
    op.drop_index("ix_tool_calls_name", table_name="tool_calls")
    op.create_index("ix_tool_calls_name", "tool_calls", ["name"])
