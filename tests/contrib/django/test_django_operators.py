"""The operator commands on a Django project's own database: ``manage.py jobdef
COMMAND`` and plain ``jobdef COMMAND`` with ``DJANGO_SETTINGS_MODULE`` read the jobs of
the project's ``JobdefBackend``, as its worker does; in the project's folder without
either, the line says what to run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from jd_support import HERE, Project, dead_job


def run(project: Project, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        env=project.worker_env(**env),
        cwd=project.root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def manage(project: Project, *argv: str) -> subprocess.CompletedProcess[str]:
    return run(project, sys.executable, str(HERE / "manage.py"), "jobdef", *argv)


@pytest.mark.slow
def test_manage_py_jobdef_lists_and_requeues_the_projects_dead_job(project: Project) -> None:
    job_id = dead_job(project)
    listed = manage(project, "jobs", "--state", "dead", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    assert job_id in [job["id"] for job in json.loads(listed.stdout)]
    status = manage(project, "status")
    assert status.returncode == 0, status.stderr
    rows = [line.split()[:3] for line in status.stdout.splitlines()]
    assert ["forbidden", "default", "dead"] in rows
    requeued = manage(project, "requeue", str(job_id))
    assert (requeued.returncode, requeued.stdout, requeued.stderr) == (0, "requeued 1 job\n", "")
    assert project.backend("default").engine().get(job_id).state == "queued"


@pytest.mark.slow
def test_plain_jobdef_follows_django_settings_module(project: Project) -> None:
    job_id = dead_job(project)
    shown = run(project, sys.executable, "-m", "jobdef", "jobs", "show", str(job_id))
    assert shown.returncode == 0, shown.stderr
    assert "forbidden" in shown.stdout
    assert "PermissionError: the account is closed" in shown.stdout


@pytest.mark.slow
def test_in_a_django_folder_without_the_settings_the_line_names_manage_py_jobdef(
    project: Project, tmp_path: Path
) -> None:
    shutil.copy(HERE / "manage.py", tmp_path / "manage.py")
    env = project.worker_env()
    del env["DJANGO_SETTINGS_MODULE"]
    done = subprocess.run(
        [sys.executable, "-m", "jobdef", "status"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "jobdef status: error: no job database at jobdef.db; pass --db (or set "
        "JOBDEF_DATABASE_URL) to the database your workers use, or create it with `jobdef db "
        "upgrade`; this is a Django project (manage.py): run `python manage.py jobdef status`, "
        "which reads the database of its JobdefBackend\n"
    )
