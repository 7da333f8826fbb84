"""What a long-running process of the collector does with its heap once it has started.

A process that has imported its modules and built its parts holds a million or so objects
that live as long as it does. CPython's full (oldest-generation) collection walks every one
of them, and a busy request loop triggers one every hundred or so young collections, so each
such pause grows with the size of the program, not of the work: a page or an ingest request
that happened to trigger it took several times its usual time. `settle()` collects once and
moves what is alive to the permanent generation (`gc.freeze`), so later collections walk only
what was allocated after start. Cycles among the frozen objects are never freed; nothing
built at start is meant to be.
"""

from __future__ import annotations

import gc


def settle() -> int:
    """Call once a process has started (its imports done, its long-lived parts built).
    Returns how many objects are now frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
