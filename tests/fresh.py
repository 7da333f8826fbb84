"""Run Python in a fresh interpreter: what a process has imported depends on everything it
ran before, and the test process has imported nearly everything."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def fresh_json(code: str) -> Any:
    """The JSON value `code` prints to stdout, run by `python -c` in a new process."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    return json.loads(out)
