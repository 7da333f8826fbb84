"""Capture: the ../openai_agents_openinference conversation, instrumented by
Traceloop/OpenLLMetry's opentelemetry-instrumentation-openai-agents."""
import os
import runpy
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["CAPTURE_INSTRUMENTATION"] = "traceloop"
os.environ["CAPTURE_OUT"] = str(HERE)
os.environ["CAPTURE_SERVICE"] = "tooltrail-capture-openai-agents-traceloop"
runpy.run_path(str(HERE.parent / "openai_agents_openinference" / "capture.py"), run_name="__main__")
