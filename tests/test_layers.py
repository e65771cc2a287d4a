"""The import graph of ``src/jobdef`` keeps to its layers and has no cycle.

Every module is read with :mod:`ast`, never imported. Module-level imports
(including those in class bodies and ``try`` blocks, which also run at import
time) must form no cycle; function-level imports are lazy, but they may not
reach a layer above either, nor close a cycle, which a reader still has to
untangle.
Imports under ``if TYPE_CHECKING:`` are for type checkers and are left out.
An import counts as an edge to the module it names (``from a import b`` names
``a.b`` when that is a module, else ``a``), not to the packages above it.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "jobdef"

# Lowest first. A module may import from its own layer and from those below it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("jobdef.errors", "jobdef.records", "jobdef.redact", "jobdef.project", "jobdef.wake_pipe"),
    ("jobdef.policy",),
    # Pure cron and slot arithmetic over the policy model: the sheet rules check a
    # schedule with it, so it sits below sheets rather than beside render.
    ("jobdef.schedule",),
    ("jobdef.sheets",),  # with jobdef.sheets.rules
    ("jobdef.reporters", "jobdef.render", "jobdef.review"),
    ("jobdef.backends",),
    ("jobdef.notify",),
    # Metrics, traces and structured logs: the worker reports through them.
    ("jobdef.telemetry",),
    ("jobdef.runtime",),
    # Where jobdef meets other software: the testing kit, the dashboard, the
    # Celery/RQ adapters and the Django integration, each over the runtime.
    ("jobdef.testing", "jobdef.dashboard", "jobdef.adapters", "jobdef.contrib"),
    ("jobdef.cli", "jobdef.examples", "jobdef.__main__", "jobdef"),
)

# Names of the root package that any layer may read: metadata, not the public face.
ROOT_METADATA = frozenset({"__version__"})

# Edges that break the rules today and are being moved away; each is left out of
# both checks, and test_each_known_violation_still_exists fails once one is gone,
# so remove an edge here in the commit that removes the import. Add none: fix it.
KNOWN_VIOLATIONS: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True)
class Import:
    """One ``jobdef`` module imported by another, and whether at import time."""

    importer: str
    imported: str
    module_level: bool
    line: int


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int | None:
    for rank, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            # The root package is its own layer; its subpackages are not in it.
            if module == prefix or (prefix != "jobdef" and module.startswith(prefix + ".")):
                return rank
    return None


def layer_name(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _targets(node: ast.Import | ast.ImportFrom, module: str, path: Path) -> Iterator[str]:
    """The ``jobdef`` modules one import statement loads (a submodule when it names one)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names if alias.name.split(".")[0] == "jobdef")
        return
    base = node.module or ""
    if node.level:
        package = _package_of(module, path).split(".")
        anchor = ".".join(package[: len(package) - node.level + 1])
        base = f"{anchor}.{base}" if base else anchor
    if base.split(".")[0] != "jobdef":
        return
    names = [alias.name for alias in node.names]
    if base == "jobdef" and set(names) <= ROOT_METADATA:
        return
    plain = False
    for name in names:
        if f"{base}.{name}" in MODULES:
            yield f"{base}.{name}"
        else:
            plain = True
    if plain:
        yield base


def imports_of(module: str, path: Path) -> Iterator[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))

    def visit(node: ast.AST, module_level: bool) -> Iterator[Import]:
        if isinstance(node, ast.Import | ast.ImportFrom):
            for target in _targets(node, module, path):
                yield Import(module, target, module_level, node.lineno)
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                yield from visit(child, module_level)
        else:
            inner = module_level and not isinstance(
                node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
            )
            for child in ast.iter_child_nodes(node):
                yield from visit(child, inner)

    yield from visit(tree, True)


@functools.cache
def every_import() -> tuple[Import, ...]:
    """Every import of every module, the known violations too (read once per run: the
    tests below ask the same question of the same tree)."""
    return tuple(i for module, path in MODULES.items() for i in imports_of(module, path))


def all_imports() -> list[Import]:
    return [i for i in every_import() if (i.importer, i.imported) not in KNOWN_VIOLATIONS]


def layer_violations(imports: list[Import]) -> list[str]:
    lines = set()
    for i in imports:
        low, high = layer_of(i.importer), layer_of(i.imported)
        if low is not None and high is not None and high > low:
            lines.add(
                f"{i.importer} imports {i.imported} "
                f"(layer {layer_name(i.imported)} above {layer_name(i.importer)})"
            )
    return sorted(lines)


