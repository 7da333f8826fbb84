"""The package as `python -m build` makes it: one version (tooltrail.__version__), the
Apache-2.0 license as an SPDX expression with its text shipped, py.typed for each package,
Python classifiers, no warnings from the build backend (they printed on every
`./scripts/serve`), and every file of the packages in both the wheel and the sdist (templates,
CSS, the migration template: an ordinary install without them answers 500 on /ui/)."""

from __future__ import annotations

import tarfile
import zipfile

import pytest

import tooltrail
from tests.dist import SOURCES, Dist, built, package_files


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    return built(tmp_path_factory)


def test_the_built_wheel(dist: Dist) -> None:
    backend_said = [line for line in dist.output.splitlines()
                    if "Warning" in line and "Location" not in line]  # pip's index notes aside
    assert not backend_said, backend_said
    with zipfile.ZipFile(dist.wheel) as archive:
        info = f"tooltrail-{tooltrail.__version__}.dist-info"
        metadata = archive.read(f"{info}/METADATA").decode()
        license_text = archive.read(f"{info}/licenses/LICENSE").decode()
    headers = metadata.split("\n\n", 1)[0].splitlines()
    assert f"Version: {tooltrail.__version__}" in headers
    assert "License-Expression: Apache-2.0" in headers and "License-File: LICENSE" in headers
    assert not any(h.startswith("Classifier: License ::") for h in headers)
    for version in ("3.11", "3.13"):
        assert f"Classifier: Programming Language :: Python :: {version}" in headers
    assert "Apache License\n                           Version 2.0, January 2004" in license_text
    assert "END OF TERMS AND CONDITIONS" in license_text


def test_every_package_file_is_shipped(dist: Dist) -> None:
    files = package_files()
    data = [f for f in files if not f.endswith(".py")]
    # the walk sees what the code loads (a walk finding nothing would pass anything)
    assert {"tooltrail/py.typed", "tooltrail/collector/py.typed", "tooltrail/matcher/py.typed",
            "tooltrail/migrations/script.py.mako", "tooltrail/collector/ui/static/ui.css",
            "tooltrail/collector/ui/templates/base.html"} <= set(data)
    with zipfile.ZipFile(dist.wheel) as archive:
        in_wheel = set(archive.namelist())
    with tarfile.open(dist.sdist) as archive:
        top = f"tooltrail-{tooltrail.__version__}/"
        in_sdist = {m.name.removeprefix(top) for m in archive.getmembers() if m.isfile()}
    # C sources are the extension's build input: in the sdist, compiled into the wheel
    assert [f for f in files if f not in in_wheel and not f.endswith(".c")] == []
    assert [f for f in files if f not in in_sdist] == []
    # the compiled span walk is built into the wheel (gcc is on every machine here)
    assert any(n.startswith("tooltrail/collector/extract/_wire") and n.endswith(".so")
               for n in in_wheel)
    # one import name: nothing is installed or shipped under the folders' own names
    assert {n.split("/")[0] for n in in_wheel} == {
        "tooltrail", f"tooltrail-{tooltrail.__version__}.dist-info"}
    assert {n.split("/")[0] for n in in_sdist} <= {
        "tooltrail", "tooltrail.egg-info", "PKG-INFO", "setup.cfg", *SOURCES}
