"""Capture: Semantic Kernel's documented consent gate (a function invocation filter that asks the
user and, when refused, sets `context.result` without calling `next`), approved and refused,
with the diagnostics of ../semantic_kernel."""
import os
import runpy
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["CAPTURE_APPROVAL"] = "1"
os.environ.setdefault("CAPTURE_OUT", str(HERE))
os.environ.setdefault("CAPTURE_SERVICE", "tooltrail-capture-semantic-kernel-approval")
runpy.run_path(str(HERE.parent / "semantic_kernel" / "capture.py"), run_name="__main__")
