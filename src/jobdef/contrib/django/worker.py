"""A worker of a Django project: Django set up in the worker and in each child process.

``jobdef worker`` calls :func:`prepare` when ``DJANGO_SETTINGS_MODULE`` is set (and so
does ``manage.py jobdef_worker``, which runs it): Django is set up before any handler
is imported, ``--db`` and ``--sheets`` default to those of the project's
``JobdefBackend``, and each child process calls :func:`setup_django` first.
"""

from __future__ import annotations

import os
import sys
from typing import Any

CHILD_SETUP = "jobdef.contrib.django.worker:setup_django"


def setup_django() -> None:
    """``django.setup()`` with the settings of ``DJANGO_SETTINGS_MODULE``."""
    import django

    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())  # where manage.py and the settings usually are
    django.setup()


def prepare(db: str | None, sheets: str | None, alias: str | None = None) -> tuple[str, str]:
    """Set Django up; the job database URL and the sheets folder to run, from the
    flags given, else from the ``JobdefBackend`` of ``TASKS`` (``alias``, or the first)."""
    from django.core.exceptions import ImproperlyConfigured

    from jobdef.errors import UsageError

    try:
        setup_django()
    except (ImportError, ImproperlyConfigured) as exc:
        name = os.environ.get("DJANGO_SETTINGS_MODULE", "")
        raise UsageError(
            f"cannot set Django up with DJANGO_SETTINGS_MODULE={name}: {exc}; check the "
            "module name and that its folder is on the path (--pythonpath)"
        ) from None
    backend = project_backend(alias)
    if backend is None:
        if db is None or sheets is None:
            raise UsageError(
                "DJANGO_SETTINGS_MODULE is set but TASKS has no jobdef.contrib.django."
                "JobdefBackend; configure one, or pass --db and --sheets"
            )
        return db, sheets
    if db is None:
        db = backend.database_url
    if sheets is None:
        if len(backend.sheets) > 1:
            raise UsageError(
                f"TASKS[{backend.alias!r}] names {len(backend.sheets)} sheets folders; "
                "jobdef reads one: pass --sheets"
            )
        sheets = str(backend.sheets[0])
    return db, sheets


def project_backend(alias: str | None = None) -> Any:
    from jobdef.contrib.django.backend import configured_backends

    found = [b for b in configured_backends() if alias is None or b.alias == alias]
    return found[0] if found else None
