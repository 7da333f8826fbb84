"""pyproject.toml's dependencies against the code: every module the code imports is installed
by the base dependencies (so every command the CLI offers runs where the CLI is installed),
except the `sdk` extra's, which only bench commands import, inside functions (they name the
extra when it is missing: test_cli.py); and every base dependency is used."""

from __future__ import annotations

import ast
import functools
import importlib.util
import os
import sys
import tomllib
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, distribution, distributions
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
OWN = "tooltrail"  # the one import name: collector/ is tooltrail.collector, and so on
# the code: the folders tooltrail/ links (its own modules are tooltrail/*.py)
FOLDERS = ("collector", "matcher", "migrations")
# dependencies no module imports by name, and who loads them
USED_INDIRECTLY = {
    "psycopg-binary": "psycopg's compiled implementation, loaded by psycopg",
    "httptools": "uvicorn's HTTP parser, chosen in cli.py (http='httptools')",
}


def imports(path: Path) -> Iterator[tuple[str, bool]]:
    """(module, inside a function) for each absolute import of a file, outside TYPE_CHECKING."""
    def walk(node: ast.AST, lazy: bool) -> Iterator[tuple[str, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and ast.unparse(child.test) in (
                    "TYPE_CHECKING", "typing.TYPE_CHECKING"):
                for other in child.orelse:
                    yield from walk(other, lazy)
                continue
            if isinstance(child, ast.Import):
                yield from ((alias.name, lazy) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                # `from opentelemetry import trace`: in a namespace package the name imported
                # is the module that some distribution installs
                top = importlib.util.find_spec(child.module)
                if top is not None and top.origin is None:
                    yield from ((f"{child.module}.{a.name}", lazy) for a in child.names)
                else:
                    yield child.module, lazy
            yield from walk(child, lazy or isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda))

    yield from walk(ast.parse(path.read_text(encoding="utf-8")), False)


def code_imports() -> dict[str, list[tuple[str, bool]]]:
    """Third-party module → the files importing it (relative path, lazily?)."""
    found: dict[str, list[tuple[str, bool]]] = {}
    files = [*(ROOT / OWN).glob("*.py"), *(p for f in FOLDERS for p in (ROOT / f).rglob("*.py"))]
    for path in sorted(files):
            for module, lazy in imports(path):
                top = module.split(".")[0]
                if top != OWN and top not in sys.stdlib_module_names:
                    found.setdefault(module, []).append((str(path.relative_to(ROOT)), lazy))
    return found


@functools.cache
def file_owners() -> dict[str, str]:
    """Each installed file → the distribution that installed it."""
    owners: dict[str, str] = {}
    for dist in distributions():
        name = canonicalize_name(dist.metadata["Name"])
        for file in dist.files or []:
            owners[os.path.normpath(str(dist.locate_file(file)))] = name
    return owners


def provider(module: str) -> str:
    """The distribution that installed `module` (for a namespace package: its first file)."""
    spec = importlib.util.find_spec(module)
    assert spec is not None, module
    if spec.origin is None:  # a namespace package: its files are in its subpackages
        places = spec.submodule_search_locations or []
        origin = next((str(path) for place in places for path in sorted(Path(place).iterdir())
                       if path.suffix == ".py"), None)
        if origin is None:
            firsts = sorted(p for place in places for p in Path(place).iterdir()
                            if (p / "__init__.py").exists())
            return provider(f"{module}.{firsts[0].name}")
        return file_owners()[os.path.normpath(origin)]
    return file_owners()[os.path.normpath(spec.origin)]


def closure(requirements: list[str], extras: frozenset[str] = frozenset()) -> set[str]:
    """The distributions `requirements` install (with their own requirements, recursively)."""
    seen: set[str] = set()
    todo = [(Requirement(r), extras) for r in requirements]
    while todo:
        requirement, active = todo.pop()
        env = [{"extra": e} for e in active] or [{"extra": ""}]
        if requirement.marker and not any(requirement.marker.evaluate(e) for e in env):
            continue
        name = canonicalize_name(requirement.name)
        if name == "tooltrail":  # the project's own extras (test = sdk + …)
            for extra in requirement.extras:
                todo += [(Requirement(r), frozenset()) for r in PROJECT["optional-dependencies"][
                    extra]]
            continue
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = distribution(name).requires or []
        except PackageNotFoundError:
            continue
        todo += [(Requirement(r), frozenset(requirement.extras)) for r in requires]
    return seen


BASE = closure(PROJECT["dependencies"])
SDK = closure(PROJECT["optional-dependencies"]["sdk"]) - BASE


def test_every_import_is_installed_by_the_base_dependencies() -> None:
    wrong = []
    for module, where in sorted(code_imports().items()):
        dist = provider(module)
        if dist in BASE:
            continue
        for path, lazy in where:
            if not (dist in SDK and lazy and path.startswith("collector/bench/")):
                wrong.append(f"{path} imports {module} (from {dist}): not a base dependency")
    assert not wrong, "\n".join(wrong)


def test_every_base_dependency_is_used() -> None:
    """Each declared dependency, and each package its requested extras add, is imported by the
    code or loaded on its behalf (USED_INDIRECTLY)."""
    imported = {provider(module) for module in code_imports()}
    unused = []
    for text in PROJECT["dependencies"]:
        requirement = Requirement(text)
        added = {  # what the requested extras add directly
            canonicalize_name(Requirement(r).name)
            for r in distribution(requirement.name).requires or []
            for extra in requirement.extras
            if (marker := Requirement(r).marker) is not None
            and marker.evaluate({"extra": extra}) and not marker.evaluate({"extra": ""})
        }
        for name in {canonicalize_name(requirement.name), *added}:
            if name not in imported and name not in USED_INDIRECTLY:
                unused.append(f"{name} (from {text!r})")
    assert not unused, unused
