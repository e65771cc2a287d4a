"""Settings of the example: one SQLite file holds the reservations and the jobs.

Set ``DATABASE_URL``-style variables of your own for PostgreSQL; the TASKS entry does
not change: jobdef writes its jobs on whichever database ``DATABASES["default"]`` is.
"""

import os
from pathlib import Path

import django

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "example-only-not-a-secret")
DEBUG = True
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
USE_TZ = True
TIME_ZONE = "Asia/Tokyo"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    # Django 6.0 ships django.tasks; on 5.2 the django-tasks backport is an app.
    *([] if django.VERSION >= (6, 0) else ["django_tasks"]),
    "jobdef.contrib.django",
    "reservations",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "reservations_site.urls"
STATIC_URL = "static/"
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
        "NAME": BASE_DIR / "db.sqlite3",
        # BEGIN IMMEDIATE: a request and the worker queue on SQLite's write lock
        # instead of one failing with "database is locked" half-way.
        "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 30},
    }
}

TASKS = {
    "default": {
        "BACKEND": "jobdef.contrib.django.JobdefBackend",
        "OPTIONS": {"sheets": BASE_DIR / "jobdefs"},
    }
}

# The confirmation mails land in files under mail/, one per message.
EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
EMAIL_FILE_PATH = BASE_DIR / "mail"
DEFAULT_FROM_EMAIL = "reservations@example.com"
