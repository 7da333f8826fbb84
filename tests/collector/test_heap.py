"""`heap.settle`: what is alive at start leaves the collector's view; later garbage does not."""

from __future__ import annotations

import gc
import weakref

from tooltrail.collector import heap


class Node:
    other: Node | None = None


def test_settle_freezes_what_is_alive_and_later_cycles_are_still_freed() -> None:
    kept = [[i] for i in range(10_000)]
    try:
        assert heap.settle() >= len(kept)
        assert all(o is not kept for o in gc.get_objects(generation=2))  # out of the walks
        a, b = Node(), Node()
        a.other, b.other = b, a  # a cycle made after start: only the collector frees it
        gone = weakref.ref(a)
        del a, b
        gc.collect()
        assert gone() is None
    finally:
        gc.unfreeze()
    assert any(o is kept for o in gc.get_objects(generation=2))
