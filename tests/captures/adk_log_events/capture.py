"""Capture: same ADK conversation as ../adk (default schema v2), with content capture
EVENT_ONLY: the tool arguments, results and the model's requests reach only OTel log records
(logs.otlp.pb/json, from a global LoggerProvider as the OTel docs set one up), not the spans."""
import os
import runpy
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "EVENT_ONLY"
os.environ["CAPTURE_LOGS"] = "1"
os.environ["CAPTURE_OUT"] = str(HERE)
os.environ["CAPTURE_SERVICE"] = "tooltrail-capture-adk-log-events"
runpy.run_path(str(HERE.parent / "adk" / "capture.py"), run_name="__main__")
