"""Capture: same ADK conversation as ../adk (default schema v2), but the scripted model gives
no function-call ids, as Gemini does (CAPTURE_MODEL_IDS=0): ADK assigns `adk-<uuid>` ids."""
import os
import runpy
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["CAPTURE_MODEL_IDS"] = "0"
os.environ["CAPTURE_OUT"] = str(HERE)
os.environ["CAPTURE_SERVICE"] = "tooltrail-capture-adk-noids"
runpy.run_path(str(HERE.parent / "adk" / "capture.py"), run_name="__main__")
