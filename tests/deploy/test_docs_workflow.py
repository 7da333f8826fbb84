"""The copy-paste GitHub Actions workflow of docs/suites.md is a valid workflow, and the
`tooltrail check` command it runs parses."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_the_documented_workflow_is_a_valid_github_workflow() -> None:
    text = (ROOT / "docs" / "suites.md").read_text()
    (block,) = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "jobs:" in b]
    workflow = yaml.safe_load(block)
    # YAML 1.1 reads the key `on` as True; GitHub reads it as "on"
    workflow["on"] = workflow.pop(True)
    schema_file = (resources.files("check_jsonschema")
                   / "builtin_schemas/vendor/github-workflows.json")
    jsonschema.validate(workflow, json.loads(schema_file.read_text()))
    (gate,) = [s["run"] for s in workflow["jobs"]["tools"]["steps"]
               if "tooltrail check" in str(s.get("run", ""))]
    argv = shlex.split(gate)
    assert argv[:2] == ["tooltrail", "check"]
    # every option it passes exists: argparse exits 2 on an unknown one
    parsed = subprocess.run(
        [sys.executable, "-c", "import sys; from tooltrail.collector.suites.cli import "
         "check_parser; check_parser().parse_args(sys.argv[1:])", *argv[2:]],
        capture_output=True, text=True, timeout=60)
    assert parsed.returncode == 0, parsed.stderr
