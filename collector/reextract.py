"""Re-extraction: run today's extractor over the archived raw spans of stored conversations.

A job of kind `reextract` (`collector.store.jobs`, spec `{"kind": "reextract", "extract":
{"conversation_keys": [...], "keep_plumbing": bool}, "selector", "since", "until"}`) is split
in chunks like a rescoring job. For each conversation of a chunk that has an archive
(`collector.store.archive`), each archived request is extracted and prepared again exactly as
ingest did (`ingest.extract_safely`, `rows.prepare`), and compared with the calls stored from
those traces. Only when they differ — calls, or a turn that now belongs to another
conversation — are the traces' stored calls replaced, through the writer's own
`persist.write_prepared`, and the conversations recounted: that bumps their `change_seq`, so
the worker rescores them (and records their signals) as it does any changed conversation.
Conversations whose trajectory is the same are not written to, hence not rescored.

Calls that did not come from spans (`source` other than `otel`) and traces stored before the
archive was on are left as they are. `last_seen` is kept: re-extraction does not extend a
conversation's retention.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import orjson
from sqlalchemy import Connection, Engine, delete, select

from tooltrail.collector import conversation_view
from tooltrail.collector.extract import ExtractOptions
from tooltrail.collector.governance.redaction import load_policy
from tooltrail.collector.ingest import extract_safely
from tooltrail.collector.model import Batch
from tooltrail.collector.store import archive, jobs, leases
from tooltrail.collector.store.bulk import among
from tooltrail.collector.store.persist import merge_traces, refresh_conversations, write_prepared
from tooltrail.collector.store.rows import CALL_FIELDS, PreparedBatch, prepare
from tooltrail.collector.store.tables import conversations, tool_calls, turns
from tooltrail.matcher.selector import parse_selector

log = logging.getLogger(__name__)

KIND = "reextract"
JSON_FIELDS = frozenset(CALL_FIELDS.index(n) for n in ("arguments", "result", "attributes"))
SPAN = (CALL_FIELDS.index("trace_id"), CALL_FIELDS.index("span_id"))


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one chunk did: conversations re-extracted, changed (to be rescored), failed."""

    checked: int
    changed: list[int]
    failed: int


def options_of(spec: dict[str, Any]) -> ExtractOptions:
    """The extraction options a job was created with (the service's, at that time)."""
    given = spec.get("extract") or {}
    values = {f.name: given[f.name] for f in fields(ExtractOptions) if f.name in given}
    if "conversation_keys" in values:
        values["conversation_keys"] = tuple(values["conversation_keys"])
    return ExtractOptions(**values)


def policy_of(spec: dict[str, Any]) -> Callable[[Batch], Batch]:
    """What ingest's `prepare` applied (the span attributes kept; redaction rules and the
    archive exclude each other, collector.config), as the job was created."""
    return load_policy(None, None, (spec.get("extract") or {}).get("span_attributes", "all")).apply


def _comparable(row: Sequence[Any]) -> tuple[Any, ...]:
    """A call row in CALL_FIELDS order with its JSON decoded, whether read back or prepared."""
    return tuple(
        orjson.dumps(orjson.loads(v) if isinstance(v, str | bytes) else v,
                     option=orjson.OPT_SORT_KEYS) if i in JSON_FIELDS else
        (bool(v) if CALL_FIELDS[i] == "executed" else v)
        for i, v in enumerate(row)
    )


def _fresh(conn: Connection, ids: Sequence[int], options: ExtractOptions,
           redact: Callable[[Batch], Batch]) -> dict[int, list[PreparedBatch]]:
    """Conversation id → each archived request holding its traces, extracted and prepared as
    ingest did it (every request once, whichever of `ids` share it), kept to its traces."""
    traces = archive.traces_of(conn, ids)
    held = archive.conversation_entries(conn, ids)
    prepared = {aid: prepare(extract_safely(archive.unpack(data), options), redact)
                for aid, data in archive.load(conn, sorted(held)).items()}
    fresh: dict[int, list[PreparedBatch]] = {}
    for cid, mine in sorted(traces.items()):
        for aid in sorted(held):
            if mine.isdisjoint(held[aid]):
                continue
            batch = prepared[aid]
            fresh.setdefault(cid, []).append(replace(
                batch, calls=tuple(r for r in batch.calls if r[SPAN[0]] in mine),
                traces=tuple(t for t in batch.traces if t.trace_id in mine), archive=()))
    return fresh


