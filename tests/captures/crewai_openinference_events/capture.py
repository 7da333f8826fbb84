"""Capture: ../crewai_openinference rerun with the instrumentation's event-listener mode
(`CrewAIInstrumentor().instrument(use_event_listener=True)`): spans built from CrewAI's event bus,
including LLM spans from the LLM call events."""
import os
import runpy
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["CAPTURE_CREWAI_EVENT_LISTENER"] = "1"
os.environ.setdefault("CAPTURE_OUT", str(HERE))
os.environ.setdefault("CAPTURE_SERVICE", "tooltrail-capture-crewai-events")
runpy.run_path(str(HERE.parent / "crewai_openinference" / "capture.py"), run_name="__main__")
