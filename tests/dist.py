"""The wheel and the sdist `python -m build` makes of this checkout, built once per test run
(the packaging and the install tests share them; xdist workers wait on one lock)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# what the sdist is built from: the build reads nothing else, and building in a copy keeps
# build/ and *.egg-info out of the checkout
SOURCES = ("pyproject.toml", "setup.py", "README.md", "LICENSE")
# the folders the packages are made of: tooltrail/ (the one import name) links the others in
PACKAGES = ("tooltrail", "collector", "matcher", "migrations")


@dataclass(frozen=True)
class Dist:
    wheel: Path
    sdist: Path
    output: str  # what the build printed (the backend's warnings included)


def package_files() -> list[str]:
    """Every file of the packages as installed (`tooltrail/collector/cli.py` for collector/cli.py;
    caches and the extension an editable install compiles in place aside: a build makes its
    own)."""
    found = [f"tooltrail/{path.relative_to(ROOT)}" for package in PACKAGES[1:]
             for path in (ROOT / package).rglob("*")]
    found += [str(path.relative_to(ROOT)) for path in (ROOT / PACKAGES[0]).iterdir()
              if not path.is_symlink()]
    return sorted(name for name in found
                  if (ROOT / name).is_file() and "__pycache__" not in name.split("/")
                  and not name.endswith(".so"))


def _build(out: Path) -> Dist:
    source = out / "src"
    source.mkdir()
    for name in SOURCES:
        shutil.copy(ROOT / name, source / name)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, source / package, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    # the sdist, then the wheel from the sdist: what pip does with an sdist from an index
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(source)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    (wheel,) = out.glob("tooltrail-*.whl")
    (sdist,) = out.glob("tooltrail-*.tar.gz")
    (out / "build.log").write_text(done.stdout + done.stderr)
    return Dist(wheel, sdist, done.stdout + done.stderr)


def built(factory: pytest.TempPathFactory) -> Dist:
    """The session's wheel and sdist, built by whichever worker asks first."""
    root = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # shared by the xdist workers of one run
    out = root / "dist"
    with (root / "dist.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (out / "build.log").is_file():
            (wheel,) = out.glob("tooltrail-*.whl")
            (sdist,) = out.glob("tooltrail-*.tar.gz")
            return Dist(wheel, sdist, (out / "build.log").read_text())
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        return _build(out)