def _changed(conn: Connection, cid: int, traces: list[str],
             batches: list[PreparedBatch]) -> bool:
    """Whether the calls or turns `batches` hold differ from what is stored for `traces`."""
    k = tool_calls.c
    stored = {_comparable(row) for row in conn.execute(
        select(*(k[name] for name in CALL_FIELDS))
        .where(k.conversation_id == cid, k.source == "otel", among(conn, k.trace_id, traces)))}
    fresh: dict[tuple[Any, Any], tuple[Any, ...]] = {}
    for batch in batches:  # a span stored twice is kept once, the first, as the writer does
        for row in batch.calls:
            fresh.setdefault((row[SPAN[0]], row[SPAN[1]]), _comparable(row))
    if stored != set(fresh.values()):
        return True
    c, t = conversations.c, turns.c
    current = {key: (rank, conversation) for key, rank, conversation in conn.execute(
        select(t.turn_key, t.key_rank, c.key).join(conversations, c.id == t.conversation_id)
        .where(among(conn, t.turn_key, traces)))}
    for key, info in merge_traces(batches).items():
        rank, conversation = current.get(key, (-1, None))
        if info.key_rank > rank and info.conversation_key != conversation:
            return True  # the writer will move the turn to its conversation
    return False


def reextract_conversation(conn: Connection, cid: int, batches: list[PreparedBatch]) -> bool:
    """Replace one conversation's rows from its re-extracted `batches` if they differ. True
    when they did (the conversation, and any a turn moved to, are marked changed)."""
    traces = sorted({t.trace_id for b in batches for t in b.traces}
                    | {r[SPAN[0]] for b in batches for r in b.calls})
    if not traces or not _changed(conn, cid, traces, batches):
        return False
    last_seen = conn.execute(
        select(conversations.c.last_seen).where(conversations.c.id == cid)).scalar_one()
    k = tool_calls.c
    conn.execute(delete(tool_calls).where(
        k.conversation_id == cid, k.source == "otel", among(conn, k.trace_id, traces)))
    write_prepared(conn, batches, last_seen, conversation_view.counts)
    # the writer counted its insertions onto counts that still held the deleted calls
    affected = {cid for (cid,) in conn.execute(
        select(turns.c.conversation_id).where(among(conn, turns.c.turn_key, traces)))}
    refresh_conversations(conn, affected, {}, last_seen, count_shown=conversation_view.counts)
    return True


def run_chunk(conn: Connection, chunk: jobs.Chunk, now: float) -> tuple[Outcome, int]:
    """Re-extract the conversations of a chunk that no one holds (the caller owns the
    transaction): (outcome, conversations left for later because they were busy)."""
    ids = jobs.chunk_conversations(conn, chunk)
    facts = leases.lock_free(conn, ids, now=now)
    busy = len(ids) - len(facts)
    selector = chunk.spec.get("selector")
    if selector is not None:
        chosen = parse_selector(selector)
        facts = [f for f in facts if chosen.matches(
            conversation=f.key, service=f.service, agents=f.agents, attributes=f.attributes)]
    changed: list[int] = []
    failed = 0
    for cid, batches in _fresh(conn, [f.id for f in facts], options_of(chunk.spec),
                                 policy_of(chunk.spec)).items():
        try:
            with conn.begin_nested():  # one bad conversation must not undo the chunk
                if reextract_conversation(conn, cid, batches):
                    changed.append(cid)
        except Exception:  # loop boundary: counted on the job, logged
            log.exception("re-extracting conversation %d failed", cid)
            failed += 1
    return Outcome(len(ids) - busy, changed, failed), busy


def work_chunk(engine: Engine, chunk: jobs.Chunk, owner: str, now: float) -> int:
    """Process one leased chunk of a `reextract` job; returns the work done."""
    with engine.begin() as conn:
        if not jobs.job_is_live(conn, chunk.job_id):
            return 1
        outcome, busy = run_chunk(conn, chunk, now)
        if busy:
            jobs.retry_chunk_soon(conn, chunk, owner, delay=0.5)
        else:
            jobs.finish_chunk(conn, chunk, owner, done=outcome.checked - outcome.failed,
                              failed=outcome.failed)
    if outcome.changed:
        log.info("re-extraction changed %d conversations (job %d); they are rescored",
                 len(outcome.changed), chunk.job_id)
    return max(outcome.checked + busy, 1)


def create_job(conn: Connection, options: ExtractOptions, *, selector: dict[str, Any] | None,
               since: float | None, until: float | None, span_attributes: str = "all") -> int:
    """Store a `reextract` job over the conversations of [since, until] (and `selector`)."""
    return jobs.create_job(conn, {
        "kind": KIND, "expectations": [], "selector": selector, "since": since, "until": until,
        # every ExtractOptions field, so that `options_of` gives back the options ingest used
        "extract": {**asdict(options), "conversation_keys": list(options.conversation_keys),
                    "span_attributes": span_attributes},
    })
