"""projects: conversations and expectations belong to a project

`conversations.project` and `expectations.project` (collector.projects). A conversation key
now names one conversation within its project: the unique key `(key)` becomes
`(project, key)`. Every row stored before goes to the default project: the one configured
(`Settings.project`, which `tooltrail migrate` passes as the alembic attribute
`default_project`), else `default`.

The turn keys of captured calls (explicit, A2A, ADK events) name their conversation, so they
now name its project too (`turn#0:PROJECT:KEY`, `a2a:PROJECT:KEY:TASK`,
`adk:PROJECT:KEY:INVOCATION`); stored ones are rewritten with the default project, and the
trace id of their turn and calls with them, so that a capture sent again after the upgrade
still stores nothing new. A key that was shortened to a hash (past 1024 bytes) is kept as it
is: it cannot be parsed back (it stays unique).

Production signals are kept per project too: `signal_turns.project`, and `signal_buckets` is
keyed by (project, service, version, agent, bucket); its rows are copied into a table of the
new key (SQLite cannot change a primary key in place), in the default project.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 20:00:00
"""

from __future__ import annotations

import hashlib
import re

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

PROJECT_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")  # as collector.projects
MAX_KEY_BYTES = 1024
HASHED = "…sha256:"
# the unnamed UNIQUE (key) of revision 0001, as SQLite's reflection names it for batch mode
NAMING = {"uq": "uq_%(table_name)s_%(column_0_name)s"}
UNIQUE_KEY = {True: "uq_conversations_key", False: "conversations_key_key"}  # sqlite?: name
Json = sa.JSON().with_variant(JSONB(), "postgresql")
BUCKET_COLUMNS = ("service", "version", "agent", "bucket", "turns", "zero_turns", "calls",
                  "calls_sq", "failed", "unexecuted", "pending", "histogram", "tools")


def bucket_table(name: str, with_project: bool) -> None:
    """signal_buckets as of revision 0004 (`with_project`: of this one) under `name`."""
    key = ["project"] if with_project else []
    op.create_table(
        name,
        *([sa.Column("project", sa.Text(), nullable=False)] if with_project else []),
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
        # (0004's key had PostgreSQL's default name; both are schema-wide, hence two names)
        sa.PrimaryKeyConstraint(*key, "service", "version", "agent", "bucket",
                                name="pk_signal_buckets" if with_project
                                else "signal_buckets_pkey"),
    )


def rebuild_buckets(with_project: bool, project: str) -> None:
    """Copy signal_buckets into a table with (or without) the project in its key."""
    bucket_table("signal_buckets_new", with_project)
    columns = ", ".join(BUCKET_COLUMNS)
    if with_project:
        op.get_bind().execute(sa.text(
            f"INSERT INTO signal_buckets_new (project, {columns}) "
            f"SELECT :project, {columns} FROM signal_buckets"), {"project": project})
    else:
        op.execute(f"INSERT INTO signal_buckets_new ({columns}) "
                   f"SELECT {columns} FROM signal_buckets")
    op.drop_index("ix_signal_buckets_bucket", "signal_buckets")
    op.drop_table("signal_buckets")
    op.rename_table("signal_buckets_new", "signal_buckets")
    op.create_index("ix_signal_buckets_bucket", "signal_buckets", ["bucket"])


def default_project() -> str:
    name = context.config.attributes.get("default_project", "default")
    if PROJECT_PATTERN.fullmatch(name) is None:
        raise ValueError(f"default project {name!r} is not a project name")
    return str(name)


def derived_key(key: str) -> str:
    """collector.extract.traces.derived_key as of this revision."""
    raw = key.encode("utf-8", "surrogatepass")
    if len(raw) <= MAX_KEY_BYTES:
        return key
    digest = hashlib.sha256(raw).hexdigest()
    return f"{raw[:MAX_KEY_BYTES - 80].decode('utf-8', 'ignore')}…sha256:{digest}"


def scoped_turn_key(turn_key: str, conversation: str, project: str) -> str | None:
    """The turn key a captured turn of `conversation` has in `project`, or None for a turn
    that is not captured (an OTLP trace id) or whose key was hashed."""
    if HASHED in turn_key:
        return None
    if turn_key.startswith("turn#"):
        head, sep, rest = turn_key[len("turn#"):].partition(":")
        if sep and head.isdigit() and rest == conversation:
            return derived_key(f"turn#{head}:{project}:{conversation}")
        return None
    for prefix in ("a2a:", "adk:"):
        if turn_key.startswith(f"{prefix}{conversation}:"):
            rest = turn_key[len(prefix) + len(conversation) + 1:]
            return derived_key(f"{prefix}{project}:{conversation}:{rest}")
    return None


