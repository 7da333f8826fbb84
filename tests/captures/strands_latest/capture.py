"""Capture: same Strands conversation as ../strands, with
OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental (content in attributes)."""
import os
import runpy
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
os.environ["CAPTURE_OUT"] = str(HERE)
os.environ["CAPTURE_SERVICE"] = "tooltrail-capture-strands-latest"
runpy.run_path(str(HERE.parent / "strands" / "capture.py"), run_name="__main__")
