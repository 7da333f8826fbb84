"""Capture: LangChain 1.x `create_agent` + OpenInference, `HumanInTheLoopMiddleware` approvals
(LangGraph interrupts resumed with `Command(resume=...)` on the same thread_id): approved,
rejected, and never answered."""
import os
import runpy
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["CAPTURE_APPROVAL"] = "1"
os.environ["CAPTURE_OUT"] = str(HERE)
os.environ["CAPTURE_SERVICE"] = "tooltrail-capture-langchain-approval"
runpy.run_path(str(HERE.parent / "langchain_agent_openinference" / "capture.py"), run_name="__main__")
