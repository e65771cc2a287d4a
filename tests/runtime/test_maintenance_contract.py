"""The maintenance services keep to their contract and below the worker."""

from __future__ import annotations

import ast
import random
from pathlib import Path

from jobdef.runtime import maintenance
from jobdef.runtime.maintenance import MAINTENANCE, MaintenanceContext

PACKAGE = Path(maintenance.__file__).parent
WORKER_SIDE = (
    "jobdef.runtime.worker",
    "jobdef.runtime.pool",
    "jobdef.runtime.child",
    "jobdef.runtime.wire",
)


def _imported(path: Path) -> list[str]:
    """Every module an import statement of ``path`` names, at any depth (lazy ones too)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_maintenance_module_imports_the_worker_side() -> None:
    found = [
        f"{path.name} imports {name}"
        for path in sorted(PACKAGE.glob("*.py"))
        for name in _imported(path)
        if name.startswith(WORKER_SIDE)
    ]
    assert found == []


def test_every_listed_service_is_built_from_a_context_with_a_name_and_an_interval(
    backend, registry
) -> None:
    ctx = MaintenanceContext(backend, registry, "w1", lambda: 1_700_000_000.0, random.Random(1))
    services = [factory(ctx) for factory in MAINTENANCE]
    names = [service.name for service in services]
    assert names == ["reclaim", "retention", "results", "outbox-sender", "scheduler"]
    for service in services:
        assert service.interval > 0
        assert callable(service.tick)