def upgrade() -> None:
    project = default_project()
    sqlite = op.get_bind().dialect.name == "sqlite"
    for table in ("conversations", "expectations"):
        op.add_column(table, sa.Column("project", sa.Text(), nullable=False,
                                       server_default=project))
    # the writer always names the project: no default left to hide a forgotten one
    with op.batch_alter_table("conversations", naming_convention=NAMING,
                              recreate="always" if sqlite else "auto") as batch:
        batch.drop_constraint(UNIQUE_KEY[sqlite], type_="unique")
        # key first: the writer looks conversations up by key (then keeps the project's)
        batch.create_unique_constraint("uq_conversations_project_key", ["key", "project"])
        batch.alter_column("project", server_default=None)
    with op.batch_alter_table("expectations") as batch:
        batch.alter_column("project", server_default=None)
    rekey(project)
    op.add_column("signal_turns", sa.Column("project", sa.Text(), nullable=False,
                                            server_default=project))
    with op.batch_alter_table("signal_turns") as batch:
        batch.alter_column("project", server_default=None)
    rebuild_buckets(True, project)


def rekey(project: str) -> None:
    bind = op.get_bind()
    captured = bind.execute(sa.text(
        "SELECT t.id, t.turn_key, c.key FROM turns t JOIN conversations c "
        "ON c.id = t.conversation_id WHERE t.turn_key LIKE 'turn#%' "
        "OR t.turn_key LIKE 'a2a:%' OR t.turn_key LIKE 'adk:%'")).all()
    for turn_id, turn_key, conversation in captured:
        new = scoped_turn_key(turn_key, conversation, project)
        if new is None or new == turn_key:
            continue
        bind.execute(sa.text("UPDATE turns SET turn_key = :new, trace_id = :new WHERE id = :id"),
                     {"new": new, "id": turn_id})
        bind.execute(sa.text("UPDATE tool_calls SET trace_id = :new "
                             "WHERE turn_id = :id AND trace_id = :old"),
                     {"new": new, "old": turn_key, "id": turn_id})


def downgrade() -> None:
    """Back to one project: refused while two projects hold the same conversation key."""
    bind = op.get_bind()
    clash = bind.execute(sa.text(
        "SELECT key FROM conversations GROUP BY key HAVING count(*) > 1 LIMIT 1")).first()
    if clash is not None:
        raise RuntimeError(f"conversation key {clash[0]!r} is in more than one project: "
                           "delete one before downgrading")
    signals = bind.execute(sa.text("SELECT count(DISTINCT project) FROM signal_buckets")).scalar()
    if signals and signals > 1:
        raise RuntimeError("production signals of more than one project are stored")
    sqlite = bind.dialect.name == "sqlite"
    rows = bind.execute(sa.text(
        "SELECT t.id, t.turn_key, c.key, c.project FROM turns t JOIN conversations c "
        "ON c.id = t.conversation_id WHERE t.turn_key LIKE 'turn#%' "
        "OR t.turn_key LIKE 'a2a:%' OR t.turn_key LIKE 'adk:%'")).all()
    for turn_id, turn_key, conversation, project in rows:
        for prefix in ("a2a:", "adk:"):
            scoped = f"{prefix}{project}:{conversation}:"
            if turn_key.startswith(scoped) and HASHED not in turn_key:
                old = derived_key(f"{prefix}{conversation}:{turn_key[len(scoped):]}")
                break
        else:
            head, _, rest = turn_key[len("turn#"):].partition(":")
            if not (turn_key.startswith("turn#") and head.isdigit()
                    and rest == f"{project}:{conversation}"):
                continue
            old = derived_key(f"turn#{head}:{conversation}")
        bind.execute(sa.text("UPDATE tool_calls SET trace_id = :old "
                             "WHERE turn_id = :id AND trace_id = :new"),
                     {"new": turn_key, "old": old, "id": turn_id})
        bind.execute(sa.text("UPDATE turns SET turn_key = :old, trace_id = :old WHERE id = :id"),
                     {"old": old, "id": turn_id})
    with op.batch_alter_table("conversations", recreate="always" if sqlite else "auto") as batch:
        batch.drop_constraint("uq_conversations_project_key", type_="unique")
        batch.create_unique_constraint(UNIQUE_KEY[sqlite], ["key"])
        batch.drop_column("project")
    with op.batch_alter_table("expectations") as batch:
        batch.drop_column("project")
    with op.batch_alter_table("signal_turns") as batch:
        batch.drop_column("project")
    rebuild_buckets(False, "")