def cycles(imports: list[Import]) -> list[list[str]]:
    """Every strongly connected group of modules (Tarjan), as one cycle through it."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for i in imports:
        if i.module_level and i.imported in graph:
            graph[i.importer].add(i.imported)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1 or node in graph[node]:
                groups.append(_cycle_through(sorted(group), graph))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def _cycle_through(group: list[str], graph: dict[str, set[str]]) -> list[str]:
    """A shortest path from the group's first module back to itself, inside the group."""
    start, members = group[0], set(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt_frontier = []
        for node in frontier:
            for nxt in sorted(graph[node] & members):
                if nxt == start:
                    return [*paths[node], start]
                if nxt not in paths:
                    paths[nxt] = [*paths[node], nxt]
                    nxt_frontier.append(nxt)
        frontier = nxt_frontier
    return group


def test_every_module_has_a_layer() -> None:
    assert [m for m in MODULES if layer_of(m) is None] == []


def test_no_module_imports_from_a_layer_above_it() -> None:
    violations = layer_violations(all_imports())
    print("\n".join(violations))
    assert violations == []


def test_module_level_imports_have_no_cycle() -> None:
    found = [" -> ".join(cycle) for cycle in cycles(all_imports())]
    print("\n".join(found))
    assert found == []


def test_no_cycle_even_through_function_level_imports() -> None:
    """A lazy import hides a cycle from Python, not from a reader: the builder and
    the rules were once tied this way (the registry imported the loader inside a
    function, the loader imported the registry)."""
    every = [dataclasses.replace(i, module_level=True) for i in all_imports()]
    found = [" -> ".join(cycle) for cycle in cycles(every)]
    print("\n".join(found))
    assert found == []


def test_each_known_violation_still_exists() -> None:
    """A known edge that no longer exists must leave KNOWN_VIOLATIONS, so none comes back."""
    every = {(i.importer, i.imported) for i in every_import()}
    gone = sorted(KNOWN_VIOLATIONS - every)
    assert gone == [], f"no longer imported, remove from KNOWN_VIOLATIONS: {gone}"


# The checker itself, on small trees written for it.


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import jobdef.runtime.queue\n", [("jobdef.runtime.queue", True)]),
        ("from jobdef.policy import model\n", [("jobdef.policy.model", True)]),
        ("from jobdef.runtime import Queue\n", [("jobdef.runtime", True)]),
        ("from . import build\n", [("jobdef.sheets.build", True)]),
        ("from .rules import check\n", [("jobdef.sheets.rules", True)]),
        ("from jobdef import __version__\n", []),
        ("def f():\n    from jobdef.cli import main\n", [("jobdef.cli", False)]),
        ("class C:\n    from jobdef import errors\n", [("jobdef.errors", True)]),
        (
            "try:\n    import jobdef.errors\nexcept ImportError:\n    pass\n",
            [("jobdef.errors", True)],
        ),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import jobdef.cli\n", []),
        ("if TYPE_CHECKING:\n    pass\nelse:\n    import jobdef.cli\n", [("jobdef.cli", True)]),
        ("import os\nfrom collections import abc\n", []),
    ],
)
def test_the_checker_reads_each_kind_of_import(
    tmp_path: Path, source: str, expected: list[tuple[str, bool]]
) -> None:
    # Read as if it were jobdef/sheets/pipeline.py, where its relative imports start.
    fake = tmp_path / "pipeline.py"
    fake.write_text(source)
    found = [(i.imported, i.module_level) for i in imports_of("jobdef.sheets.pipeline", fake)]
    assert found == expected


def test_the_checker_names_an_upward_import_and_a_cycle() -> None:
    imports = [
        Import("jobdef.sheets.rules.notify", "jobdef.notify.checks", True, 1),
        Import("jobdef.notify.checks", "jobdef.sheets.rules.notify", False, 1),
        Import("jobdef.policy.model", "jobdef.policy.registry", True, 1),
        Import("jobdef.policy.registry", "jobdef.policy.model", True, 1),
    ]
    assert layer_violations(imports) == [
        "jobdef.sheets.rules.notify imports jobdef.notify.checks (layer notify above sheets)"
    ]
    assert cycles(imports) == [
        ["jobdef.policy.model", "jobdef.policy.registry", "jobdef.policy.model"]
    ]
