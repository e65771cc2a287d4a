"""examples/django_app works as its README says: migrate, confirm twice, run the worker."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from jd_support import REPO

pytestmark = pytest.mark.slow

EXAMPLE = REPO / "examples" / "django_app"


def manage(folder: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "JOBDEF_"))}
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_example_confirms_mails_once_and_awards_points_once(tmp_path: Path) -> None:
    folder = tmp_path / "django_app"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("db.sqlite3*", "mail"))
    manage(folder, "migrate", "-v", "0")  # runs the system checks too: they pass
    script = (
        "from datetime import date\n"
        "from django.test import Client\n"
        "from reservations.models import Reservation\n"
        "r = Reservation.objects.create(guest_email='guest@example.com', night=date.today())\n"
        "for _ in range(2):\n"
        "    print(Client().post(f'/reservations/{r.pk}/confirm').content.decode().strip())\n"
    )
    out = manage(folder, "shell", "-v", "0", "-c", script)
    assert out.splitlines() == ["confirmed; mail job 1", "confirmed; mail job 1"]
    # The queues of the two jobs only: the example's nightly batch job is due at 04:00
    # Tokyo time, and a worker started within 5 minutes after 19:00 UTC would run it too.
    ran = manage(folder, "jobdef_worker", "--burst", "--queues", "mail,points")
    assert "2 done, 0 retried, 0 dead" in ran
    [mail] = list((folder / "mail").iterdir())
    assert "guest@example.com" in mail.read_text("utf-8")
    with sqlite3.connect(folder / "db.sqlite3") as db:
        assert db.execute("SELECT points FROM reservations_reservation").fetchall() == [(100,)]
