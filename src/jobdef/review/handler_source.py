"""Whether a handler calls ``first_run``, read from its source without importing it.

``jobdef diff`` says what a changed idempotency recipe does to the keys a handler
recorded in processed_keys; importing the handler would run the project's code
(and need its dependencies) just to review a change of the sheets.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable
from pathlib import Path


def module_file(module: str, folders: Iterable[str]) -> Path | None:
    """The source file of ``module`` under the first folder that holds it (not imported)."""
    parts = module.split(".")
    if not all(part.isidentifier() for part in parts):
        return None
    for folder in folders:
        base = Path(folder or os.curdir).joinpath(*parts)
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def calls_first_run(handler: str, folders: Iterable[str]) -> bool:
    """True when the function ``module:function`` calls ``first_run`` (by that name or as
    an attribute, ``idempotency.first_run``); False when it does not or cannot be read."""
    module, sep, function = handler.partition(":")
    if not sep:
        module, _, function = handler.rpartition(".")
    path = module_file(module, folders)
    if path is None:
        return False
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (OSError, SyntaxError, ValueError):
        return False
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == function:
            return any(_is_first_run(call) for call in ast.walk(node))
    return False


def _is_first_run(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    target = node.func
    return (isinstance(target, ast.Name) and target.id == "first_run") or (
        isinstance(target, ast.Attribute) and target.attr == "first_run"
    )
