"""collector.processes: the one pool and "die with the parent" of the ingest pool and the
scoring worker's child — calls run in a child, a child that dies is replaced, and children
exit when their parent is SIGKILLed."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest

from tooltrail.collector.bench.memory import cpu_by_process, cpu_by_role, role
from tooltrail.collector.errors import Overloaded
from tooltrail.collector.extract import ExtractOptions
from tooltrail.collector.ingest import Offload, Pipeline
from tooltrail.collector.metrics import Metrics
from tooltrail.collector.processes import ChildDied, DeadlineChildren, OverDeadline, ProcessPool
from tooltrail.collector.store.rows import prepare


def pid() -> int:
    return os.getpid()


def name_of(fn: Any) -> str:
    return str(fn.__name__)


def die(*_: Any) -> Any:
    os.kill(os.getpid(), signal.SIGKILL)


def boom() -> None:
    raise ValueError("bad input")


def spin() -> None:
    while True:
        pass


def test_deadline_children_reuse_a_child_and_kill_one_past_its_deadline() -> None:
    children = DeadlineChildren(1, "test")
    try:
        first = children.call(30.0, pid)
        assert first != os.getpid() and children.call(30.0, pid) == first  # kept idle
        with pytest.raises(ValueError, match="bad input"):  # raised as if it ran here
            children.call(30.0, boom)
        assert children.call(30.0, pid) == first
        with pytest.raises(OverDeadline):
            children.call(0.05, spin)
        assert not alive(first)
        with pytest.raises(ChildDied):
            children.call(30.0, die)
        assert children.call(30.0, pid) not in (first, os.getpid())
    finally:
        children.close()


def test_a_child_starts_with_what_it_imported_out_of_the_collectors_generations() -> None:
    """What a pool child holds once started (modules, its context) is frozen (`heap.settle`):
    the collections its calls' objects trigger do not traverse it."""
    import gc

    async def scenario() -> int:
        async with ProcessPool(1, "test") as pool:
            return await pool.run(gc.get_freeze_count)

    assert asyncio.run(scenario()) > 1000  # every module's objects, not a handful


def test_the_context_is_given_once_and_imports_its_modules_as_each_child_starts() -> None:
    """The ingest pool's children import what the pipeline needs before the server is ready,
    not during the first requests (seconds each on a loaded machine), and keep the one
    context they were given for every call (its caches live as long as the child)."""
    from tooltrail.collector.store import archive

    loaded = "'tooltrail.collector.store.archive' in __import__('sys').modules"  # eval: a builtin

    async def scenario() -> None:
        async with ProcessPool(1, "test") as pool:
            assert await pool.run(eval, loaded) is False
        async with ProcessPool(1, "test", context=archive.pack) as pool:
            assert await pool.run(eval, loaded) is True
            first = await pool.run_with_context(id)
            assert await pool.run_with_context(id) == first  # one object, not one per call
            assert await pool.run_with_context(name_of) == "pack"
            with pytest.raises(ChildDied):
                await pool.run(die)
            assert await pool.run(eval, loaded) is True  # its replacement is given it too
            assert await pool.run_with_context(name_of) == "pack"

    asyncio.run(scenario())


def test_children_are_named_for_their_role_and_their_cpu_is_read_by_role() -> None:
    """Each child names itself (`ps`, `top`, /proc/PID/comm), and `tooltrail bench ingest`
    sums CPU by those names: a busy child's seconds land under its role, not the server's."""

    async def scenario() -> None:
        async with ProcessPool(1, "ingest") as pool:
            child = await pool.run(pid)
            before = cpu_by_process(os.getpid())
            await pool.run(busy, 0.3)
            used = cpu_by_role(cpu_by_process(os.getpid()), before)
            assert role(child) == "ingest"
            assert used["ingest"] >= 0.2, used
            assert used["server"] < 0.2, used  # this process waited meanwhile

    asyncio.run(scenario())
    children = DeadlineChildren(1, "score")
    try:
        assert role(children.call(30.0, pid)) == "score"
    finally:
        children.close()
    assert role(os.getpid()) == "other"  # not one of ours: the test runner


def busy(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_a_call_runs_in_a_child_and_a_dead_child_is_replaced() -> None:
    async def scenario() -> None:
        async with ProcessPool(1, "test") as pool:
            first = await pool.run(pid)
            assert first != os.getpid()
            with pytest.raises(ChildDied):
                await pool.run(die)
            second = await pool.run(pid)
            assert second not in (first, os.getpid())
        assert not pool.running
        with pytest.raises(RuntimeError):
            await pool.run(pid)

    asyncio.run(scenario())


def test_an_ingest_child_dying_is_a_retryable_overload_counted() -> None:
    metrics = Metrics()
    pipeline = Pipeline(decode=die, prepare=prepare, options=ExtractOptions(), limit=10**6)

    async def scenario() -> None:
        async with Offload(pipeline, 1, 0, metrics) as offload:
            with pytest.raises(Overloaded, match="ingest worker process died"):
                await offload.run(b"x" * 10, "application/x-protobuf", None)

    asyncio.run(scenario())
    assert metrics.registry.get_sample_value(
        "tooltrail_loop_errors_total", {"loop": "ingest_worker"}) == 1


PARENT = textwrap.dedent("""
    import asyncio, sys
    from tooltrail.collector.processes import ProcessPool
    from tests.collector.ingest.test_processes import pid

    async def main():
        async with ProcessPool(2, "test") as pool:
            pids = {await pool.run(pid) for _ in range(8)}
            print(" ".join(map(str, pids)), flush=True)
            await asyncio.sleep(60)

    asyncio.run(main())
""")


def alive(child: int) -> bool:
    try:
        with open(f"/proc/{child}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_children_exit_when_the_parent_is_sigkilled() -> None:
    with subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE,
                          text=True) as parent:
        try:
            assert parent.stdout is not None
            children = [int(p) for p in parent.stdout.readline().split()]
            assert children and all(alive(c) for c in children)
        finally:
            parent.kill()
            parent.wait(10)
    deadline = time.monotonic() + 10
    while any(alive(c) for c in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(c) for c in children)
