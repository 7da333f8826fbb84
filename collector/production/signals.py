"""Production signals, composed: each logical turn's contribution, from its reconciled calls.

The worker calls `record` for the conversations it has just claimed (settled and changed), in
its scoring transaction: their turns are read once through the scoring side's reconciled
trajectories (`collector.scorer`: each call once, explicit and traced merged; the ones scoring
read, else read without results and arguments, whose values no count needs: `outcomes`), and
the store keeps each turn's contribution and adds the differences to the hourly buckets
(`collector.store.production.replace_turns`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from sqlalchemy import Connection

from tooltrail.collector.capture.merge import logical_turns
from tooltrail.collector.production.counts import TurnSignal
from tooltrail.collector.scorer import NOT_EXECUTED, Outcome, outcomes
from tooltrail.collector.store.leases import ConversationFacts, TurnOrder, trajectory_calls
from tooltrail.collector.store.production import (
    HOUR,
    UNKNOWN,
    VERSION_ATTRIBUTE,
    KeptTurn,
    TurnMeta,
    replace_turns,
    turn_meta,
)
from tooltrail.matcher import Trajectory


def record(conn: Connection, facts: Sequence[ConversationFacts],
           paths: Mapping[int, Trajectory] | None = None) -> None:
    """Bring the signals of these conversations up to date with their stored turns and calls
    (`paths`: trajectories the caller has read already, of some or all of them; the others
    are read without their results, which signals never look at, and without their
    arguments, unless reconciling a conversation asks for them)."""
    if facts:
        replace_turns(conn, sorted(f.id for f in facts), contributions(conn, facts, paths))


def contributions(conn: Connection, facts: Sequence[ConversationFacts],
                  paths: Mapping[int, Trajectory] | None = None) -> list[KeptTurn]:
    """What `record` keeps for these conversations, read and composed but not written: the
    reading (a conversation's every turn and call) needs no lock, the keeping
    (`replace_turns`) is short. Their `facts` must have been read before this."""
    if not facts:
        return []
    ids = sorted(f.id for f in facts)
    seen = {cid: [[(c.name, c.error) for c in turn] for turn in path.turns]
            for cid, path in (paths or {}).items()}
    missing = [cid for cid in ids if cid not in seen]
    calls = trajectory_calls(conn, missing, results=False, arguments=False) if missing else {}
    # the calls read are every call of `ids` when no trajectory was given: their pending too
    order, meta = turn_meta(conn, ids, None if seen else calls)
    found, missing = outcomes({cid: order[cid] for cid in missing}, calls)
    seen.update(found)
    if missing:  # the conversations whose reconciliation asked for arguments
        calls = trajectory_calls(conn, missing, results=False)
        seen.update(outcomes({cid: order[cid] for cid in missing}, calls)[0])
    return list(turn_signals(facts, order, meta, seen))


def turn_signals(facts: Sequence[ConversationFacts], order: TurnOrder,
                 meta: Mapping[int, TurnMeta],
                 seen: Mapping[int, list[list[Outcome]]]) -> Iterable[KeptTurn]:
    """Each logical turn with its key and signal (turns in start order, as scored; `seen`:
    each conversation's calls per logical turn, as (name, error))."""
    names: dict[tuple[str, ...], str] = {}  # a turn's agents → the key's agent (few distinct)
    for f in facts:
        cid, service = f.id, f.service or UNKNOWN
        version = f.attributes.get(VERSION_ATTRIBUTE)
        version = str(version) if version is not None else UNKNOWN
        for (stored, explicit), calls in zip(
            logical_turns(order[cid]), seen[cid], strict=True
        ):
            if stored is None or explicit is None:
                first = stored if stored is not None else explicit
                assert first is not None
                start, agents, waiting = meta[first]
            else:
                first = stored
                a, b = meta[stored], meta[explicit]
                start, agents = min(a.start_ns, b.start_ns), a.agents + b.agents
                waiting = a.pending + b.pending
            agent = names.get(agents)
            if agent is None:
                agent = names[agents] = ",".join(sorted(set(agents)))
            tools: dict[str, int] = {}
            failed = unexecuted = 0
            for name, error in calls:
                tools[name] = tools.get(name, 0) + 1
                if error is not None:
                    if error == NOT_EXECUTED:
                        unexecuted += 1
                    else:
                        failed += 1
            signal = TurnSignal(len(calls), failed, unexecuted, waiting, tools)
            yield KeptTurn(first, cid, (f.project, service, version, agent,
                                        start // 1_000_000_000 // HOUR * HOUR), signal)
