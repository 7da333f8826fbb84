"""The raw span archive: what is needed to extract a conversation again.

`pack` is pure and runs where extraction runs (the ingest worker processes, or inline): a
decoded traces request is serialised (a protobuf body that decoded whole is that already, and is
kept as received) and zlib-compressed once, whole — one compression per
request, not per trace, which is both cheaper and smaller — with a digest of the uncompressed
bytes and its trace ids. `insert` runs inside the writer's group commit
(`persist.write_prepared`): an acknowledged span's archive is committed with its rows or not at
all; a resent request is kept once (the digest is unique). Each trace with a turn gets an index
row (`span_archive_traces`) naming its conversation and turn; a turn re-keyed to another
conversation takes its rows along (`move`).

Deletion is exact: `forget` (called by `governance.retention.delete_conversations`, so by
retention and DELETE alike) removes the conversations' index rows, deletes the requests none
of whose traces remain, and rewrites those that still hold other conversations' traces without
the deleted ones' spans.

Requests are archived as received, before redaction: `collector.config` refuses the archive
together with redaction rules, since it would keep what they remove.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Sequence
from typing import Any, NamedTuple

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from sqlalchemy import Connection, bindparam, delete, func, select, update

from tooltrail.collector.model import Batch
from tooltrail.collector.store.bulk import among, json_rows
from tooltrail.collector.store.jsonio import dumps
from tooltrail.collector.store.tables import span_archive, span_archive_traces

INDEX_COLUMNS = ("archive_id", "trace_id", "conversation_id", "turn_id")
LEVEL = 1  # whole requests compress well at the lowest level; higher ones cost more time than
# the bytes they save are worth (README, "Measured")


class Archived(NamedTuple):
    """One decoded request, ready to store."""

    digest: str
    span_count: int
    trace_ids: tuple[str, ...]
    data: bytes  # zlib of the serialised ExportTraceServiceRequest


def _compressed(request: ExportTraceServiceRequest, raw: bytes | None = None) -> tuple[str, bytes]:
    raw = request.SerializeToString(deterministic=True) if raw is None else raw
    return hashlib.blake2b(raw, digest_size=16).hexdigest(), zlib.compress(raw, LEVEL)


def pack(request: ExportTraceServiceRequest, batch: Batch,
         body: bytes | None = None) -> tuple[Archived, ...]:
    """The archive entry of a decoded request (pure; `batch`, its extraction, is not needed
    yet: the signature is the pipeline's). Every trace of it is named, not only those this
    request makes a turn of: a span that arrives alone (a chat span) may belong to a turn
    stored already. `body`, when given, is `request` serialised (a protobuf body that decoded
    whole): stored as received instead of serialised again, the costliest step otherwise."""
    traces = tuple(sorted({s.trace_id.hex() for rs in request.resource_spans
                           for ss in rs.scope_spans for s in ss.spans}))
    if not traces:
        return ()
    count = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
    digest, data = _compressed(request, body)
    return (Archived(digest, count, traces, data),)


def unpack(data: bytes) -> ExportTraceServiceRequest:
    """A stored entry back as a request."""
    request = ExportTraceServiceRequest()
    request.ParseFromString(zlib.decompress(data))
    return request


def insert(conn: Connection, entries: Sequence[Archived],
           turn_ids: dict[str, tuple[int, int]]) -> None:
    """Store the entries with an index row for each trace that has a turn (turn key = trace
    id): one of this group's (`turn_ids`), or one stored before. A trace with no turn yet is
    not kept (its spans are not read back). What is stored already is skipped (the caller owns
    the transaction)."""
    from tooltrail.collector.store.persist import (  # persist imports this module
        insert_ignore,
        lookup,
    )

    others = sorted({t for e in entries for t in e.trace_ids if t not in turn_ids})
    if others:
        turn_ids = {**turn_ids, **{key: (tid, cid) for key, tid, cid in lookup(
            conn, "turns", "turn_key", "turn_key, id, conversation_id", others)}}
    kept = sorted({e.digest: e for e in entries if any(t in turn_ids for t in e.trace_ids)}
                  .values())  # digest order: one lock order for concurrent writers
    if not kept:
        return
    a = span_archive.c
    conn.execute(insert_ignore(conn, span_archive), [
        {"digest": e.digest, "span_count": e.span_count, "data": e.data} for e in kept])
    ids = dict(conn.execute(select(a.digest, a.id).where(
        among(conn, a.digest, [e.digest for e in kept]))).all())
    index = [[ids[e.digest], t, turn_ids[t][1], turn_ids[t][0]]
             for e in kept for t in e.trace_ids if t in turn_ids]
    names = ", ".join(INDEX_COLUMNS)  # one statement for all, as the writer inserts turns
    conn.exec_driver_sql(
        f"INSERT INTO span_archive_traces ({names}) SELECT {names} "
        f"FROM {json_rows(conn, span_archive_traces, INDEX_COLUMNS)} "
        "WHERE true ON CONFLICT DO NOTHING", (dumps(index),))  # WHERE: SQLite's parser


def move(conn: Connection, moved: Sequence[dict[str, Any]]) -> None:
    """Follow turns re-keyed to another conversation ({"b_id": turn, "b_conv": conversation})."""
    if moved:
        conn.execute(update(span_archive_traces)
                     .where(span_archive_traces.c.turn_id == bindparam("b_id"))
                     .values(conversation_id=bindparam("b_conv")), moved)


def conversation_entries(conn: Connection, ids: Sequence[int]) -> dict[int, list[str]]:
    """Archive id → the traces of conversations `ids` it holds, in the order stored."""
    x = span_archive_traces.c
    found: dict[int, list[str]] = {}
    for aid, trace in conn.execute(
        select(x.archive_id, x.trace_id).where(among(conn, x.conversation_id, sorted(ids)))
        .order_by(x.archive_id, x.trace_id)
    ):
        found.setdefault(aid, []).append(trace)
    return found


def load(conn: Connection, archive_ids: Sequence[int]) -> dict[int, bytes]:
    """Archive id → its compressed data."""
    if not archive_ids:
        return {}
    a = span_archive.c
    return {aid: bytes(data) for aid, data in conn.execute(
        select(a.id, a.data).where(among(conn, a.id, sorted(archive_ids))))}


def traces_of(conn: Connection, conversation_ids: Sequence[int]) -> dict[int, set[str]]:
    """Conversation id → its archived traces."""
    x = span_archive_traces.c
    found: dict[int, set[str]] = {}
    if conversation_ids:
        for cid, trace in conn.execute(select(x.conversation_id, x.trace_id).where(
                among(conn, x.conversation_id, sorted(conversation_ids)))):
            found.setdefault(cid, set()).add(trace)
    return found


def without(request: ExportTraceServiceRequest, traces: set[str]) -> ExportTraceServiceRequest:
    """The request with only the spans of `traces` (empty scopes and resources dropped)."""
    kept = ExportTraceServiceRequest()
    for rs in request.resource_spans:
        target_rs = None
        for ss in rs.scope_spans:
            spans = [s for s in ss.spans if s.trace_id.hex() in traces]
            if not spans:
                continue
            if target_rs is None:
                target_rs = kept.resource_spans.add()
                target_rs.resource.CopyFrom(rs.resource)
                target_rs.schema_url = rs.schema_url
            target_ss = target_rs.scope_spans.add()
            target_ss.scope.CopyFrom(ss.scope)
            target_ss.schema_url = ss.schema_url
            target_ss.spans.extend(spans)
    return kept


def forget(conn: Connection, conversation_ids: Sequence[int]) -> None:
    """Remove the archived spans of conversations being deleted (the caller owns the
    transaction): their index rows, the requests left with no trace, and their spans from the
    requests that still hold other conversations' traces."""
    x = span_archive_traces.c
    touched = sorted({aid for (aid,) in conn.execute(
        select(x.archive_id).where(among(conn, x.conversation_id, sorted(conversation_ids))))})
    if not touched:
        return
    conn.execute(delete(span_archive_traces).where(
        among(conn, x.conversation_id, sorted(conversation_ids))))
    left: dict[int, set[str]] = {}
    for aid, trace in conn.execute(
            select(x.archive_id, x.trace_id).where(among(conn, x.archive_id, touched))):
        left.setdefault(aid, set()).add(trace)
    a = span_archive.c
    gone = [aid for aid in touched if aid not in left]
    if gone:
        conn.execute(delete(span_archive).where(among(conn, a.id, gone)))
    for aid, data in load(conn, sorted(left)).items():
        rest = without(unpack(data), left[aid])
        count = sum(len(ss.spans) for rs in rest.resource_spans for ss in rs.scope_spans)
        # a new digest: a resend of the whole request is then archived whole again
        digest, data = _compressed(rest)
        same = conn.execute(select(a.id).where(a.digest == digest)).scalar()
        if same is None:
            conn.execute(update(span_archive).where(a.id == aid).values(
                digest=digest, span_count=count, data=data))
            continue
        # that content is stored already (a request of exactly these spans): keep that one
        conn.execute(delete(span_archive_traces).where(x.archive_id == aid, x.trace_id.in_(
            select(x.trace_id).where(x.archive_id == same))))
        conn.execute(update(span_archive_traces).where(x.archive_id == aid)
                     .values(archive_id=same))
        conn.execute(delete(span_archive).where(a.id == aid))


def size(conn: Connection) -> tuple[int, int, int]:
    """(requests, spans, compressed bytes) stored."""
    a = span_archive.c
    rows, spans, stored = conn.execute(
        select(func.count(), func.coalesce(func.sum(a.span_count), 0),
               func.coalesce(func.sum(func.length(a.data)), 0))).one()
    return int(rows), int(spans), int(stored)

