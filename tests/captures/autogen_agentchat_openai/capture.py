"""Capture: ../autogen_agentchat with the whole setup of AutoGen's tracing guide, its OpenAI
instrumentation included (OpenAIChatCompletionClient over a mock transport), same script."""
import os
import runpy
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["CAPTURE_OPENAI"] = "1"
os.environ.setdefault("CAPTURE_OUT", str(HERE))
os.environ.setdefault("CAPTURE_SERVICE", "tooltrail-capture-autogen-openai")
runpy.run_path(str(HERE.parent / "autogen_agentchat" / "capture.py"), run_name="__main__")
