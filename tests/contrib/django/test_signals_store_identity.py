"""A worker whose ``--db`` spells the backend's database another way sends the signals;
one whose store is no backend's says once, loudly, that it cannot.

Real worker processes of the test project, with the receivers of jdproject.tasks
connected (JDPROJECT_SIGNALS): the store a worker serves is matched to a backend of
``TASKS`` by the id the store holds, not by its URL's spelling.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from jd_support import Project, finish, unique, worker

from jobdef.backends import open_backend
from jobdef.contrib.django.compat import TaskResultStatus
from jobdef.runtime.queue import Queue

pytestmark = pytest.mark.slow

UNSENT = "task_started and task_finished are not sent in this process"


def burst(project: Project, db: str, **env: str) -> str:
    """A burst worker of the project on ``db`` (one child process); its stderr."""
    code, _out, err = finish(
        worker(project, "default", "--burst", "--concurrency", "1", "--db", db, env=env),
        timeout=90,
    )
    assert code == 0, err
    return err


def test_a_worker_on_localhost_sends_the_signals_of_the_backend_on_127_0_0_1(
    pg_project: Project,
) -> None:
    from jdproject import tasks

    url = pg_project.backend("pg").database_url
    assert "@127.0.0.1:" in url, f"the test server's URL names no 127.0.0.1: {url}"
    other = url.replace("@127.0.0.1:", "@localhost:", 1)
    reported = tasks.report.using(backend="pg").enqueue(item=unique(), size=3)
    err = burst(pg_project, other, JDPROJECT_SIGNALS="1")
    reported.refresh()
    assert reported.status == TaskResultStatus.SUCCESSFUL
    assert [line.split(" ")[:3] for line in pg_project.signal_lines(reported)] == [
        ["started", "report", "status=RUNNING"],
        ["finished", "report", "status=SUCCESSFUL"],
    ], err
    assert UNSENT not in err


def test_a_worker_on_a_relative_path_through_a_symlink_sends_the_signals(
    project: Project,
) -> None:
    from jdproject import tasks

    link = project.root / "linked"
    if not link.exists():
        link.symlink_to(project.sqlite.parent, target_is_directory=True)
    relative = os.path.relpath(link / project.sqlite.name, project.root)  # the worker's cwd
    reported = tasks.report.enqueue(item=unique(), size=4)
    err = burst(project, f"sqlite:///{relative}", JDPROJECT_SIGNALS="1")
    reported.refresh()
    assert reported.status == TaskResultStatus.SUCCESSFUL
    assert [line.split(" ")[:3] for line in project.signal_lines(reported)] == [
        ["started", "report", "status=RUNNING"],
        ["finished", "report", "status=SUCCESSFUL"],
    ], err
    assert UNSENT not in err


def _store_with_two_reports(project: Project, path: Path) -> tuple[str, list[int]]:
    """Another SQLite store than any backend's, holding two ``report`` jobs."""
    url = f"sqlite:///{path}"
    engine = open_backend(url)
    try:
        queue = Queue(engine, project.backend("default").registry)
        ids = [queue.enqueue("report", {"item": unique(), "size": 1}).id for _ in range(2)]
    finally:
        engine.close()
    return url, ids


def test_a_worker_on_a_store_no_backend_names_warns_once_saying_what_to_configure(
    project: Project, tmp_path: Path
) -> None:
    url, ids = _store_with_two_reports(project, tmp_path / "other.db")
    err = burst(project, url, JDPROJECT_SIGNALS="1")
    engine = open_backend(url, create=False)
    try:
        assert [engine.get(job_id).state for job_id in ids] == ["done", "done"]  # type: ignore[union-attr]
        other_id = engine.store_id()
    finally:
        engine.close()
    warnings = [line for line in err.splitlines() if UNSENT in line]
    assert len(warnings) == 1, err  # one per process and store, not one per job
    [line] = warnings
    assert " jobdef.worker WARNING " in line
    mine = project.backend("default").engine().store_id()
    assert (
        f"for the jobs of {tmp_path / 'other.db'}: no JobdefBackend of TASKS stores its "
        f"jobs there (TASKS['default'] stores its jobs in {project.sqlite}, another store "
        f"(id {mine}, not {other_id}); TASKS['pg'] stores its jobs in schema "
        f"'{project.schema}' at "
    ) in line
    assert ", on another engine); run the worker on a backend's database" in line
    assert "set OPTIONS['database'] of the backend" in line
