"""``manage.py jobdef COMMAND ...``: any ``jobdef`` command on this project's jobs.

``manage.py jobdef status``, ``jobs``, ``requeue``, ``resolve``, ``queues``,
``dashboard``... read and change the jobs in the database of the project's
``JobdefBackend``, with its sheets, as ``manage.py jobdef_worker`` runs them: the
command runs ``python -m jobdef COMMAND ...`` in this process's place (``exec``) with
``DJANGO_SETTINGS_MODULE`` set, and ``--db`` and ``--sheets`` default to the
backend's. ``manage.py jobdef --help`` lists the commands.
"""

from __future__ import annotations

import subprocess
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from jobdef.contrib.django.management.commands.jobdef_worker import exec_jobdef, jobdef_command

HELP = "Run a jobdef command on this project's jobs: status, jobs, requeue... (see --help)"


class Command(BaseCommand):  # type: ignore[misc]  # Django ships no types
    help = HELP

    def run_from_argv(self, argv: list[str]) -> None:
        exec_jobdef(argv[2:])

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("args", nargs="*", help="a jobdef command and its options")

    def handle(self, *args: str, **options: Any) -> None:
        """From ``call_command``: run the command as a child process and wait for it."""
        command, env = jobdef_command(list(args))
        code = subprocess.run(command, env=env, check=False).returncode
        if code != 0:
            raise CommandError(f"jobdef {' '.join(args[:1])} exited with {code}", returncode=code)
