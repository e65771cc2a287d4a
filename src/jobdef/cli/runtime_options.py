"""Options shared by the commands that talk to the job database: --db and --sheets.

Nothing here imports the backends at module level: ``jobdef validate`` builds the
same parser and must start without them.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, cast
from urllib.parse import urlsplit

from jobdef.cli.options import add_sheets
from jobdef.errors import UsageError
from jobdef.project import Config, load_config, use_pythonpath
from jobdef.render.escape import clip, display_width, visible

if TYPE_CHECKING:
    from jobdef.backends.protocol import Backend
    from jobdef.policy.registry import Registry

__all__ = [
    "JOB_STATES",
    "add_db",
    "add_sheets",
    "backend",
    "config",
    "note_unknown_job",
    "registry",
    "when",
]

# The job states, for --state choices (the same as jobdef.backends.records.State).
JOB_STATES = ("waiting", "queued", "running", "done", "dead", "resolved", "cancelled")


def add_db(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        metavar="URL",
        help="job database, e.g. sqlite:///jobdef.db or postgresql://host/db "
        "(default: JOBDEF_DATABASE_URL, [tool.jobdef] database, sqlite:///jobdef.db)",
    )


def config(args: argparse.Namespace) -> Config:
    """The configuration with --db, --sheets and --pythonpath applied; a database URL
    that does not parse is one line (which never quotes it: it may hold a password).

    In a Django project (``DJANGO_SETTINGS_MODULE`` set, as ``manage.py jobdef`` sets
    it), a command that talks to the job database takes --db and --sheets from the
    project's ``JobdefBackend`` unless they are given, as the worker does.

    Read once per command: `jobdef enqueue` asks for the sheets and then the database,
    and pyproject.toml is not parsed again for the same options."""
    if hasattr(args, "db") and os.environ.get("DJANGO_SETTINGS_MODULE"):
        django_project(args)
    given = {
        "database": getattr(args, "db", None),
        "sheets": getattr(args, "sheets", None),
        "pythonpath": getattr(args, "pythonpath", None),
    }
    read = getattr(args, "_config", None)
    if read is not None and read[0] == given:
        return cast(Config, read[1])
    found = load_config(given)
    try:
        urlsplit(found.database)
    except ValueError as exc:
        why = "an IPv6 host's '[' has no ']'" if "IPv6" in str(exc) else "it does not parse"
        raise UsageError(
            f"the database URL is not a valid URL ({why}); write it as "
            "postgresql://user@host:5432/dbname (an IPv6 host as [::1]) or "
            "sqlite:///jobdef.db, with reserved characters of a password percent-encoded"
        ) from None
    args._config = (given, found)
    return found


def django_project(args: argparse.Namespace) -> str:
    """A Django project's command: Django set up here, ``args.db`` and ``args.sheets``
    from its ``JobdefBackend`` unless given; the setup function of a worker's children.
    Done once per command, however often the configuration is read."""
    try:
        from jobdef.contrib.django import worker
    except ImportError as exc:
        raise UsageError(
            f"DJANGO_SETTINGS_MODULE is set, but Django cannot be imported ({exc}); "
            "install jobdef[django], or unset DJANGO_SETTINGS_MODULE"
        ) from None
    if not getattr(args, "_django_done", False):
        # The settings module and the apps are imported from where the handlers are.
        use_pythonpath(load_config({"pythonpath": getattr(args, "pythonpath", None)}))
        args.db, args.sheets = worker.prepare(args.db, getattr(args, "sheets", None))
        args._django_done = True
    return worker.CHILD_SETUP


def backend(args: argparse.Namespace, *, create: bool = False, migrate: bool = True) -> Backend:
    """The job store named by --db/config.

    By default (the operator commands) nothing is created or migrated, not even a
    SQLite file: a database without jobdef tables, or with older ones, is one line
    saying to run `jobdef db upgrade`. ``create=True`` creates or migrates them.
    """
    from jobdef.backends import open_backend
    from jobdef.errors import BackendError

    url = config(args).database
    try:
        return open_backend(url, create=create, migrate=migrate)
    except BackendError as exc:
        hint = _django_hint(args, url)
        if hint is None:
            raise
        raise BackendError(f"{exc.message}; {hint}") from None


def _django_hint(args: argparse.Namespace, url: str) -> str | None:
    """What to run instead in a Django project's folder, when a command looked for the
    default SQLite file there: the project's jobs are in its own database."""
    if os.environ.get("DJANGO_SETTINGS_MODULE") or not Path("manage.py").is_file():
        return None
    if getattr(args, "db", None) or url != Config().database or Path("jobdef.db").exists():
        return None
    return (
        f"this is a Django project (manage.py): run `python manage.py jobdef {args.command}`, "
        "which reads the database of its JobdefBackend"
    )


def registry(args: argparse.Namespace) -> Registry:
    """The sheets named by --sheets/config, loaded and validated."""
    from jobdef.sheets.pipeline import load_registry

    folder = Path(config(args).sheets)
    if not folder.exists():
        raise UsageError(
            f"sheets folder {folder} does not exist; pass --sheets DIR or set "
            "[tool.jobdef] sheets in pyproject.toml"
        )
    return load_registry([folder])


def note_unknown_job(args: argparse.Namespace, name: str) -> None:
    """A note on stderr when the sheets (if there are any to read) define no job ``name``:
    probably a typo, though the store may still hold rows of a job since removed."""
    from jobdef.errors import SheetError
    from jobdef.sheets.pipeline import load_registry

    folder = Path(config(args).sheets)
    if not name.isprintable() or not folder.exists():
        return  # a name no sheet can hold (not UTF-8 text): the store's line says so
    try:
        jobs = load_registry([folder]).jobs
    except SheetError:
        return
    if name not in jobs:
        print(
            f"note: no sheet in {folder} defines a job named {visible(name)!r} "
            f"(jobs: {', '.join(sorted(jobs)) or 'none'}); looking in the job store anyway",
            file=sys.stderr,
        )


def when(ts: float | None) -> str:
    if ts is None:
        return "-"
    try:
        return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, ValueError, OSError):
        # A time no date can say, stored before enqueue refused them: shown as it is.
        return f"{ts:.6g} (epoch seconds)"


def human_age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.0f}s"
    if seconds < 3600:
        return f"{seconds / 60:.0f}m"
    if seconds < 86400:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds / 86400:.1f}d"


# The widest a table column gets, in terminal columns; a longer value is cut with "…"
# (`--format json` and `jobdef jobs show` print it whole).
MAX_COLUMN_WIDTH = 60


def table_cell(value: object, width: int = MAX_COLUMN_WIDTH) -> str:
    """``value`` as a table cell: control and bidi characters escaped, cut to ``width``."""
    text = str(value)
    # Cut before escaping: a 100 MB arg must not be escaped (or printed) whole.
    return clip(visible(text[: width * 4]), width)


def table(rows: list[list[str]]) -> str:
    """Left-aligned columns, the first row a header; widths in terminal columns (an
    East Asian wide character takes two), each column at most MAX_COLUMN_WIDTH."""
    if not rows:
        return ""
    cells = [[table_cell(cell) for cell in row] for row in rows]
    widths = [max(display_width(row[i]) for row in cells) for i in range(len(cells[0]))]
    return "\n".join(
        "  ".join(
            cell + " " * (width - display_width(cell))
            for cell, width in zip(row, widths, strict=True)
        ).rstrip()
        for row in cells
    )
