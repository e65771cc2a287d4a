"""One rule for finding handlers: `validate --check-imports` and `jobdef worker` import alike.

Each command runs as a real process with ``python -P`` (no working directory on
``sys.path``, as with the installed ``jobdef`` script), on a project folder of its
own with a real SQLite file. The default folder is the one of the pyproject.toml
holding ``[tool.jobdef]``; ``[tool.jobdef] pythonpath`` and ``--pythonpath``
choose others. A worker whose handler does not import refuses to start, and a
handler that disappears under a running worker releases its job instead of
burying it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jobdef.backends import open_backend
from jobdef.runtime.queue import Queue
from jobdef.sheets.pipeline import load_registry

pytestmark = pytest.mark.slow  # worker processes

SRC = Path(__file__).resolve().parents[2] / "src"

SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: {name}
title: Job {name}
description: A job of the handler path tests.
owner: shop
handler: {handler}
queue: {queue}
priority: {priority}
args:
  item: {{type: integer}}
max_attempts: 1
timeout: 30s
errors: {{default: fatal}}
retention: {{done: 1h, dead: until_resolved}}
"""

TASKS = """\
from pathlib import Path

def touch(ctx, item):
    Path(__file__).with_name(f"touched-{item}").write_text("x")
"""

# The first job deletes the module of the second and kills its own process: the next
# process the worker starts no longer finds that module, as after a bad deployment.
WRECK = """\
import os
import shutil
from pathlib import Path

def run(ctx, item):
    here = Path(__file__).parent
    (here / "victim.py").unlink()
    shutil.rmtree(here / "__pycache__", ignore_errors=True)
    os._exit(1)
"""

VICTIM = """\
def run(ctx, item):
    pass
"""


