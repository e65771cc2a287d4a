"""``manage.py jobdef_worker``: ``jobdef worker`` for this project, with the same options.

The command runs ``python -m jobdef worker`` in this process's place (``exec``), with
the project's settings in ``DJANGO_SETTINGS_MODULE``: the worker sets Django up in
itself and in each child process, and takes ``--db`` and ``--sheets`` from the
``JobdefBackend`` of ``TASKS`` unless they are given. Signals reach the worker itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

HELP = "Run the jobs of the sheets (the options of `jobdef worker`; see --help)"


def _without_settings(argv: list[str]) -> list[str]:
    """``argv`` without Django's ``--settings`` (already in the environment)."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--settings":
            skip = True
        elif not arg.startswith("--settings="):
            kept.append(arg)
    return kept


def jobdef_command(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of ``jobdef ARGV`` for this project."""
    env = dict(os.environ, DJANGO_SETTINGS_MODULE=settings.SETTINGS_MODULE)
    project = sys.path[0] or os.getcwd()  # manage.py's folder, where the settings are
    env["PYTHONPATH"] = os.pathsep.join(p for p in (project, env.get("PYTHONPATH")) if p)
    return [sys.executable, "-m", "jobdef", *_without_settings(argv)], env


def worker_command(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of the worker for ``argv`` (after the command)."""
    return jobdef_command(["worker", *argv])


def exec_jobdef(argv: list[str]) -> None:
    """Run ``jobdef ARGV`` in this process's place: its signals and exit code are the
    command's."""
    command, env = jobdef_command(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, command, env)


class Command(BaseCommand):  # type: ignore[misc]  # Django ships no types
    help = HELP

    def run_from_argv(self, argv: list[str]) -> None:
        exec_jobdef(["worker", *argv[2:]])

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("args", nargs="*", help="options of `jobdef worker`")

    def handle(self, *args: str, **options: Any) -> None:
        """From ``call_command``: run the worker as a child process and wait for it."""
        command, env = worker_command(list(args))
        code = subprocess.run(command, env=env, check=False).returncode
        if code != 0:
            raise CommandError(f"jobdef worker exited with {code}", returncode=code)
