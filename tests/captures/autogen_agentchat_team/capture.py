"""Capture: the ../autogen_agentchat agent in a `RoundRobinGroupChat` team on a
`SingleThreadedAgentRuntime` given the tracer provider (AutoGen's tracing guide), same script."""
import os
import runpy
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["CAPTURE_TEAM"] = "1"
os.environ.setdefault("CAPTURE_OUT", str(HERE))
os.environ.setdefault("CAPTURE_SERVICE", "tooltrail-capture-autogen-team")
runpy.run_path(str(HERE.parent / "autogen_agentchat" / "capture.py"), run_name="__main__")
