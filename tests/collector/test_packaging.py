"""The package as pip builds it: one version (collector.__version__), the Apache-2.0 license
as an SPDX expression with its text shipped, py.typed for both packages, Python classifiers,
and no warnings from the build backend (they printed on every `./scripts/serve`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import collector

ROOT = Path(__file__).resolve().parents[2]


def test_the_built_wheel(tmp_path: Path) -> None:
    source = tmp_path / "src"  # a copy: an in-tree build would write build/ into the checkout
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        source.mkdir(exist_ok=True)
        shutil.copy(ROOT / name, source / name)
    for package in ("collector", "matcher", "migrations"):
        shutil.copytree(ROOT / package, source / package,
                        ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path),
         str(source)], capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stderr
    backend_said = [line for line in (done.stdout + done.stderr).splitlines()
                    if "Warning" in line and "Location" not in line]  # pip's index notes aside
    assert not backend_said, backend_said
    (wheel,) = tmp_path.glob("tooltrail-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = f"tooltrail-{collector.__version__}.dist-info"
        metadata = archive.read(f"{info}/METADATA").decode()
        license_text = archive.read(f"{info}/licenses/LICENSE").decode()
    assert {"collector/py.typed", "matcher/py.typed", "migrations/script.py.mako"} <= names
    headers = metadata.split("\n\n", 1)[0].splitlines()
    assert f"Version: {collector.__version__}" in headers
    assert "License-Expression: Apache-2.0" in headers and "License-File: LICENSE" in headers
    assert not any(h.startswith("Classifier: License ::") for h in headers)
    for version in ("3.11", "3.13"):
        assert f"Classifier: Programming Language :: Python :: {version}" in headers
    assert "Apache License\n                           Version 2.0, January 2004" in license_text
    assert "END OF TERMS AND CONDITIONS" in license_text
