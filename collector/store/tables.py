"""Table definitions (SQLAlchemy Core). One schema for SQLite and PostgreSQL.

Span times are unix nanoseconds (BigInteger); service-side times are unix seconds (Float).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB

metadata = MetaData()

Id = BigInteger().with_variant(Integer(), "sqlite")  # SQLite autoincrements INTEGER PRIMARY KEY
Json = JSON().with_variant(JSONB(), "postgresql")


def owner() -> ForeignKey:
    """A fresh foreign key to the owning conversation (deleted with it)."""
    return ForeignKey("conversations.id", ondelete="CASCADE")


conversations = Table(
    "conversations",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    # a key names one conversation within its project (migration 0005; collector.projects)
    Column("project", Text, nullable=False),
    Column("key", Text, nullable=False),
    Column("service", Text),
    Column("agents", Json, nullable=False, default=list),
    Column("attributes", Json, nullable=False, default=dict),
    Column("first_seen", Float, nullable=False),
    Column("last_seen", Float, nullable=False),
    Column("start_ns", BigInteger, nullable=False, default=0),
    Column("end_ns", BigInteger, nullable=False, default=0),
    Column("turn_count", Integer, nullable=False, default=0),
    Column("call_count", Integer, nullable=False, default=0),
    Column("error_count", Integer, nullable=False, default=0),
    Column("change_seq", Integer, nullable=False, default=1),
    Column("scored_seq", Integer, nullable=False, default=0),
    Column("lease_until", Float),
    Column("lease_owner", Text),
    # key first: the writer looks conversations up by key (then keeps the project's)
    UniqueConstraint("key", "project", name="uq_conversations_project_key"),
    Index("ix_conversations_start", "start_ns"),
)

# The worker's claim query reads only conversations that changed since they were scored.
Index(
    "ix_conversations_dirty",
    conversations.c.last_seen,
    postgresql_where=conversations.c.scored_seq < conversations.c.change_seq,
    sqlite_where=conversations.c.scored_seq < conversations.c.change_seq,
)

turns = Table(
    "turns",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column(
        "conversation_id", Id, ForeignKey("conversations.id", ondelete="CASCADE"), nullable=False
    ),
    Column("turn_key", Text, nullable=False, unique=True),
    Column("trace_id", Text, nullable=False),
    Column("start_ns", BigInteger, nullable=False),
    Column("end_ns", BigInteger, nullable=False),
    Column("key_rank", Integer, nullable=False),
    Column("has_agent_root", Boolean, nullable=False, default=False),
    Column("agents", Json, nullable=False, default=list),
    # the trace's root span (migration 0004): evaluation events exported are parented to it
    Column("root_span_id", Text),
    Index("ix_turns_conversation", "conversation_id", "start_ns"),
)

tool_calls = Table(
    "tool_calls",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    # No foreign keys (migration 0002): checking them was a large share of PostgreSQL's ingest
    # CPU (README, "Measured"). Only the writer inserts calls, in the transaction that holds
    # their turn and conversation; persist.drop_empty deletes the calls of the conversations it
    # deletes.
    Column("conversation_id", Id, nullable=False),
    Column("turn_id", Id, nullable=False),
    Column("trace_id", Text, nullable=False),
    Column("span_id", Text, nullable=False),
    Column("parent_span_id", Text),
    Column("call_id", Text),
    Column("name", Text, nullable=False),
    Column("arguments", Json),
    Column("arguments_raw", Text),
    Column("result", Json),
    Column("error", Text),
    Column("status", Text, nullable=False),
    Column("start_ns", BigInteger, nullable=False),
    Column("end_ns", BigInteger, nullable=False),
    Column("step", Integer),
    Column("convention", Text, nullable=False),
    Column("executed", Boolean, nullable=False, default=True),
    Column("attributes", Json, nullable=False, default=dict),
    # otel | explicit | a2a | adk_events (migration 0003; collector.capture)
    Column("source", Text, nullable=False, server_default="otel"),
    UniqueConstraint("trace_id", "span_id", name="uq_tool_calls_span"),
    Index("ix_tool_calls_turn", "turn_id", "start_ns"),
    Index("ix_tool_calls_conversation", "conversation_id"),
    Index("ix_tool_calls_name", "name", "conversation_id"),  # `?tool=` reads it alone (0007)
)

expectations = Table(
    "expectations",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("slug", Text, nullable=False),
    # it scores only its project's conversations (migration 0005); slugs are unique across
    # projects, so a result's expectation names one project's
    Column("project", Text, nullable=False),
    Column("version", Integer, nullable=False),
    Column("body", Json, nullable=False),
    Column("active", Boolean, nullable=False, default=True),
    Column("created_at", Float, nullable=False),
    UniqueConstraint("slug", "version", name="uq_expectations_version"),
)

# What identifies a result: one trajectory (conversation at a change_seq) scored against one
# expectation version in one scope.
RESULT_KEY = ("conversation_id", "expectation", "expectation_version", "change_seq", "scope")


def result_key_columns() -> list[Column[Any]]:
    """Fresh columns of RESULT_KEY (a Column belongs to one table)."""
    return [
        Column(
            "conversation_id",
            Id,
            ForeignKey("conversations.id", ondelete="CASCADE"),
            nullable=False,
        ),
        Column("expectation", Text, nullable=False),
        Column("expectation_version", Integer, nullable=False),
        Column("change_seq", Integer, nullable=False),
        Column("scope", Text, nullable=False),
    ]


def pair_count_columns() -> list[Column[Any]]:
    """The raw pair counts micro averages are summed from."""
    return [
        Column("paired_actual", Integer, nullable=False),
        Column("total_actual", Integer, nullable=False),
        Column("paired_expected_weight", Float, nullable=False),
        Column("total_expected_weight", Float, nullable=False),
    ]


results = Table(
    "results",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    *result_key_columns(),
    Column("current", Boolean, nullable=False, default=True),
    Column("passed", Boolean, nullable=False),
    Column("score", Float, nullable=False),
    Column("precision", Float, nullable=False),
    Column("recall", Float, nullable=False),
    Column("f1", Float, nullable=False),
    *pair_count_columns(),
    Column("reason", Text, nullable=False, default=""),
    Column("failure_kind", Text),  # kind of the first difference, for summaries
    Column("detail", Json, nullable=False),
    Column("scored_at", Float, nullable=False),
    # one trajectory is never scored twice against one expectation version
    UniqueConstraint(*RESULT_KEY, name="uq_results_trajectory"),
    Index("ix_results_conversation", "conversation_id", "expectation", "current"),
    Index("ix_results_expectation", "expectation", "current", "scored_at"),
)

# Per-tool pair counts of each result (joined on the result's natural key), so summaries
# aggregate in SQL.
result_tools = Table(
    "result_tools",
    metadata,
    *result_key_columns(),
    Column("tool", Text, nullable=False),
    *pair_count_columns(),
    PrimaryKeyConstraint(*RESULT_KEY, "tool"),
)

# A rescoring job; its work is split in chunks (ranges of conversation ids) any worker claims.
jobs = Table(
    "jobs",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    # {"expectations": [[slug, version]], "selector", "since", "until"}
    Column("spec", Json, nullable=False),
    Column("status", Text, nullable=False),  # queued | running | done | failed | cancelled
    Column("total", Integer, nullable=False, default=0),
    Column("done", Integer, nullable=False, default=0),
    Column("failed", Integer, nullable=False, default=0),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("started_at", Float),
    Column("finished_at", Float),
    Index("ix_jobs_status", "status"),
)

job_chunks = Table(
    "job_chunks",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("job_id", Id, ForeignKey("jobs.id", ondelete="CASCADE"), nullable=False),
    Column("first_id", BigInteger, nullable=False),  # conversation ids first_id..last_id
    Column("last_id", BigInteger, nullable=False),
    Column("status", Text, nullable=False),  # queued | done | cancelled
    Column("lease_until", Float),
    Column("lease_owner", Text),
    Column("attempts", Integer, nullable=False, default=0),
    Index("ix_job_chunks_claim", "status", "lease_until"),
    Index("ix_job_chunks_job", "job_id", "status"),
)

ingest_errors = Table(
    "ingest_errors",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("at", Float, nullable=False),
    Column("kind", Text, nullable=False),
    Column("transport", Text, nullable=False),
    Column("message", Text, nullable=False),
    Column("trace_id", Text),
    Column("span_id", Text),
    Column("span_name", Text),
    Index("ix_ingest_errors_at", "at"),
)

# Production signals (migration 0004; collector.store.production). Each logical turn's
# contribution is kept, so that when a conversation changes its buckets are corrected by the
# difference, never recounted from the calls.
SIGNAL_KEY = ("project", "service", "version", "agent", "bucket")  # project: migration 0005

signal_turns = Table(
    "signal_turns",
    metadata,
    Column("turn_id", Id, primary_key=True, autoincrement=False),  # the logical turn's first
    Column("conversation_id", Id, nullable=False),
    Column("project", Text, nullable=False),
    Column("service", Text, nullable=False),
    Column("version", Text, nullable=False),
    Column("agent", Text, nullable=False),
    Column("bucket", BigInteger, nullable=False),  # unix seconds of the turn's hour
    Column("calls", Integer, nullable=False),
    Column("failed", Integer, nullable=False),
    Column("unexecuted", Integer, nullable=False),
    Column("pending", Integer, nullable=False),
    Column("tools", Json, nullable=False),
    Index("ix_signal_turns_conversation", "conversation_id"),
    # a version's newest conversations (production.version_conversations; migration 0007)
    Index("ix_signal_turns_version", "project", "service", "version", "conversation_id"),
)

signal_buckets = Table(
    "signal_buckets",
    metadata,
    Column("project", Text, nullable=False),
    Column("service", Text, nullable=False),
    Column("version", Text, nullable=False),
    Column("agent", Text, nullable=False),
    Column("bucket", BigInteger, nullable=False),
    Column("turns", Integer, nullable=False),
    Column("zero_turns", Integer, nullable=False),
    Column("calls", Integer, nullable=False),
    Column("calls_sq", BigInteger, nullable=False),
    Column("failed", Integer, nullable=False),
    Column("unexecuted", Integer, nullable=False),
    Column("pending", Integer, nullable=False),
    Column("histogram", Json, nullable=False),
    Column("tools", Json, nullable=False),
    PrimaryKeyConstraint(*SIGNAL_KEY, name="pk_signal_buckets"),
    Index("ix_signal_buckets_bucket", "bucket"),
)

# The raw spans extraction read (migration 0006; collector.store.archive): each request's
# decoded spans, re-serialised as an ExportTraceServiceRequest and zlib-compressed once, so that
# a later extractor can read them again (collector.reextract); `span_archive_traces` says which
# conversation and turn each of its traces belongs to. An index row leaves with its
# conversation (it has a `conversation_id`); a request whose traces are all gone is deleted, and
# one that still holds others' is rewritten without the deleted traces (archive.forget). No
# foreign keys, as tool_calls: only the writer inserts rows, with their turn and conversation.
span_archive = Table(
    "span_archive",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("digest", Text, nullable=False, unique=True),  # of the uncompressed request: a
    Column("span_count", Integer, nullable=False),  # resend is kept once
    Column("data", LargeBinary, nullable=False),
)

span_archive_traces = Table(
    "span_archive_traces",
    metadata,
    Column("archive_id", Id, nullable=False),
    Column("trace_id", Text, nullable=False),
    Column("conversation_id", Id, nullable=False),
    Column("turn_id", Id, nullable=False),
    PrimaryKeyConstraint("archive_id", "trace_id"),
    Index("ix_span_archive_traces_conversation", "conversation_id"),
    Index("ix_span_archive_traces_turn", "turn_id"),
)
