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


def test_paused_stops_collection_inside_only_and_frees_its_cycles_after() -> None:
    assert gc.isenabled()
    with heap.paused():
        assert not gc.isenabled()
        a, b = Node(), Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
        with heap.paused():  # nested: the outer block still decides
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.collect(0)
    assert gone() is None
    gc.disable()
    try:
        with heap.paused():
            pass
        assert not gc.isenabled()  # paused by someone else: left so
    finally:
        gc.enable()


def test_few_full_collections_spaces_full_passes_and_restores() -> None:
    before = gc.get_threshold()
    with heap.few_full_collections():
        young, middle, full = gc.get_threshold()
        assert (young, middle) == before[:2]
        assert full == max(before[2], heap.FULL_COLLECTION_EVERY)
    assert gc.get_threshold() == before
