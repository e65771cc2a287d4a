"""The Django app: the admin's models, ``jobdef_worker``, the checks, the migrate hook,
and jobdef's own connections closed before Django creates or drops a database."""

from __future__ import annotations

from typing import Any

from django.apps import AppConfig, apps
from django.core import checks
from django.db.backends.base.base import NO_DB_ALIAS
from django.db.backends.signals import connection_created
from django.db.models.signals import post_migrate


class JobdefConfig(AppConfig):  # type: ignore[misc]  # Django ships no types
    name = "jobdef.contrib.django"
    label = "jobdef"
    verbose_name = "jobdef"
    default = True

    def ready(self) -> None:
        from jobdef.contrib.django.compat import PACKAGE

        post_migrate.connect(migrate_stores, sender=self)
        connection_created.connect(close_before_create_or_drop)
        # The framework runs each backend's check() from its own registered check: built
        # in on Django 6.0, from the backport's app on 5.2. Without that app, run them here.
        if PACKAGE == "django_tasks" and not apps.is_installed("django_tasks"):
            checks.register(check_backends)


def jobdef_backends() -> list[Any]:
    from jobdef.contrib.django.backend import configured_backends

    return configured_backends()


def check_backends(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    messages: list[Any] = []
    for backend in jobdef_backends():
        messages.extend(backend.check())
    return messages


def migrate_stores(using: str = "default", **kwargs: Any) -> None:
    """After ``manage.py migrate`` (and the test runner's, on its test database): create
    or upgrade jobdef's tables in that database. A database jobdef cannot share is one
    line, as a command's error (``manage.py migrate``, ``manage.py test``)."""
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management.base import CommandError

    for backend in jobdef_backends():
        if backend.database == using:
            try:
                backend.migrate()
            except ImproperlyConfigured as exc:
                raise CommandError(str(exc)) from None


def close_before_create_or_drop(sender: Any, connection: Any, **kwargs: Any) -> None:
    """Close jobdef's engines when Django connects to no database (``NO_DB_ALIAS``).

    Django does so only to create or drop a database: its test runner, before the tests
    and after them. jobdef's engine keeps a connection of its own to the store for the
    life of the process, and PostgreSQL refuses to drop a database that a session is
    still connected to ("being accessed by other users"); closed here, an engine opens
    again on its next use.
    """
    if connection.alias == NO_DB_ALIAS:
        from jobdef.contrib.django.backend import close_engines

        close_engines()