def _project(
    root: Path, jobs: dict[str, str], *, pyproject: str, code: str = "shop", queue: str = "default"
) -> Path:
    """A project: pyproject.toml, a ``shop`` package under ``code``, one sheet per job."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    package = root / code / "shop"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "tasks.py").write_text(TASKS, encoding="utf-8")
    (package / "wreck.py").write_text(WRECK, encoding="utf-8")
    (package / "victim.py").write_text(VICTIM, encoding="utf-8")
    sheets = root / "jobdefs"
    sheets.mkdir()
    for priority, (name, handler) in enumerate(jobs.items()):
        text = SHEET.format(name=name, handler=handler, queue=queue, priority=-priority)
        (sheets / f"{name}.yaml").write_text(text, encoding="utf-8")
    return package


def _jobdef(cwd: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBDEF_")}
    env["PYTHONPATH"] = str(SRC)  # jobdef itself, never the project
    return subprocess.run(
        [sys.executable, "-P", "-m", "jobdef", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _enqueue(root: Path, db: str, job: str, item: int) -> int:
    backend = open_backend(db)
    try:
        queue = Queue(backend, load_registry([root / "jobdefs"]))
        return queue.enqueue(job, {"item": item}).id
    finally:
        backend.close()


def _job(db: str, job_id: int) -> tuple[str, int, str]:
    backend = open_backend(db)
    try:
        record = backend.get(job_id)
        assert record is not None
        error = record.last_error.message if record.last_error else ""
        return record.state, record.attempt, error
    finally:
        backend.close()


def _db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'jobs.db'}"


@pytest.mark.parametrize("where", [".", "deep/inside"])
def test_the_worker_finds_the_handlers_validate_found(tmp_path: Path, where: str) -> None:
    """From the project folder or below it: the folder of the pyproject holding
    [tool.jobdef] is where handlers come from, for the check and for the worker."""
    root = tmp_path / "project"
    package = _project(
        root,
        {"touch": "shop.tasks:touch"},
        pyproject='[tool.jobdef]\nsheets = "jobdefs"\n',
        code=".",
    )
    cwd = root / where
    cwd.mkdir(parents=True, exist_ok=True)
    checked = _jobdef(cwd, "validate", "--strict", "--check-imports")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    job_id = _enqueue(root, _db(tmp_path), "touch", 1)
    ran = _jobdef(cwd, "worker", "--burst", "--db", _db(tmp_path))
    assert ran.returncode == 0, ran.stderr
    assert _job(_db(tmp_path), job_id)[0] == "done", ran.stderr
    assert (package / "touched-1").exists()


def test_pythonpath_of_tool_jobdef_and_the_flag_name_the_folder(tmp_path: Path) -> None:
    root = tmp_path / "project"
    pyproject = '[tool.jobdef]\nsheets = "jobdefs"\npythonpath = "src"\n'
    _project(root, {"touch": "shop.tasks:touch"}, pyproject=pyproject, code="src")
    checked = _jobdef(root, "validate", "--strict", "--check-imports")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    job_id = _enqueue(root, _db(tmp_path), "touch", 1)
    ran = _jobdef(root, "worker", "--burst", "--db", _db(tmp_path))
    assert _job(_db(tmp_path), job_id)[0] == "done", ran.stderr

    # --pythonpath wins over [tool.jobdef]: a folder without the package finds nothing.
    (root / "empty").mkdir()
    checked = _jobdef(root, "validate", "--check-imports", "--pythonpath", "empty")
    assert checked.returncode == 1
    assert "module shop not found" in checked.stdout
    refused = _jobdef(root, "worker", "--burst", "--db", _db(tmp_path), "--pythonpath", "empty")
    assert refused.returncode == 2
    assert "handler shop.tasks:touch: module shop not found" in refused.stderr


def test_a_worker_refuses_to_start_when_a_served_handler_does_not_import(tmp_path: Path) -> None:
    root = tmp_path / "project"
    jobs = {"touch": "shop.tasks:touch", "lost": "shop.tasks:gone", "other": "shop.nowhere:run"}
    _project(root, jobs, pyproject='[tool.jobdef]\nsheets = "jobdefs"\n', code=".")
    # `other` is in a queue of its own, which this worker does not serve.
    other = root / "jobdefs" / "other.yaml"
    other.write_text(other.read_text().replace("queue: default", "queue: elsewhere"))
    job_id = _enqueue(root, _db(tmp_path), "touch", 1)
    refused = _jobdef(root, "worker", "--burst", "--db", _db(tmp_path), "--queues", "default")
    assert refused.returncode == 2, refused.stderr
    lines = refused.stderr.splitlines()
    problems = [line for line in lines if ".yaml: job " in line]
    assert problems == [
        f"{root / 'jobdefs' / 'lost.yaml'}: job 'lost': handler shop.tasks:gone: "
        "module shop.tasks has no attribute gone"
    ]
    assert lines[0].startswith("jobdef worker: error: the worker does not start: 1 handler")
    assert "Traceback" not in refused.stderr
    assert _job(_db(tmp_path), job_id)[:2] == ("queued", 0)


def test_a_handler_gone_under_a_running_worker_releases_its_job(tmp_path: Path) -> None:
    """A child started after the code changed on disk cannot import a handler: the job is
    released (attempt not counted), never buried, and the worker says why, stops, and
    exits non-zero with one line saying why."""
    root = tmp_path / "project"
    jobs = {"wreck": "shop.wreck:run", "victim": "shop.victim:run"}
    _project(root, jobs, pyproject='[tool.jobdef]\nsheets = "jobdefs"\n', code=".")
    db = _db(tmp_path)
    wreck = _enqueue(root, db, "wreck", 1)
    victim = _enqueue(root, db, "victim", 2)
    ran = _jobdef(root, "worker", "--burst", "--db", db, "--concurrency", "1")
    assert ran.returncode == 1, ran.stderr
    assert ran.stderr.splitlines()[-1].startswith(
        "jobdef worker: error: stopped: handler shop.victim:run does not import "
        "(ModuleNotFoundError"
    ), ran.stderr
    assert "restart it once the deployment is whole" in ran.stderr.splitlines()[-1]
    assert _job(db, wreck)[0] == "dead"  # it crashed its own process: a failed attempt
    state, attempt, error = _job(db, victim)
    assert (state, attempt) == ("queued", 0), (state, attempt, error, ran.stderr)
    [line] = [line for line in ran.stderr.splitlines() if "released, attempt not counted" in line]
    assert f"job {victim} (victim) released" in line
    assert "handler shop.victim:run does not import (ModuleNotFoundError" in line
    assert "Traceback" not in ran.stderr


def test_validate_no_longer_imports_from_an_unconfigured_working_directory(
    tmp_path: Path,
) -> None:
    """With [tool.jobdef] in a parent folder, the working directory is not searched: the
    check finds what the worker would, nothing more."""
    root = tmp_path / "project"
    _project(
        root,
        {"touch": "shop.tasks:touch"},
        pyproject='[tool.jobdef]\nsheets = "jobdefs"\n',
        code="lib",
    )
    checked = _jobdef(root / "lib", "validate", "--check-imports")
    assert checked.returncode == 1
    assert "module shop not found" in checked.stdout


def test_a_worker_says_when_a_queue_it_serves_has_no_job_of_its_sheets(tmp_path: Path) -> None:
    """A misspelt --queues name: the worker starts (another deployment's sheets may use
    the queue) but says in one warning that it takes nothing there, and which queues its
    sheets use."""
    root = tmp_path / "project"
    pyproject = '[tool.jobdef]\nsheets = "jobdefs"\n'
    _project(root, {"touch": "shop.tasks:touch"}, pyproject=pyproject, code=".")
    job_id = _enqueue(root, _db(tmp_path), "touch", 1)
    ran = _jobdef(root, "worker", "--burst", "--db", _db(tmp_path), "--queues", "defualt,default")
    assert ran.returncode == 0, ran.stderr
    [warning] = [line for line in ran.stderr.splitlines() if "no job of its sheets" in line]
    assert "serves defualt, on which no job of its sheets runs" in warning
    assert "(the sheets' queues: default); check --queues" in warning
    assert _job(_db(tmp_path), job_id)[0] == "done"
    # A worker of every queue, or of queues its sheets use, says nothing of the kind.
    quiet = _jobdef(root, "worker", "--burst", "--db", _db(tmp_path), "--queues", "default")
    assert quiet.returncode == 0, quiet.stderr
    assert "no job of its sheets" not in quiet.stderr


# Imported by the worker's process, it waits (up to 20 s) for a handler process to have
# imported it too, and notes whether one had: the worker checks its handlers while its
# handler processes start, not before starting them.
SLOW_IMPORT = """\
import multiprocessing
import os
import time
from pathlib import Path

