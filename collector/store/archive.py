"""The raw span archive: what is needed to extract a conversation again.

`pack` is pure and runs where extraction runs (the ingest worker processes, or inline): each
trace of a request becomes one entry, that request's spans of the trace re-serialised as an
ExportTraceServiceRequest and zlib-compressed, with a digest of the uncompressed bytes. `insert`
runs inside the writer's group commit (`persist.write_prepared`), so an acknowledged span's
archive is committed with its rows or not at all; a resent request is archived once (the
digest is unique per trace). Rows belong to a conversation, so retention and DELETE remove them
with it (`governance.retention.derived_tables`); a turn re-keyed to another conversation takes
its rows along (`move`).

Requests are archived as received, before redaction: `collector.config` refuses the archive
together with redaction rules, since it would keep what they remove.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from sqlalchemy import Connection, bindparam, func, select, update

from collector.store.bulk import among
from collector.store.tables import span_archive

LEVEL = 6  # zlib's default: spans compress ~5-10x; level 1 saves little time for much size


class Archived(NamedTuple):
    """One request's spans of one trace, ready to store."""

    trace_id: str
    span_count: int
    digest: str
    data: bytes  # zlib of a serialised ExportTraceServiceRequest


def _entry(trace_id: str, part: ExportTraceServiceRequest) -> Archived:
    raw = part.SerializeToString(deterministic=True)
    count = sum(len(ss.spans) for rs in part.resource_spans for ss in rs.scope_spans)
    return Archived(trace_id, count, hashlib.blake2b(raw, digest_size=16).hexdigest(),
                    zlib.compress(raw, LEVEL))


def pack(request: ExportTraceServiceRequest) -> tuple[Archived, ...]:
    """The archive entries of a decoded request, one per trace (pure)."""
    traces = {s.trace_id for rs in request.resource_spans for ss in rs.scope_spans
              for s in ss.spans}
    if not traces:
        return ()
    if len(traces) == 1:  # the common case: no need to rebuild the request
        return (_entry(next(iter(traces)).hex(), request),)
    from collector.ingest import split_by_trace  # ingest imports this module

    return tuple(_entry(part.resource_spans[0].scope_spans[0].spans[0].trace_id.hex(), part)
                 for part in split_by_trace(request))


def unpack(data: Iterable[bytes]) -> list[ExportTraceServiceRequest]:
    """Stored entries back as requests."""
    requests = []
    for blob in data:
        request = ExportTraceServiceRequest()
        request.ParseFromString(zlib.decompress(blob))
        requests.append(request)
    return requests


def insert(conn: Connection, entries: Iterable[Archived],
           turn_ids: dict[str, tuple[int, int]]) -> None:
    """Store the entries of traces that have a turn (turn key = trace id), skipping content
    already stored (the caller owns the transaction)."""
    from collector.store.persist import insert_ignore  # persist imports this module

    rows = [{"conversation_id": turn_ids[e.trace_id][1], "turn_id": turn_ids[e.trace_id][0],
             "trace_id": e.trace_id, "digest": e.digest, "span_count": e.span_count,
             "data": e.data}
            for e in entries if e.trace_id in turn_ids]
    if rows:
        rows.sort(key=lambda r: (r["trace_id"], r["digest"]))  # one lock order for all writers
        conn.execute(insert_ignore(conn, span_archive), rows)


def move(conn: Connection, moved: Sequence[dict[str, Any]]) -> None:
    """Follow turns re-keyed to another conversation ({"b_id": turn, "b_conv": conversation})."""
    if moved:
        conn.execute(update(span_archive).where(span_archive.c.turn_id == bindparam("b_id"))
                     .values(conversation_id=bindparam("b_conv")), moved)


def conversation_entries(conn: Connection, conversation_id: int) -> list[tuple[str, bytes]]:
    """(trace id, data) of a conversation's archive, in the order it was stored."""
    a = span_archive.c
    return [(t, bytes(d)) for t, d in conn.execute(
        select(a.trace_id, a.data).where(a.conversation_id == conversation_id).order_by(a.id))]


def archived_conversations(conn: Connection, ids: Sequence[int]) -> set[int]:
    """Those of `ids` that have an archive."""
    if not ids:
        return set()
    a = span_archive.c
    return {cid for (cid,) in conn.execute(
        select(a.conversation_id).where(among(conn, a.conversation_id, sorted(ids))).distinct())}


def size(conn: Connection) -> tuple[int, int, int]:
    """(entries, spans, compressed bytes) stored."""
    a = span_archive.c
    rows, spans, stored = conn.execute(
        select(func.count(), func.coalesce(func.sum(a.span_count), 0),
               func.coalesce(func.sum(func.length(a.data)), 0))).one()
    return int(rows), int(spans), int(stored)
