"""The test project's handle and its worker processes, for the Django tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobdef.backends.records import ClaimOptions, ErrorInfo

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]


@dataclass
class Project:
    """The configured test project: where its databases and files are."""

    root: Path
    sqlite: Path
    schema: str
    pg_url: str
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    pg_ready: bool = False

    def worker_env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("JOBDEF_")}
        env.update(self.env)
        # The channel's URL must be set for a worker to start; a test that reads the
        # notifications passes its receiver's. Nothing listens on the discard port.
        env["JDPROJECT_HOOK_URL"] = "http://127.0.0.1:9/unused"
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(HERE), str(REPO / "src"), os.environ.get("PYTHONPATH")) if p
        )
        env.update(extra)
        return env

    def log_lines(self) -> list[str]:
        return self.log.read_text("utf-8").splitlines() if self.log.exists() else []

    def signal_lines(self, result: Any) -> list[str]:
        """What the receivers of the test project logged for the job of ``result``, in
        order (the SQLite and PostgreSQL stores number their jobs each from 1)."""
        job = f" job={result.backend}:{result.id} "
        return [
            line.removeprefix("signal ").replace(job, " ")
            for line in self.log_lines()
            if line.startswith("signal ") and job in line
        ]

    def backend(self, alias: str) -> Any:
        from jobdef.contrib.django.compat import task_backends

        return task_backends()[alias]


def worker(
    project: Project,
    alias: str,
    *args: str,
    env: dict[str, str] | None = None,
    manage: bool = False,
) -> subprocess.Popen[str]:
    """A real worker process for the jobs of ``alias`` (``manage.py jobdef_worker`` or
    ``python -m jobdef worker`` with DJANGO_SETTINGS_MODULE)."""
    base = (
        [sys.executable, str(HERE / "manage.py"), "jobdef_worker"]
        if manage
        else [sys.executable, "-m", "jobdef", "worker"]
    )
    db = [] if alias == "default" else ["--db", project.backend(alias).database_url]
    return subprocess.Popen(
        [*base, *db, "--poll", "50ms", "--log-level", "warning", *args],
        env=project.worker_env(JDPROJECT_DB=alias, **(env or {})),
        cwd=project.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def finish(process: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str, str]:
    """Wait for a worker (SIGTERM first if it still runs): its exit code and output."""
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    return process.returncode, out, err


def stop(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    process.send_signal(signal.SIGTERM)
    return finish(process, 30)


def unique() -> int:
    """A reservation id (or item) no other test used: the sheets dedupe on it."""
    return uuid.uuid4().int % 2**31 + 1


def drain(project: Project, alias: str, **env: str) -> str:
    """Run a burst worker for ``alias`` until nothing is runnable; its stderr."""
    code, _out, err = finish(worker(project, alias, "--burst", env=env), timeout=90)
    assert code == 0, err
    return err


def dead_job(project: Project) -> int:
    """A forbidden job taken and buried through the engine, as a worker would."""
    from jdproject import tasks

    job_id = int(tasks.forbidden.enqueue(uuid.uuid4().int % 2**31).id)
    engine = project.backend("default").engine()
    claimed = engine.claim(ClaimOptions(worker_id="admin-test", lease_seconds=30, limit=1000))
    for record in claimed:
        if record.id == job_id:
            error = ErrorInfo("PermissionError", "the account is closed")
            assert engine.bury(record.lease, error)
        else:  # another test's job: give it back untouched
            engine.release(record.lease)
    assert engine.get(job_id).state == "dead"
    return job_id
