"""Sampling the resident memory of a server process and its children (the ingest worker
processes) while a benchmark runs, and the CPU time each of them used."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from tooltrail.collector.processes import NAME_PREFIX

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes(pid: int) -> int:
    """Resident set size of one process (0 if it is gone)."""
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_SIZE
    except (OSError, ValueError, IndexError):
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


def tree(pid: int) -> list[int]:
    """`pid` and its descendants (at most 256)."""
    found = [pid]
    stack = children(pid)
    while stack and len(found) < 256:
        child = stack.pop()
        found.append(child)
        stack += children(child)
    return found


def process_cpu(pid: int, reaped: bool = False) -> float:
    """User + system CPU seconds of one process (and, with `reaped`, of its children that have
    exited and been waited for); 0 if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        # after the command: state is fields[0]; utime, stime, cutime, cstime are fields 11–14
        ticks = int(fields[11]) + int(fields[12])
        if reaped:
            ticks += int(fields[13]) + int(fields[14])
    except (OSError, ValueError, IndexError):
        return 0.0
    return ticks / CLOCK_TICKS


def role(pid: int) -> str:
    """What a child of the server is, by the name it gave itself (`die_with_parent`): ingest,
    worker, score; "other" for a child that named itself nothing of ours."""
    try:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "other"
    return name.removeprefix(NAME_PREFIX) if name.startswith(NAME_PREFIX) else "other"


def cpu_by_process(pid: int) -> dict[int, tuple[str, float]]:
    """Process id → (role, CPU seconds so far) of `pid` (role "server") and its descendants."""
    return {p: ("server" if p == pid else role(p), process_cpu(p)) for p in tree(pid)}


def cpu_by_role(
    after: dict[int, tuple[str, float]], before: dict[int, tuple[str, float]]
) -> dict[str, float]:
    """CPU seconds each role used between two `cpu_by_process` readings, process by process (a
    process is counted under the role it has at the second reading; one that has exited by
    then is not counted)."""
    used: dict[str, float] = {}
    for pid, (name, seconds) in after.items():
        spent = seconds - before.get(pid, (name, 0.0))[1]
        used[name] = used.get(name, 0.0) + max(spent, 0.0)
    return used


@dataclass
class MemorySampler:
    """Samples a process tree's memory in a thread, keeping the peaks: the server's own RSS and
    the tree's summed RSS every `interval` seconds, the tree's summed PSS every `pss_every`
    samples: reading PSS makes the kernel walk each process's page tables, milliseconds of CPU
    a read, on the cores the server under test shares, so it is read less often than RSS."""

    pid: int
    interval: float = 0.1
    pss_every: int = 5
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
        sample = 0
        while not self._stop.is_set():
            pids = tree(self.pid)
            sizes = [rss_bytes(p) for p in pids]
            self.peak_main = max(self.peak_main, sizes[0])
            self.peak_total = max(self.peak_total, sum(sizes))
            if sample % self.pss_every == 0:
                self.peak_pss = max(self.peak_pss, sum(pss_bytes(p) for p in pids))
            sample += 1
            self._stop.wait(self.interval)

    def stop(self) -> None:
        """Stop sampling."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)
