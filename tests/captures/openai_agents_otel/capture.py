"""Capture: the ../openai_agents_openinference conversation, instrumented by
the official OTel GenAI instrumentation (opentelemetry-instrumentation-genai-openai-agents
+ opentelemetry-instrumentation-genai-openai for the LLM spans), content capture on."""
import os
import runpy
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["CAPTURE_INSTRUMENTATION"] = "otel"
os.environ["CAPTURE_OUT"] = str(HERE)
os.environ["CAPTURE_SERVICE"] = "tooltrail-capture-openai-agents-otel"
runpy.run_path(str(HERE.parent / "openai_agents_openinference" / "capture.py"), run_name="__main__")
