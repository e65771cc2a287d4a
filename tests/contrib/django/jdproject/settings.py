"""Settings of the test project: a SQLite alias and a PostgreSQL alias, one jobdef backend each.

Where the databases and sheets are comes from the environment, so the test process and
the worker processes it starts use the same project: ``JDPROJECT_SQLITE`` (a file),
``JDPROJECT_PG_URL`` and ``JDPROJECT_PG_SCHEMA``, ``JDPROJECT_SHEETS`` (default: the
``jobdefs`` folder beside this file) and ``JDPROJECT_TASK_MODULES`` (comma-separated).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import unquote, urlsplit

import django

HERE = Path(__file__).resolve().parent
SHEETS = os.environ.get("JDPROJECT_SHEETS", str(HERE / "jobdefs"))
SCHEMA = os.environ.get("JDPROJECT_PG_SCHEMA", "jdproject")
_pg = urlsplit(os.environ.get("JDPROJECT_PG_URL", "postgresql://postgres@127.0.0.1:5432/test"))

SECRET_KEY = "jdproject-tests-only-not-a-secret"
DEBUG = False
ALLOWED_HOSTS = ["testserver", "127.0.0.1", "localhost"]
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    *([] if django.VERSION >= (6, 0) else ["django_tasks"]),
    "jobdef.contrib.django",
    "jdproject",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "jdproject.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("JDPROJECT_SQLITE", str(HERE.parent / "jdproject.sqlite3")),
        # BEGIN IMMEDIATE: a transaction takes SQLite's write lock when it starts, so a
        # request and the worker queue on the lock instead of failing half-way.
        "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 30},
    },
    "pg": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": _pg.path.lstrip("/"),
        "USER": unquote(_pg.username or ""),
        "PASSWORD": unquote(_pg.password or ""),
        "HOST": _pg.hostname or "",
        "PORT": str(_pg.port or ""),
        "OPTIONS": {"options": f"-c search_path={SCHEMA}"},
    },
}

_modules = [m for m in os.environ.get("JDPROJECT_TASK_MODULES", "").split(",") if m]
TASKS = {
    "default": {
        "BACKEND": "jobdef.contrib.django.JobdefBackend",
        "OPTIONS": {"sheets": SHEETS, "task_modules": _modules},
    },
    "pg": {
        "BACKEND": "jobdef.contrib.django.JobdefBackend",
        "OPTIONS": {"sheets": SHEETS, "database": "pg", "schema": SCHEMA},
    },
}
