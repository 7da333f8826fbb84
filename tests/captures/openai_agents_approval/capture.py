"""Capture: OpenAI Agents SDK + OpenInference, a `needs_approval=True` tool: the SDK's documented
human-in-the-loop loop (run -> result.interruptions -> state.approve / state.reject ->
Runner.run(agent, state)), approved, rejected, and never answered."""
import os
import runpy
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["CAPTURE_APPROVAL"] = "1"
os.environ["CAPTURE_OUT"] = str(HERE)
os.environ["CAPTURE_SERVICE"] = "tooltrail-capture-openai-agents-approval"
runpy.run_path(str(HERE.parent / "openai_agents_openinference" / "capture.py"), run_name="__main__")
