"""Where a project's sheets are, found as the ``jobdef`` commands find them.

The commands read ``[tool.jobdef]`` of the nearest ``pyproject.toml`` through
the CLI's configuration, which sits above this package; the kit needs only two
of its keys, read here by the same rules: ``JOBDEF_SHEETS`` first, then
``[tool.jobdef] sheets`` (relative to that pyproject.toml), then ``jobdefs``;
and ``pythonpath`` (default: the folder holding that pyproject.toml), which is
put first on ``sys.path`` so the handlers import as the worker imports them.
"""

from __future__ import annotations

import os
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jobdef.errors import ConfigError


@dataclass(frozen=True, slots=True)
class Project:
    """The sheets folder and the folders handlers are imported from."""

    sheets: Path
    pythonpath: tuple[Path, ...]


def _pyproject(start: Path) -> Path | None:
    here = start.resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _table(path: Path) -> dict[str, Any] | None:
    try:
        with path.open("rb") as stream:
            tool = tomllib.load(stream).get("tool", {})
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(
            f"{path}: cannot read [tool.jobdef]: {exc}; fix the TOML syntax"
        ) from None
    table = tool.get("jobdef")
    return table if isinstance(table, dict) else None


def find_project(start: Path | None = None, environ: Mapping[str, str] | None = None) -> Project:
    """The project around ``start`` (default: the working directory)."""
    env = os.environ if environ is None else environ
    base = (start or Path.cwd()).resolve()
    pyproject = _pyproject(base)
    table = _table(pyproject) if pyproject is not None else None
    root = pyproject.parent if pyproject is not None and table is not None else base
    sheets = root / "jobdefs"
    pythonpath: tuple[Path, ...] = (root,)
    if table is not None:
        if isinstance(table.get("sheets"), str):
            sheets = root / table["sheets"]
        folders = table.get("pythonpath")
        if isinstance(folders, str):
            folders = [folders]
        if isinstance(folders, list) and all(isinstance(f, str) for f in folders) and folders:
            pythonpath = tuple((root / f).resolve() for f in folders)
    if env.get("JOBDEF_SHEETS"):
        sheets = Path(env["JOBDEF_SHEETS"]).resolve()
    return Project(sheets=sheets, pythonpath=pythonpath)


def use_pythonpath(folders: tuple[Path, ...]) -> None:
    """Put ``folders`` first on ``sys.path`` (each once, in order), as the commands do."""
    for folder in reversed([str(f) for f in folders]):
        if folder in sys.path:
            sys.path.remove(folder)
        sys.path.insert(0, folder)
