"""Capture: same ADK conversation as ../adk, with ADK's legacy telemetry schema
(ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1: `invocation` / `call_llm` spans, gcp.vertex.agent.* content keys)."""
import os
import runpy
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN"] = "1"
os.environ["CAPTURE_OUT"] = str(HERE)
os.environ["CAPTURE_SERVICE"] = "tooltrail-capture-adk-legacy"
runpy.run_path(str(HERE.parent / "adk" / "capture.py"), run_name="__main__")
