"""``manage.py check`` runs ``jobdef validate`` over the sheets and finds tasks without one."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from jd_support import HERE, Project

SHEETS = HERE / "jdproject" / "jobdefs"


def manage_check(project: Project, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(HERE / "manage.py"), "check"],
        env=project.worker_env(**env),
        cwd=project.root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_project_passes_check(project: Project) -> None:
    from django.core.management import call_command

    call_command("check")  # raises SystemCheckError on any error


@pytest.mark.slow
def test_a_broken_sheet_fails_check_at_its_line(project: Project, tmp_path: Path) -> None:
    sheets = tmp_path / "jobdefs"
    shutil.copytree(SHEETS, sheets)
    flaky = sheets / "flaky.yaml"
    lines = flaky.read_text("utf-8").splitlines()
    at = lines.index("max_attempts: 3") + 1
    lines[at - 1] = "max_attempts: lots"
    flaky.write_text("\n".join(lines) + "\n", "utf-8")

    done = manage_check(project, JDPROJECT_SHEETS=str(sheets))
    assert done.returncode == 1, done.stderr
    errors = [line for line in done.stderr.splitlines() if "(jobdef." in line]
    # Reported once, though two backends read the same sheets.
    assert errors == [
        f"?: (jobdef.JD103) {flaky}:{at}:15: max_attempts: expected an integer, "
        "got the string 'lots'"
    ]
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_task_without_a_sheet_fails_check_naming_the_sheet_to_write(project: Project) -> None:
    done = manage_check(project, JDPROJECT_TASK_MODULES="jdproject.orphans")
    assert done.returncode == 1, done.stderr
    [error] = [line for line in done.stderr.splitlines() if "(jobdef.E001)" in line]
    assert error.startswith("jdproject.orphans.rebuild_search_index: (jobdef.E001) ")
    assert f"write {SHEETS / 'rebuild_search_index.yaml'}" in error
    assert "`handler: jdproject.orphans:rebuild_search_index`" in error


@pytest.mark.slow
def test_a_sheet_of_the_tasks_name_with_another_handler_is_named_with_the_line_to_change(
    project: Project, tmp_path: Path
) -> None:
    """As ``jobdef new`` leaves a sheet: its handler a placeholder, not the task."""
    sheets = tmp_path / "jobdefs"
    shutil.copytree(SHEETS, sheets)
    sheet = sheets / "rebuild_search_index.yaml"
    sheet.write_text(
        "apiVersion: jobdef/v1\nkind: Job\nname: rebuild_search_index\ntitle: Rebuild\n"
        "owner: test-team\nhandler: app.jobs:rebuild_search_index\n"
        "args:\n  shard: {type: integer}\nmax_attempts: 1\ntimeout: 30s\n"
        "errors: {default: fatal}\nrerun: jobdef requeue --job rebuild_search_index\n",
        "utf-8",
    )
    done = manage_check(
        project, JDPROJECT_TASK_MODULES="jdproject.orphans", JDPROJECT_SHEETS=str(sheets)
    )
    assert done.returncode == 1, done.stderr
    [error] = [line for line in done.stderr.splitlines() if "(jobdef.E001)" in line]
    assert error == (
        "jdproject.orphans.rebuild_search_index: (jobdef.E001) task "
        "jdproject.orphans.rebuild_search_index has no sheet whose handler names it; job "
        f"'rebuild_search_index' at {sheet}:6 has `handler: app.jobs:rebuild_search_index`, "
        "which is not this task: write `handler: jdproject.orphans:rebuild_search_index` "
        "there, or, if that handler is this task by another path, map it: OPTIONS['jobs'] = "
        "{'jdproject.orphans.rebuild_search_index': 'rebuild_search_index'}"
    )


def test_check_messages_of_a_warning_are_warnings(project: Project, tmp_path: Path) -> None:
    from django.core import checks

    from jobdef.contrib.django.checks import backend_messages

    sheets = tmp_path / "jobdefs"
    shutil.copytree(SHEETS, sheets)
    ping = sheets / "ping.yaml"
    ping.write_text(ping.read_text("utf-8").replace("item:", "n:"), "utf-8")
    backend = project.backend("default")
    saved = backend.sheets
    backend.sheets = [sheets]
    try:
        found = list(backend_messages(backend, [backend]))
    finally:
        backend.sheets = saved
    [warning] = [m for m in found if m.id == "jobdef.JD009"]
    assert isinstance(warning, checks.Warning)
    assert warning.msg.startswith(f"{ping}:8:3: ")


MISFITS = """\
apiVersion: jobdef/v1
kind: Job
name: {name}
title: A task at odds with its sheet
owner: test-team
handler: jdproject.misfits:{name}
queue: mail
args:
  {arg}: {{type: integer}}
