"""tool_calls without foreign keys

Checking both foreign keys of every inserted tool call was a large share of PostgreSQL's
ingest CPU (README, "Measured"). The writer is the only code that inserts tool calls, in the
transaction that creates or finds their turn and conversation; the only code that deletes
conversations deletes their tool calls itself (persist.drop_empty).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 18:20:00
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# names for the unnamed constraints of 0001 (PostgreSQL's own names; SQLite reflects them by
# this convention)
PG_NAMES = {"conversation_id": "tool_calls_conversation_id_fkey",
            "turn_id": "tool_calls_turn_id_fkey"}
NAMING = {"fk": "fk_%(table_name)s_%(column_0_name)s"}
REFERS = {"conversation_id": "conversations", "turn_id": "turns"}


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for name in PG_NAMES.values():
            op.drop_constraint(name, "tool_calls", type_="foreignkey")
        return
    with op.batch_alter_table("tool_calls", naming_convention=NAMING) as batch_op:
        for column in REFERS:
            batch_op.drop_constraint(f"fk_tool_calls_{column}", type_="foreignkey")


def downgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    # calls whose turn or conversation is gone could exist without the keys; the keys refuse them
    op.execute("DELETE FROM tool_calls WHERE conversation_id NOT IN (SELECT id FROM conversations)"
               " OR turn_id NOT IN (SELECT id FROM turns)")
    with op.batch_alter_table("tool_calls", naming_convention=NAMING) as batch_op:
        for column, table in REFERS.items():
            name = PG_NAMES[column] if postgres else f"fk_tool_calls_{column}"
            batch_op.create_foreign_key(name, table, [column], ["id"], ondelete="CASCADE")
