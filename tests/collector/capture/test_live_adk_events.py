"""Live: the real google-adk (the `test` extra) runs the ADK events capture script offline
(scripted model, an MCP server over stdio, a tool confirmation round trip) into a temporary
folder; the session it stores is read as the committed files are. Guards the reader against
what the installed ADK writes today, not only what it wrote when the files were captured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.collector.capture.test_capture_adk_events import EXPECTED, FOLDER, turns
from tooltrail.collector.capture.adk_events import read_events


def test_live_adk_session_reads_as_the_ground_truth(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(FOLDER / "capture.py")], cwd=FOLDER, capture_output=True,
        text=True, timeout=240, env={**os.environ, "CAPTURE_OUT": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    fresh = json.loads((tmp_path / "expected_events.json").read_text())
    assert fresh["turns"] == EXPECTED["turns"]
    for name, conversation in (("events.jsonl", fresh["conversation_id"]),
                               ("events.camel.json", fresh["conversation_id"]),
                               ("kagent_rows.jsonl", None)):
        reading = read_events((tmp_path / name).read_bytes(), conversation=conversation)
        assert turns(reading.batch) == [t["calls"] for t in EXPECTED["turns"]], name
        assert {i.conversation_key for i in reading.batch.traces} == {fresh["conversation_id"]}
