"""Project configuration: ``[tool.jobdef]`` in pyproject.toml, ``JOBDEF_*`` variables, flags.

Precedence, highest first: command-line flag, environment variable, the
``[tool.jobdef]`` table of the nearest ``pyproject.toml`` (searched upward from
the working directory), built-in default. Resolved once per command, and by the
testing kit (:mod:`jobdef.testing`) by the same rules, which is why this sits
below every other package.

``pythonpath`` is the one rule for finding handlers: the folders put first on
``sys.path`` before any handler is imported, by ``jobdef validate
--check-imports``, ``jobdef worker`` (and so its child processes, which start
with the worker's ``sys.path``), ``jobdef demo`` and the testing kit alike
(:func:`use_pythonpath`). Default: the folder of the pyproject.toml that holds
``[tool.jobdef]``, else the working directory.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from jobdef.errors import ConfigError
from jobdef.records import Record, record


@record
class Config(Record):
    """Where the sheets, the database, the generated docs and the Celery or RQ application
    objects are."""

    sheets: str = "jobdefs"
    database: str = "sqlite:///jobdef.db"
    docs: str = "docs/jobs"
    lang: str = "en"
    templates: str | None = None
    # The application objects jobs that died in Celery or RQ go back through (module:obj,
    # as `--app` takes it): `jobdef requeue`, `jobdef check --runtime`, `jobdef dashboard`.
    celery_app: str | None = None
    rq_app: str | None = None
    # Folders put first on sys.path to import handlers, absolute; see use_pythonpath.
    pythonpath: tuple[str, ...] = ()
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
    import tomllib  # here: a project without a pyproject.toml never needs it

    try:
        with path.open("rb") as stream:
            tool = tomllib.load(stream).get("tool", {})
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(
            f"{path}: cannot read [tool.jobdef]: {exc}; fix the TOML syntax"
        ) from None
    table = tool.get("jobdef", {})
    known = {f.name for f in fields(Config)} - {"root"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(
            f"{path}: [tool.jobdef] has unknown key(s) {', '.join(unknown)}; "
            f"known keys are {', '.join(sorted(known))}"
        )
    base = path.parent
    values: dict[str, Any] = {"root": str(base)}
    if "jobdef" in tool:
        # A project's defaults are its own folder's, wherever in it a command runs.
        values["pythonpath"] = (str(base),)
        values["sheets"] = str(base / Config().sheets)
        values["docs"] = str(base / Config().docs)
    for key, value in table.items():
        if key == "pythonpath":
            values[key] = _toml_folders(path, value)
            continue
        if not isinstance(value, str):
            raise ConfigError(f"{path}: [tool.jobdef] {key} must be a string, got {value!r}")
        values[key] = str(base / value) if key in ("sheets", "docs", "templates") else value
    return values


def _toml_folders(path: Path, value: Any) -> tuple[str, ...]:
    """``[tool.jobdef] pythonpath``: a folder or a list of folders, relative to ``path``'s."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(v, str) for v in items):
        raise ConfigError(
            f"{path}: [tool.jobdef] pythonpath must be a folder or a list of folders, "
            f'got {value!r}; write pythonpath = "src" or pythonpath = ["src", "."]'
        )
    return tuple(str((path.parent / item).resolve()) for item in items)


def _flag_folders(text: str) -> tuple[str, ...]:
    """``--pythonpath``/``JOBDEF_PYTHONPATH``: folders separated as in ``PYTHONPATH``,
    relative to the working directory."""
    return tuple(str(Path(item).resolve()) for item in text.split(os.pathsep) if item)


def use_pythonpath(config: Config) -> tuple[str, ...]:
    """Put ``config.pythonpath`` first on ``sys.path`` (each folder once, in order) and
    return it: called before anything imports a handler, so the checks and the worker
    import the same modules."""
    for folder in reversed(config.pythonpath):
        if folder in sys.path:
            sys.path.remove(folder)
        sys.path.insert(0, folder)
    return config.pythonpath


def declared_lang(environ: Mapping[str, str] | None = None) -> str | None:
    """The language the project declares (``JOBDEF_LANG``, else ``[tool.jobdef] lang``);
    None when it declares none and English is only the default."""
    env = os.environ if environ is None else environ
    if env.get("JOBDEF_LANG"):
        return env["JOBDEF_LANG"]
    pyproject = find_pyproject()
    if pyproject is None:
        return None
    lang = _from_pyproject(pyproject).get("lang")
    return lang if isinstance(lang, str) else None


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
    folders = values.get("pythonpath")
    if isinstance(folders, str):  # a flag or JOBDEF_PYTHONPATH
        values["pythonpath"] = _flag_folders(folders)
    if not values.get("pythonpath"):
        values["pythonpath"] = (str((start or Path.cwd()).resolve()),)
    if values.get("lang", "en") not in ("en", "ja"):
        raise ConfigError(f"lang must be 'en' or 'ja', got {values['lang']!r}")
    return Config(**values)
