"""Differential run: this tree's extraction gives the same Batch as the implementation it
replaced (e2d4071, which turned every span's attributes into a dict), on every capture in
tests/captures (protobuf and JSON, default options and keep_plumbing) and on a seeded random
corpus of OTLP requests (`extract_corpus`).

`extract_digests.txt` holds SHA-256 digests of that implementation's outcomes (calls with all
their fields, traces, rejected and unextracted spans, span count, lossy counts — or the
exception raised), one per capture and option, then one per 100 corpus requests of seed 20,
written by `python -m tests.collector.extract.extract_corpus --digests` on e2d4071, and rewritten on
the merge that brought this implementation in, from the tree just before it (projects, approvals
and new captures included): both gave the same digests. A change that alters
any outcome changes a digest; regenerate the file only for an intended change of behaviour
(a convention fixed or added), and say so in the commit.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from pathlib import Path

import pytest

from tests.collector.extract import extract_corpus as corpus
from tooltrail.collector.extract import extract

DIGESTS = Path(__file__).with_name("extract_digests.txt")
SEED, CHUNK = 20, 100


def _recorded() -> dict[str, str]:
    return dict(line.split() for line in DIGESTS.read_text().splitlines() if line.strip())


def test_captures_equal_the_recorded_digests() -> None:
    want = {k: v for k, v in _recorded().items() if not k.startswith("corpus:")}
    got = {label: hashlib.sha256(text.encode()).hexdigest()
           for path in corpus.capture_files() for label, text in corpus.capture_outcomes(path)}
    assert len(got) == 2 * len(corpus.capture_files()) >= 80
    assert sorted(got) == sorted(want), "a capture was added or removed: regenerate the digests"
    assert [k for k in got if got[k] != want[k]] == []


def test_corpus_equals_the_recorded_digests() -> None:
    want = [v for k, v in _recorded().items() if k.startswith(f"corpus:{SEED}:")]
    assert len(want) >= 30
    got = list(corpus.digests(SEED, len(want) * CHUNK, CHUNK))
    bad = [i for i, (g, w) in enumerate(zip(got, want, strict=True)) if g != w]
    assert bad == [], f"requests {[(i * CHUNK, (i + 1) * CHUNK) for i in bad]} changed"


@pytest.fixture(scope="module")
def corpus_counts() -> Counter[str]:
    counts: Counter[str] = Counter()
    for index in range(400):
        req, options = corpus.request(random.Random(f"{SEED}:{index}"))
        try:
            batch = extract(req, options)
        except Exception as exc:  # counted as an outcome of the corpus
            counts[f"raises {type(exc).__name__}"] += 1
            continue
        counts.update(f"convention {c.convention}" for c in batch.calls)
        counts.update(f"status {c.status}" for c in batch.calls)
        counts.update(f"rank {t.key_rank}" for t in batch.traces)
        counts.update("agent root" for t in batch.traces if t.has_agent_root)
        counts.update(f"rejected {r.reason.split()[0]}" for r in batch.rejected)
        counts["unextracted"] += len(batch.unextracted)
        counts.update({f"lossy {kind}": n for kind, n in batch.lossy})
    return counts


def test_the_corpus_exercises_every_outcome(corpus_counts: Counter[str]) -> None:
    """Every tool convention and request source, each call status and key rank, rejected and
    unextracted spans, and every lossy kind occur in the corpus's first requests."""
    tools = ("mcp", "genai", "openinference", "traceloop", "vercel", "pydantic_ai")
    sources = ("genai", "openinference", "openinference.output", "traceloop", "vercel",
               "genai.events", "adk")
    wanted = [
        *(f"convention {c}" for c in tools), *(f"convention {s}.request" for s in sources),
        *(f"status {s}" for s in ("ok", "error", "pending", "rejected", "requested")),
        "rank 0", "rank 1", "rank 2", "agent root", "unextracted",
        "rejected trace_id", "rejected span_id", "rejected parent_span_id",
        "rejected start_time_unix_nano", "rejected end_time_unix_nano", "rejected conversation",
        *(f"lossy {k}" for k in ("non_finite", "big_int", "duplicate_key", "too_deep",
                                 "invalid_text")),
    ]
    assert [w for w in wanted if not corpus_counts[w]] == []
