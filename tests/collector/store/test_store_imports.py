"""The store is SQL: it imports nothing that gives stored rows their meaning (extraction's
reconciliation, capture's merge, the scorer's composition, the matcher); those are composed
above it (`collector/conversation_view.py`, `collector/scorer.py`,
`collector/production/signals.py`)."""

from __future__ import annotations

import ast
import pkgutil
from pathlib import Path

import tooltrail.collector.store
from tests.fresh import fresh_json

FORBIDDEN = ("tooltrail.collector.extract", "tooltrail.collector.capture",
             "tooltrail.collector.scorer", "tooltrail.matcher")
STORE = Path(tooltrail.collector.store.__file__).parent
MODULES = sorted(f"tooltrail.collector.store.{m.name}"
                 for m in pkgutil.iter_modules([str(STORE)]))


def forbidden(name: str) -> bool:
    return any(name == f or name.startswith(f"{f}.") for f in FORBIDDEN)


def test_no_store_module_names_a_forbidden_import() -> None:
    """Every import statement, also inside functions and under TYPE_CHECKING."""
    found = []
    for path in sorted(STORE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            found += [f"{path.name}:{node.lineno} {n}" for n in names if forbidden(n)]
    assert found == []


def test_importing_the_store_loads_none_of_them() -> None:
    """Nor through what the store imports (`collector.model`, `collector.production.counts`…)."""
    code = (f"import json, sys\nfor m in {MODULES!r}:\n    __import__(m)\n"
            "print(json.dumps(sorted(sys.modules)))")
    loaded = fresh_json(code)
    assert len(MODULES) > 10  # the walk found the package
    assert [m for m in loaded if forbidden(m)] == []
