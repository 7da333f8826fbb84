"""The embedded worker runs in a child process of `serve`: supervised (restarted after a
SIGKILL, its counts on the server's /metrics) and never orphaned (it exits when the server is
killed)."""

from __future__ import annotations

import os
import re
import signal
import time

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

from tests.server import Server, running_server
from tests.spans import ToolStep, agent_turn, provider
from tooltrail.collector.processes import BACKGROUND_NICE

STARTED = re.compile(r"scoring worker process (\d+) started")
EXPECTATION = {"id": "wp", "match": "superset", "calls": [{"name": "lookup_order"}]}


def worker_pids(server: Server) -> list[int]:
    return [int(m.group(1)) for line in list(server.log) if (m := STARTED.search(line))]


def niced(pid: int, server: Server) -> bool:
    """`pid` runs BACKGROUND_NICE lower than the server (scoring yields the CPU to ingest)."""
    server_nice = os.getpriority(os.PRIO_PROCESS, server.process.pid)
    return os.getpriority(os.PRIO_PROCESS, pid) == min(19, server_nice + BACKGROUND_NICE)


def alive(pid: int) -> bool:
    """Running (a zombie waiting to be reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out: {what}")


def scored(server: Server, key: str) -> None:
    server.wait_for(f"/api/v1/conversations/{key}/results", lambda b: bool(b["data"]))


def metric(server: Server, line_start: str) -> float:
    with server.client() as client:
        text = client.get("/metrics").text
    values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
              if line.startswith(line_start)]
    return sum(values)


def test_killed_worker_is_restarted_and_its_counts_reach_metrics(database_url: str) -> None:
    with running_server(database_url) as server:
        wait(lambda: worker_pids(server), 20, "worker started")
        (first,) = worker_pids(server)
        assert first != server.process.pid
        wait(lambda: niced(first, server), 20, "worker at background priority")
        with server.client() as client:
            assert client.post("/api/v1/expectations", json=EXPECTATION).status_code == 201
        tp = provider(OTLPSpanExporter(endpoint=f"{server.base_url}/v1/traces"))
        agent_turn(tp, "wp-1", [ToolStep("lookup_order", {"order_id": 1}, {})])
        scored(server, "wp-1")
        wait(lambda: metric(server, "tooltrail_results_total") >= 1, 10, "results relayed")

        os.kill(first, signal.SIGKILL)
        wait(lambda: len(worker_pids(server)) == 2, 20, "worker restarted")
        assert alive(worker_pids(server)[1])
        wait(lambda: niced(worker_pids(server)[1], server), 20, "restarted at its priority")
        agent_turn(tp, "wp-2", [ToolStep("lookup_order", {"order_id": 2}, {})])
        scored(server, "wp-2")  # the new worker scores
        wait(lambda: metric(server, "tooltrail_results_total") >= 2, 10, "results relayed")
        assert metric(server, 'tooltrail_loop_errors_total{loop="worker_process"}') == 1
        tp.shutdown()


def test_worker_exits_when_the_server_is_killed(tmp_path: object) -> None:
    with running_server(f"sqlite:///{tmp_path}/t.db") as server:
        wait(lambda: worker_pids(server), 20, "worker started")
        (pid,) = worker_pids(server)
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(10)
        wait(lambda: not alive(pid), 10, "worker exited after its server was killed")


def test_thread_mode_scores_without_a_child(tmp_path: object) -> None:
    with running_server(f"sqlite:///{tmp_path}/t.db", "--no-worker-process") as server:
        with server.client() as client:
            assert client.post("/api/v1/expectations", json=EXPECTATION).status_code == 201
        tp = provider(OTLPSpanExporter(endpoint=f"{server.base_url}/v1/traces"))
        agent_turn(tp, "wp-thread", [ToolStep("lookup_order", {"order_id": 3}, {})])
        scored(server, "wp-thread")
        assert worker_pids(server) == []
        tp.shutdown()


def test_stop_is_seen_behind_other_messages_and_on_eof() -> None:
    from multiprocessing import Pipe

    from tooltrail.collector.worker_process import STOP, WAKE, _stop_asked

    recv, send = Pipe(duplex=False)
    send.send_bytes(STOP)
    send.send_bytes(WAKE)  # a wake after the stop must not keep the child polling forever
    assert _stop_asked(recv, 0.0) is True
    send.send_bytes(WAKE)
    assert _stop_asked(recv, 0.0) is False
    send.close()
    assert _stop_asked(recv, 0.0) is True  # the server is gone
    recv.close()
