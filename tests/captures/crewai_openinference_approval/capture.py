"""Capture: CrewAI's documented tool approval gate (a before-tool-call hook asking the user,
`context.request_human_input`, returning False to block), approved and refused, under
OpenInference's event-listener mode (../crewai_openinference_events), which has the LLM spans
whose input messages show the refusal."""
import os
import runpy
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["CAPTURE_APPROVAL"] = "1"
os.environ["CAPTURE_CREWAI_EVENT_LISTENER"] = "1"
os.environ.setdefault("CAPTURE_OUT", str(HERE))
os.environ.setdefault("CAPTURE_SERVICE", "tooltrail-capture-crewai-approval")
runpy.run_path(str(HERE.parent / "crewai_openinference" / "capture.py"), run_name="__main__")
