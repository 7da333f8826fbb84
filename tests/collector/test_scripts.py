"""./scripts/serve installs the package, with CI's pinned versions (constraints.txt), only when
a build input (pyproject.toml, setup.py, the compiled walk's C source) or constraints.txt changed
since its last install (the install is editable: Python code changes need none). The script runs
for real, in a copy of the checkout, with a virtualenv whose python and tooltrail record how they
were called (a real install takes a minute: its timing is measured by hand, not by tests)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def fake_venv(venv: Path, calls: Path, pip_fails: bool = False) -> None:
    (venv / "bin").mkdir(parents=True)
    for name, code in (("python", 1 if pip_fails else 0), ("tooltrail", 0)):
        path = venv / "bin" / name
        path.write_text(f'#!/bin/sh\necho "{name} $*" >> "{calls}"\nexit {code}\n')
        path.chmod(path.stat().st_mode | stat.S_IXUSR)


# What scripts/venv hashes to decide whether to install: the build's inputs (the compiled walk's
# source and its build script among them) and the pins.
BUILD_INPUTS = ("pyproject.toml", "setup.py", "collector/extract/_wire.c", "constraints.txt")


def copy_checkout(checkout: Path) -> None:
    (checkout / "scripts").mkdir(parents=True)
    for script in ("serve", "venv"):  # serve sets up its virtualenv with scripts/venv
        shutil.copy2(ROOT / "scripts" / script, checkout / "scripts" / script)
    for name in BUILD_INPUTS:
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, checkout / name)


def serve(checkout: Path, venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(checkout / "scripts" / "serve"), *args], capture_output=True,
                          text=True, timeout=60, check=False, env={**os.environ, "VENV": str(venv)})


def test_serve_installs_only_when_pyproject_changed(tmp_path: Path) -> None:
    checkout, venv, calls = tmp_path / "checkout", tmp_path / "venv", tmp_path / "calls"
    copy_checkout(checkout)
    fake_venv(venv, calls)

    def run() -> list[str]:
        calls.unlink(missing_ok=True)
        done = serve(checkout, venv, "--http-port", "0")
        assert done.returncode == 0, done.stderr
        return calls.read_text().splitlines()

    install = "python -m pip install --quiet --constraint constraints.txt -e .[sdk]"
    assert run() == ["python -m pip install --quiet --upgrade pip", install,
                     "tooltrail serve --http-port 0"]
    assert run() == ["tooltrail serve --http-port 0"]  # a restart: nothing installed
    with (checkout / "pyproject.toml").open("a") as pyproject:
        pyproject.write("# a new dependency, say\n")
    assert install in run()
    assert run() == ["tooltrail serve --http-port 0"]
    with (checkout / "constraints.txt").open("a") as constraints:
        constraints.write("# a new pin, say\n")  # CI's versions changed: installed again
    assert install in run()
    assert run() == ["tooltrail serve --http-port 0"]
    with (checkout / "collector/extract/_wire.c").open("a") as source:
        source.write("/* the compiled walk changed */\n")  # the extension is built again
    assert install in run()
    assert run() == ["tooltrail serve --http-port 0"]


def test_a_failed_install_is_tried_again(tmp_path: Path) -> None:
    checkout, venv, calls = tmp_path / "checkout", tmp_path / "venv", tmp_path / "calls"
    copy_checkout(checkout)
    fake_venv(venv, calls, pip_fails=True)
    for _ in range(2):
        assert serve(checkout, venv).returncode != 0
    assert calls.read_text().count("--upgrade pip") == 2
    assert "tooltrail" not in calls.read_text()
