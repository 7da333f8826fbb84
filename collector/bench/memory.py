"""Sampling the resident memory of a server process and its children (the ingest worker
processes) while a benchmark runs, and the CPU time each of them used."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from collector.processes import NAME_PREFIX

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def rss_bytes(pid: int) -> int:
    """Resident set size of one process (0 if it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def pss_bytes(pid: int) -> int:
    """Proportional set size (shared pages split between their users; 0 if gone)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def children(pid: int) -> list[int]:
    """Direct children of `pid` (Linux /proc)."""
    found: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            text = (task / "children").read_text().split()
            found += [int(t) for t in text]
    except (OSError, ValueError):
        pass
    return found


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of one process so far (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime
    except (OSError, ValueError, IndexError):
        return 0.0


def role(pid: int) -> str:
    """What a child of the server is, by the name it gave itself (`die_with_parent`): ingest,
    worker, score; "other" for a child that named itself nothing of ours."""
    try:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "other"
    return name.removeprefix(NAME_PREFIX) if name.startswith(NAME_PREFIX) else "other"


def tree_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """Process id → (role, CPU seconds so far) of `pid` (role "server") and its descendants."""
    found = {pid: ("server", cpu_seconds(pid))}
    stack = children(pid)
    while stack and len(found) < 256:
        child = stack.pop()
        found[child] = (role(child), cpu_seconds(child))
        stack += children(child)
    return found


def cpu_by_role(
    after: dict[int, tuple[str, float]], before: dict[int, tuple[str, float]]
) -> dict[str, float]:
    """CPU seconds each role used between two `tree_cpu` readings, process by process (a
    process is counted under the role it has at the second reading; one that has exited by
    then is not counted)."""
    used: dict[str, float] = {}
    for pid, (name, seconds) in after.items():
        spent = seconds - before.get(pid, (name, 0.0))[1]
        used[name] = used.get(name, 0.0) + max(spent, 0.0)
    return used


def tree_rss(pid: int) -> tuple[int, int, int]:
    """(RSS of `pid`, RSS summed over `pid` and its descendants, PSS summed likewise)."""
    own = rss_bytes(pid)
    total = own
    pss = pss_bytes(pid)
    stack = children(pid)
    seen = 0
    while stack and seen < 256:
        child = stack.pop()
        seen += 1
        total += rss_bytes(child)
        pss += pss_bytes(child)
        stack += children(child)
    return own, total, pss


@dataclass
class MemorySampler:
    """Samples a process tree's RSS every `interval` seconds in a thread, keeping the peaks."""

    pid: int
    interval: float = 0.1
    peak_main: int = 0
    peak_total: int = 0
    peak_pss: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> MemorySampler:
        """Start sampling."""
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def reset(self) -> None:
        """Forget the peaks so far."""
        self.peak_main = self.peak_total = self.peak_pss = 0

    def _run(self) -> None:
        while not self._stop.is_set():
            own, total, pss = tree_rss(self.pid)
            self.peak_main = max(self.peak_main, own)
            self.peak_total = max(self.peak_total, total)
            self.peak_pss = max(self.peak_pss, pss)
            self._stop.wait(self.interval)

    def stop(self) -> None:
        """Stop sampling."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)
