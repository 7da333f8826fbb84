"""Capture: the OpenAI Agents SDK approval round trip (../openai_agents_approval) under
Traceloop/OpenLLMetry's opentelemetry-instrumentation-openai-agents (as ../openai_agents_traceloop)."""
import os
import runpy
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["CAPTURE_APPROVAL"] = "1"
os.environ["CAPTURE_INSTRUMENTATION"] = "traceloop"
os.environ["CAPTURE_OUT"] = str(HERE)
os.environ["CAPTURE_SERVICE"] = "tooltrail-capture-openai-agents-traceloop-approval"
runpy.run_path(str(HERE.parent / "openai_agents_openinference" / "capture.py"), run_name="__main__")