HERE = Path(__file__).parent
if multiprocessing.parent_process() is not None:  # a handler process
    (HERE / "imported-by-a-handler-process").write_text(str(os.getpid()))
else:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if (HERE / "imported-by-a-handler-process").exists():
            break
        time.sleep(0.01)
    seen = (HERE / "imported-by-a-handler-process").exists()
    (HERE / "checked").write_text(str(seen))


def run(ctx, item):
    pass
"""


def test_the_handler_processes_import_the_handlers_while_the_worker_checks_them(
    tmp_path: Path,
) -> None:
    """An application's import can take seconds: the worker's own (to check the handlers)
    and its handler processes' run at once, not one after the other."""
    root = tmp_path / "project"
    package = _project(
        root, {"slow": "shop.slow:run"}, pyproject='[tool.jobdef]\nsheets = "jobdefs"\n', code="."
    )
    (package / "slow.py").write_text(SLOW_IMPORT, encoding="utf-8")
    job_id = _enqueue(root, _db(tmp_path), "slow", 1)
    ran = _jobdef(root, "worker", "--burst", "--db", _db(tmp_path))
    assert ran.returncode == 0, ran.stderr
    assert (package / "checked").read_text() == "True"
    assert _job(_db(tmp_path), job_id)[0] == "done"
