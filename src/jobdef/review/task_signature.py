"""The function a new sheet is for, found in the project's source without importing it.

``jobdef new send_confirmation`` looks for a module-level ``def send_confirmation``
under the folders handlers are imported from (:func:`jobdef.project.use_pythonpath`'s),
so that the sheet names its real ``handler`` and declares its real args instead of
placeholders. The source is read, never imported: writing a sheet must not run the
project's code (a Django task module needs its settings to import). Each parameter
becomes an arg, its JSON Schema type read from the annotation; a context parameter is
not an arg (a jobdef handler's first ``ctx``, a Django task's ``takes_context=True``,
a bound Celery task's ``self``).
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobdef.sheets.files import read_regular

# Folders that hold no project module: environments, caches, builds, other tools'.
_SKIPPED = frozenset(
    {"__pycache__", "node_modules", "site-packages", "build", "dist", "migrations", "venv", "env"}
)
# At most this many Python files are read; a folder with more is not a project's.
MAX_FILES = 5000
# A larger Python file is generated, not a module of handlers: it is not read.
MAX_BYTES = 256 * 1024
# The JSON Schema type of each annotation that names one.
_TYPES = {
    "int": "integer",
    "str": "string",
    "float": "number",
    "bool": "boolean",
    "list": "array",
    "tuple": "array",
    "set": "array",
    "List": "array",
    "Tuple": "array",
    "Sequence": "array",
    "dict": "object",
    "Dict": "object",
    "Mapping": "object",
}


@dataclass(frozen=True)
class Param:
    """One arg of the function: its name, JSON Schema and whether a call may leave it out."""

    name: str
    schema: dict[str, Any]
    required: bool


@dataclass(frozen=True)
class Found:
    """A function named as the job: ``handler`` (``module:function``), where it is and
    its args."""

    handler: str
    file: Path
    line: int
    params: tuple[Param, ...]


def find_functions(name: str, folders: Iterable[str]) -> list[Found]:
    """Every module-level function ``name`` under ``folders``, by module path."""
    needle = f"def {name}(".encode()
    found: dict[str, Found] = {}
    for folder, path in _python_files(folders):
        try:  # never a FIFO or a device (a read would wait), nor through a symlink
            source = read_regular(path, MAX_BYTES)
        except OSError:  # RefusedFile too
            continue
        if len(source) > MAX_BYTES or needle not in source:
            continue
        module = _module(folder, path)
        if module is None:
            continue
        try:
            tree = ast.parse(source, filename=str(path))
        except (SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
                handler = f"{module}:{name}"
                found.setdefault(handler, Found(handler, path, node.lineno, _params(node)))
    return sorted(found.values(), key=lambda f: f.handler)


def _python_files(folders: Iterable[str]) -> Iterator[tuple[Path, Path]]:
    seen = 0
    for folder in folders:
        root = Path(folder)
        for current, dirs, files in os.walk(root):
            dirs[:] = sorted(
                d
                for d in dirs
                if not d.startswith(".")
                and d not in _SKIPPED
                and not (Path(current) / d / "pyvenv.cfg").exists()
            )
            for file in sorted(files):
                if file.endswith(".py"):
                    seen += 1
                    if seen > MAX_FILES:
                        return
                    yield root, Path(current) / file


def _module(folder: Path, path: Path) -> str | None:
    """The dotted module name of ``path``: its packages up to the first folder without an
    ``__init__.py`` (``src/shop/tasks.py`` is ``shop.tasks``), a module outside any package
    as imported from ``folder``; None when a part is not a name Python can import."""
    parts = [path.stem] if path.name != "__init__.py" else []
    package = path.parent
    while (package / "__init__.py").is_file() and package != folder:
        parts.insert(0, package.name)
        package = package.parent
    if package == path.parent and path.name != "__init__.py":  # not in a package
        parts = list(path.relative_to(folder).with_suffix("").parts)
    if not parts or not all(part.isidentifier() for part in parts):
        return None
    return ".".join(parts)


def _params(node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[Param, ...]:
    arguments = node.args
    positional = [*arguments.posonlyargs, *arguments.args]
    first_default = len(positional) - len(arguments.defaults)
    pairs = [(arg, i >= first_default) for i, arg in enumerate(positional)]
    if pairs and _takes_context(node):
        pairs = pairs[1:]
    params = [Param(arg.arg, _schema(arg), not has_default) for arg, has_default in pairs]
    if arguments.vararg is not None:  # *args: one arg holding the list of them
        params.append(Param(arguments.vararg.arg, {"type": "array"}, False))
    params += [
        Param(arg.arg, _schema(arg), default is None)
        for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
    ]
    return tuple(params)


def _takes_context(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the first parameter is the job's context, not an arg: a Django task says
    so with ``takes_context=True``, a bound Celery task with ``bind=True`` (``self``); a
    jobdef handler's is its first, ``ctx``."""
    for decorator in node.decorator_list:
        if isinstance(decorator, ast.Call) and any(
            k.arg == "bind" and isinstance(k.value, ast.Constant) and k.value.value
            for k in decorator.keywords
        ):
            return True
        if isinstance(decorator, ast.Call) and _name(decorator.func) == "task":
            return any(
                k.arg == "takes_context" and isinstance(k.value, ast.Constant) and k.value.value
                for k in decorator.keywords
            )
        if _name(decorator) == "task":
            return False
    first = [*node.args.posonlyargs, *node.args.args][:1]
    return bool(first) and first[0].arg in ("ctx", "context")


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _schema(arg: ast.arg) -> dict[str, Any]:
    """The JSON Schema of one parameter, from its annotation (no type when it has none
    jobdef can read: the sheet then says what to write)."""
    kind = _type(arg.annotation)
    if kind is None:
        return {"description": f"TODO: what {arg.arg} is, and its type (type: integer, ...)"}
    return {"type": kind}


def _type(annotation: ast.expr | None) -> str | list[str] | None:
    if annotation is None:
        return None
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:  # a quoted annotation: "int"
            return _type(ast.parse(annotation.value, mode="eval").body)
        except SyntaxError:
            return None
    if isinstance(annotation, ast.Subscript):  # list[int], Optional[int]
        if _name(annotation.value) == "Optional":
            inner = _type(annotation.slice)
            return [inner, "null"] if isinstance(inner, str) else None
        return _TYPES.get(_name(annotation.value))
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):  # int | None
        sides = [annotation.left, annotation.right]
        nones = [s for s in sides if isinstance(s, ast.Constant) and s.value is None]
        if len(nones) == 1:
            inner = _type(next(s for s in sides if s not in nones))
            return [inner, "null"] if isinstance(inner, str) else None
        return None
    return _TYPES.get(_name(annotation))