max_attempts: 1
timeout: 30s
errors: {{default: fatal}}
rerun: jobdef requeue --job {name} --state dead
"""


def test_a_task_that_contradicts_its_sheet_is_an_error(project: Project, tmp_path: Path) -> None:
    from jobdef.contrib.django import task as task_module
    from jobdef.contrib.django.checks import backend_messages

    sheets = tmp_path / "jobdefs"
    shutil.copytree(SHEETS, sheets)
    (sheets / "bulk_mail.yaml").write_text(
        MISFITS.format(name="bulk_mail", arg="reservation_id"), "utf-8"
    )
    (sheets / "misfit.yaml").write_text(MISFITS.format(name="misfit", arg="order"), "utf-8")
    backend = project.backend("default")
    saved = backend.sheets, backend.options.get("task_modules")
    backend.sheets, backend.options["task_modules"] = [sheets], ["jdproject.misfits"]
    try:
        found = {m.id: m for m in backend_messages(backend, [backend])}
    finally:
        backend.sheets, backend.options["task_modules"] = saved
        for key in [k for k in task_module.made if k[0] == "jdproject.misfits"]:
            del task_module.made[key]
    assert "queue_name='bulk'" in found["jobdef.E002"].msg
    assert "'mail'" in found["jobdef.E002"].msg
    misfit = found["jobdef.E004"].msg
    assert misfit.startswith(f"{sheets / 'misfit.yaml'}:6:")
    assert "unexpected (args it does not take): order" in misfit
    assert "write def misfit(order)" in misfit  # no ctx: the task does not take it
    assert misfit.endswith(f"; or change the sheet's args at {sheets / 'misfit.yaml'}:9")


def test_a_sheet_meant_for_a_task_with_another_handler_is_named_at_its_line(
    project: Project, tmp_path: Path
) -> None:
    """The sheet exists and its handler path is wrong: check names that sheet's line and
    the handler to write there, not a sheet to write."""
    from jobdef.contrib.django import task as task_module
    from jobdef.contrib.django.checks import backend_messages

    sheets = tmp_path / "jobdefs"
    shutil.copytree(SHEETS, sheets)
    sheet = sheets / "rebuild_search_index.yaml"
    sheet.write_text(
        MISFITS.format(name="rebuild_search_index", arg="shard").replace(
            "jdproject.misfits:", "jdproject.orphan:"
        ),
        "utf-8",
    )
    backend = project.backend("default")
    saved = backend.sheets, backend.options.get("task_modules")
    backend.sheets, backend.options["task_modules"] = [sheets], ["jdproject.orphans"]
    try:
        found = [m for m in backend_messages(backend, [backend]) if m.id == "jobdef.E001"]
    finally:
        backend.sheets, backend.options["task_modules"] = saved
        for key in [k for k in task_module.made if k[0] == "jdproject.orphans"]:
            del task_module.made[key]
    [error] = found
    assert error.obj == "jdproject.orphans.rebuild_search_index"
    assert error.msg == (
        "task jdproject.orphans.rebuild_search_index has no sheet whose handler names it; "
        f"job 'rebuild_search_index' at {sheet}:6 has "
        "`handler: jdproject.orphan:rebuild_search_index`, which is not this task: write "
        "`handler: jdproject.orphans:rebuild_search_index` there, or, if that handler is this "
        "task by another path, map it: OPTIONS['jobs'] = "
        "{'jdproject.orphans.rebuild_search_index': 'rebuild_search_index'}"
    )
    assert "write " + str(sheet) not in error.msg
