"""What a process of the collector does with its heap: a long-running one once it has started
(`settle`), a batch command while it runs (`paused`, `few_full_collections`).

A process that has imported its modules and built its parts holds a million or so objects
that live as long as it does. CPython's full (oldest-generation) collection walks every one
of them, and a busy request loop triggers one every hundred or so young collections, so each
such pause grows with the size of the program, not of the work: a page or an ingest request
that happened to trigger it took several times its usual time. `settle()` collects once and
moves what is alive to the permanent generation (`gc.freeze`), so later collections walk only
what was allocated after start. Cycles among the frozen objects are never freed; nothing
built at start is meant to be.

A batch command (`tooltrail check`) allocates what it keeps to its end (the store of every
conversation read) and, step by step, large values freed by reference counting when the step is
done (a body's parsed JSON, a chunk's results). Young collections during a step walk all of its
values, alive until its end, and find nothing: the step runs `paused`. Under the default
thresholds a full pass runs whenever a quarter more objects have survived into the oldest
generation, as they do while the store grows, and walks them all each time:
`few_full_collections` spaces them out. Young collections still collect cyclic garbage, which
dies young.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

FULL_COLLECTION_EVERY = 100  # young collections between two full ones (the default: 10)


def settle() -> int:
    """Call once a process has started (its imports done, its long-lived parts built).
    Returns how many objects are now frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection inside the block: one step of a single-threaded command, whose
    allocations live until the step ends or are freed by reference counting. Garbage made
    inside waits for the first collection after the block, which walks what the step left
    alive: free the step's values before leaving it."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@contextlib.contextmanager
def few_full_collections() -> Iterator[None]:
    """Inside the block, full passes are FULL_COLLECTION_EVERY young collections apart (never
    closer than before); the thresholds are restored on leaving."""
    before = gc.get_threshold()
    gc.set_threshold(before[0], before[1], max(before[2], FULL_COLLECTION_EVERY))
    try:
        yield
    finally:
        gc.set_threshold(*before)
