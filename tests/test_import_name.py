"""One import name: `tooltrail`. Its public names are the recording helper, the file exporter
and the matcher's API, each loaded on first use; nothing in the code imports a module by a
folder's own name (`collector`, `matcher`, `migrations`), in this process or in a fresh one,
and no file of the tree is left for scripts/dev/rename_imports.py to rewrite (an unconverted
file merged from elsewhere fails here). tests/install uses it from an agent project that has
its own `collector` and `matcher` packages."""
# rename_imports: skip (the samples below hold the old names on purpose)

from __future__ import annotations

import importlib.util
import json
import pkgutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import tooltrail
import tooltrail.collector
import tooltrail.matcher
from tests.fresh import fresh_json

ROOT = Path(__file__).resolve().parents[1]
OLD = ("collector", "matcher", "migrations")


def test_every_public_name_is_its_home_modules_object() -> None:
    assert tooltrail.__all__ == sorted(tooltrail.__all__)
    assert set(tooltrail.matcher.__all__) <= set(tooltrail.__all__)
    from tooltrail.collector.capture.record import agent_turn
    from tooltrail.collector.otlp_file import OTLPJsonLinesSpanExporter
    assert tooltrail.agent_turn is agent_turn
    assert tooltrail.OTLPJsonLinesSpanExporter is OTLPJsonLinesSpanExporter
    for name in tooltrail.matcher.__all__:
        assert getattr(tooltrail, name) is getattr(tooltrail.matcher, name), name
    assert set(tooltrail.__all__) <= set(dir(tooltrail))
    try:
        tooltrail.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("an unknown name resolved")


def test_importing_tooltrail_or_the_matcher_loads_no_more_than_asked() -> None:
    """The names are loaded on first use: the pure matcher stays free of the service."""
    code = ("import json, sys; import {}; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('tooltrail'))))")
    assert fresh_json(code.format("tooltrail")) == ["tooltrail"]
    loaded = fresh_json(code.format("tooltrail.matcher"))
    assert "tooltrail.matcher.scoring" in loaded
    assert [m for m in loaded if m.startswith("tooltrail.collector")] == []


def test_the_version_is_one() -> None:
    assert tooltrail.collector.__version__ is tooltrail.__version__


def _modules() -> list[str]:
    """Every module of the collector and the matcher (the migrations run inside alembic)."""
    names = []
    for package in (tooltrail.collector, tooltrail.matcher):
        names += [m.name for m in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")]
    return names


def test_no_module_is_loaded_under_an_old_name(tmp_path: Path) -> None:
    """Every module imported in a fresh interpreter: none of them loads a module by a folder's
    name, which would be a second copy of tooltrail's code with its own registries and
    classes (the checkout is on the path of an editable install, so it would not fail)."""
    modules = _modules()
    assert len(modules) > 100 and "tooltrail.collector.extract._wire" in modules
    code = ("import importlib, json, sys\n"
            f"for name in {modules!r}:\n"
            "    importlib.import_module(name)\n"
            "print(json.dumps(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    loaded = set(json.loads(done.stdout))
    assert set(modules) <= loaded
    assert sorted(m for m in loaded if m.split(".")[0] in OLD) == []
    # and this process, which has imported nearly everything
    assert sorted(m for m in sys.modules if m.split(".")[0] in OLD) == []
    for name in OLD:
        assert importlib.util.find_spec(f"tooltrail.{name}") is not None


def test_the_tree_has_nothing_left_to_rename() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts/dev/rename_imports.py"),
                           "--check"], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, check=False)
    assert done.returncode == 0, f"files still using the old names:\n{done.stdout}{done.stderr}"


def _rename_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rename_imports",
                                                  ROOT / "scripts/dev/rename_imports.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PYTHON_BEFORE = '''"""Prose: collector.store.tables; a command: `python -m collector.cli serve`."""
import collector.store
import matcher as m
from collector.extract import otlp
from . import collector as local
from x import collector
import os, migrations.env


def f(collector=None):
    mock.patch("collector.worker.Worker.run")
    run = [sys.executable, "-m", "collector.cli", "serve"]
    code = "import json, matcher; print(matcher.score)"
    files = ("collector/cli.py", "collector.yaml", "collector")
    return collector.store.x, m.score  # python -m matcher.bench; collector.x
'''
PYTHON_AFTER = '''"""Prose: collector.store.tables; a command: `python -m tooltrail serve`."""
import tooltrail.collector.store
import tooltrail.matcher as m
from tooltrail.collector.extract import otlp
from . import collector as local
from x import collector
import os, tooltrail.migrations.env


def f(collector=None):
    mock.patch("tooltrail.collector.worker.Worker.run")
    run = [sys.executable, "-m", "tooltrail", "serve"]
    code = "import json, tooltrail.matcher; print(tooltrail.matcher.score)"
    files = ("collector/cli.py", "collector.yaml", "collector")
    return tooltrail.collector.store.x, m.score  # python -m tooltrail.matcher.bench; collector.x
'''
PROSE_BEFORE = """Run `python -m collector.cli serve`, or `python -c "import collector.cli"`:
```python
from collector.capture.record import agent_turn
import matcher
```
The OTel collector reads collector.yaml; spans from collector to x; COPY collector ./collector
"""
PROSE_AFTER = """Run `python -m tooltrail serve`, or `python -c "import tooltrail.collector.cli"`:
```python
from tooltrail.collector.capture.record import agent_turn
import tooltrail.matcher
```
The OTel collector reads collector.yaml; spans from collector to x; COPY collector ./collector
"""


def test_the_rename_script_rewrites_module_names_only_and_once() -> None:
    script = _rename_script()
    assert script.rewrite_python(PYTHON_BEFORE) == PYTHON_AFTER
    assert script.rewrite_python(PYTHON_AFTER) == PYTHON_AFTER
    assert script.rewrite_prose(PROSE_BEFORE) == PROSE_AFTER
    assert script.rewrite_prose(PROSE_AFTER) == PROSE_AFTER
