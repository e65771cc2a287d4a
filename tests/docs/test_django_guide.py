"""docs/django.md, followed as written in a new Django project: startproject and startapp,
the settings of step 2, the task and the whole sheet of step 3, migrate, check, an
enqueue in a transaction, the worker of step 5 and the operator commands, whose output
is the page's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

django = pytest.importorskip("django")

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "django.md"
FENCE = re.compile(r"^( *)```(\w+)\n(.*?)^\1```$", re.MULTILINE | re.DOTALL)

pytestmark = pytest.mark.slow


def block(text: str, language: str, first_line: str) -> str:
    """The page's fenced ``language`` block whose first line is ``first_line``, dedented."""
    for _indent, lang, body in FENCE.findall(text):
        found = textwrap.dedent(body).rstrip("\n")
        if lang == language and found.startswith(first_line):
            return found + "\n"
    raise AssertionError(f"docs/django.md has no {language} block starting {first_line!r}")


def settings_of_step_2(page: str) -> tuple[str, str]:
    """The settings step 2 shows, as written (the backport's app on Django 5.2 only, as
    its comment says), and the SQLite option it tells to set."""
    snippet = block(page, "python", "INSTALLED_APPS = [")
    if django.VERSION >= (6, 0):
        snippet = "".join(
            line for line in snippet.splitlines(keepends=True) if "Django 5.2 only" not in line
        )
    (option,) = re.findall(r"On SQLite also set `(DATABASES\[[^`]+)`", page)
    return snippet, option


def test_the_django_guide_runs_as_written(tmp_path: Path) -> None:
    page = PAGE.read_text("utf-8")
    root = tmp_path / "hotel"
    root.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("JOBDEF_") and k != "DJANGO_SETTINGS_MODULE"
    }
    env["PYTHONPATH"] = str(REPO / "src")

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, *argv],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, f"{argv}: {done.stdout}{done.stderr}"
        assert "Traceback" not in done.stderr, done.stderr
        return done

    run("-m", "django", "startproject", "hotel", ".")
    run("manage.py", "startapp", "reservations")
    snippet, option = settings_of_step_2(page)
    settings = root / "hotel" / "settings.py"
    text = settings.read_text("utf-8")
    # Step 2's INSTALLED_APPS is the whole list: it keeps every app startproject wrote.
    written = re.search(r"^INSTALLED_APPS = \[\n(.*?)^\]", text, re.M | re.S)
    assert written is not None
    for app in re.findall(r"'([\w.]+)'", written.group(1)):
        assert f'"{app}",' in snippet, f"step 2's INSTALLED_APPS leaves out {app}"
    settings.write_text(f"{text}\n{snippet}\n{option}\n", "utf-8")

    code = block(page, "python", "# reservations/tasks.py")
    if django.VERSION < (6, 0):  # as its comment says
        code = code.replace("from django.tasks import task", "from django_tasks import task")
    (root / "reservations" / "tasks.py").write_text(code, "utf-8")
    (root / "jobdefs").mkdir()
    sheet = block(page, "yaml", "# jobdefs/send_confirmation.yaml")
    (root / "jobdefs" / "send_confirmation.yaml").write_text(sheet, "utf-8")

    run("manage.py", "migrate")
    checked = run("manage.py", "check")
    assert checked.stdout == "System check identified no issues (0 silenced).\n"
    enqueue = (
        "from django.db import transaction\n"
        "from reservations.tasks import send_confirmation\n"
        "with transaction.atomic():\n"
        "    send_confirmation.enqueue(reservation_id=7)\n"
    )
    run("manage.py", "shell", "-c", enqueue)
    worker = run("manage.py", "jobdef_worker", "--burst")
    assert " job 1 send_confirmation attempt 1 done in " in worker.stderr

    status = run("manage.py", "jobdef", "status")
    shown = block(page, "text", "$ python manage.py jobdef status").split("\n$ ")[0]
    expected = [line.split() for line in shown.splitlines()[1:]]
    printed = [line.split() for line in status.stdout.splitlines()]
    for line in expected:
        assert line in printed, f"the page shows {line}, which status did not print:\n{status}"
