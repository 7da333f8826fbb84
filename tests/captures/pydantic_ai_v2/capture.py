"""Capture: same conversation as ../pydantic_ai, with the deprecated instrumentation format version 2
(InstrumentationSettings(version=2)) that older Pydantic AI releases emitted by default."""
import os
import runpy
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["PYDANTIC_AI_INSTR_VERSION"] = "2"
os.environ["CAPTURE_OUT"] = str(HERE)
os.environ["CAPTURE_SERVICE"] = "tooltrail-capture-pydantic-ai-v2"
runpy.run_path(str(HERE.parent / "pydantic_ai" / "capture.py"), run_name="__main__")
