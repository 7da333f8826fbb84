"""The wheel and the sdist, each installed into a fresh virtualenv outside the checkout (with
the project's constraints) and used from a directory that is not the checkout: `tooltrail
serve` on SQLite, one OTLP/HTTP request from the real SDK exporter, a scored result over REST,
a /ui/ page, `tooltrail check --html`. The agent project there has its own `collector` and
`matcher` packages and imports them beside tooltrail's recording helper, file exporter and
matcher API (`from tooltrail import ...`): tooltrail installs nothing under a generic name,
and its own code never imports one. The rest of the suite runs against the editable
install, which finds every file in the checkout whether or not a build would ship it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.dist import ROOT, built
from tooltrail.collector.bench.process import serve

pytestmark = pytest.mark.install

EXPECTATION = {
    "id": "smoke-refund",
    "selector": {"conversation": "smoke-*"},
    "match": "in_order",
    "calls": [{"name": "lookup_order", "arguments": {"order_id": 42}},
              {"name": "issue_refund"}],
}
SUITE = {"name": "smoke", "expectations": [EXPECTATION]}
# no PYTHONPATH (the checkout's packages would be imported instead of the installed ones)
CLEAN = {"PYTHONPATH": "", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def _env() -> dict[str, str]:
    return {**os.environ, **CLEAN}


def _install(venv: Path, artifact: Path) -> Path:
    """A fresh virtualenv with `artifact` installed; its bin directory."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
         "--constraint", str(ROOT / "constraints.txt"), str(artifact)],
        capture_output=True, text=True, timeout=900, env=_env(), cwd=venv, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return venv / "bin"


@pytest.fixture(scope="module")
def installs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    dist = built(tmp_path_factory)
    root = tmp_path_factory.mktemp("venvs")
    artifacts = {"wheel": dist.wheel, "sdist": dist.sdist}
    with ThreadPoolExecutor(2) as pool:  # pip mostly waits on the network and the disk
        bins = {kind: pool.submit(_install, root / kind, artifact)
                for kind, artifact in artifacts.items()}
        return {kind: future.result() for kind, future in bins.items()}


# the agent project's own packages, named as tooltrail's folders are
OWN_PACKAGES = {
    "collector": 'def collect_order(order_id):\n    return {"id": order_id, "status": "shipped"}\n',
    "matcher": 'def route(text):\n    return "refunds" if "refund" in text else "general"\n',
}


def _project(tmp_path: Path) -> Path:
    """An agent project's directory: its code, its own `collector` and `matcher` packages,
    its expectation and its suite."""
    project = tmp_path / "agent-project"
    project.mkdir()
    for name, code in OWN_PACKAGES.items():
        (project / name).mkdir()
        (project / name / "__init__.py").write_text(code)
    shutil.copy(Path(__file__).with_name("agent_project.py"), project / "agent.py")
    (project / "expectation.json").write_text(json.dumps(EXPECTATION))
    (project / "suite.json").write_text(json.dumps(SUITE))
    return project


def _wait_result(client: httpx.Client, key: str, timeout: float = 60) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    body: object = None
    while time.monotonic() < deadline:
        answer = client.get(f"/api/v1/conversations/{key}/results")
        if answer.status_code == 200:
            body = answer.json()
            for result in answer.json()["data"]:
                if result["expectation"] == EXPECTATION["id"]:
                    return dict(result)
        time.sleep(0.2)
    raise AssertionError(f"no result for {key} in {timeout} s; last answer: {body}")


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_an_ordinary_install_serves_scores_and_reports(
        kind: str, installs: dict[str, Path], tmp_path: Path) -> None:
    bin_dir = installs[kind]
    project = _project(tmp_path)
    database = f"sqlite:///{tmp_path / 'tooltrail.db'}"
    with (serve(database, "--settle-seconds", "0.3", "--worker-poll-seconds", "0.1",
                program=str(bin_dir / "tooltrail"), cwd=str(project), env=CLEAN) as server,
          httpx.Client(base_url=server.base_url, timeout=10) as client):
        created = client.post("/api/v1/expectations", json=EXPECTATION)
        assert created.status_code == 201, created.text
        agent = subprocess.run(
            [str(bin_dir / "python"), "agent.py", f"{server.base_url}/v1/traces",
             "spans.jsonl", "expectation.json"],
            capture_output=True, text=True, timeout=120, env=_env(), cwd=project,
            check=False)
        assert agent.returncode == 0, agent.stderr
        said = json.loads(agent.stdout)
        assert said["passed"] == [True]
        # each name from its own place: the project's packages, tooltrail's from the install
        assert said["own"] == [str(project / "collector" / "__init__.py"),
                               str(project / "matcher" / "__init__.py"), "refunds"]
        venv = str(bin_dir.parent)
        assert all(m.startswith(venv) for m in said["tooltrail"]), said["tooltrail"]
        result = _wait_result(client, "smoke-refund")
        assert result["passed"] is True, result
        page = client.get("/ui/conversations/smoke-refund")
        assert page.status_code == 200, page.text[:2000]
        assert page.headers["content-type"].startswith("text/html")
        assert "<!doctype html>" in page.text.lower() and "lookup_order" in page.text
        css = client.get("/ui/static/ui.css")
        assert css.status_code == 200 and len(css.text) > 100
    # run as `python -m tooltrail` from the project: its directory (and so its own
    # `collector` and `matcher`) is first on the path of the command and of its children
    check = subprocess.run(
        [str(bin_dir / "python"), "-m", "tooltrail", "check", "suite.json", "spans.jsonl",
         "--html", "out.html"],
        capture_output=True, text=True, timeout=120, env=_env(), cwd=project, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    report = (project / "out.html").read_text()
    assert "<!doctype html>" in report.lower() and "smoke-refund" in report
