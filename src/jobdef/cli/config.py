"""Project configuration: ``[tool.jobdef]`` in pyproject.toml, ``JOBDEF_*`` variables, flags.

Precedence, highest first: command-line flag, environment variable, the
``[tool.jobdef]`` table of the nearest ``pyproject.toml`` (searched upward from
the working directory), built-in default. Resolved once per command.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from jobdef.errors import ConfigError


@dataclass(frozen=True)
class Config:
    """Where the sheets, the database and the generated docs are."""

    sheets: str = "jobdefs"
    database: str = "sqlite:///jobdef.db"
    docs: str = "docs/jobs"
    lang: str = "en"
    templates: str | None = None
    # Folder that relative paths of pyproject.toml are resolved against.
    root: str = "."


def find_pyproject(start: Path | None = None) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` (default: the working directory)."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _from_pyproject(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as stream:
            table = tomllib.load(stream).get("tool", {}).get("jobdef", {})
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(
            f"{path}: cannot read [tool.jobdef]: {exc}; fix the TOML syntax"
        ) from None
    known = {f.name for f in fields(Config)} - {"root"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(
            f"{path}: [tool.jobdef] has unknown key(s) {', '.join(unknown)}; "
            f"known keys are {', '.join(sorted(known))}"
        )
    base = path.parent
    values: dict[str, Any] = {"root": str(base)}
    for key, value in table.items():
        if not isinstance(value, str):
            raise ConfigError(f"{path}: [tool.jobdef] {key} must be a string, got {value!r}")
        values[key] = str(base / value) if key in ("sheets", "docs", "templates") else value
    return values


def load_config(
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    start: Path | None = None,
) -> Config:
    """Resolve the configuration; ``overrides`` are flags, ``None`` values ignored."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    pyproject = find_pyproject(start)
    if pyproject is not None:
        values.update(_from_pyproject(pyproject))
    for f in fields(Config):
        if f.name == "root":
            continue
        env_name = "JOBDEF_DATABASE_URL" if f.name == "database" else f"JOBDEF_{f.name.upper()}"
        if env.get(env_name):
            values[f.name] = env[env_name]
    for key, value in (overrides or {}).items():
        if value is not None:
            values[key] = value
    if values.get("lang", "en") not in ("en", "ja"):
        raise ConfigError(f"lang must be 'en' or 'ja', got {values['lang']!r}")
    return Config(**values)
