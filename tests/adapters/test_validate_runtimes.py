"""`jobdef validate --check-imports` checks each handler as the runtime that runs it calls
it: a Celery task with the args alone (as a Celery worker calls its function), a job that
names `runtime.rq` with the args alone (as RQ calls it), any other as jobdef's worker
does, `handler(ctx, **args)`. Real Celery apps and modules, imported in validate's child
process."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from jobdef.cli import main

SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: {name}
handler: {handler}
args:
  reservation_id: {{type: integer}}
  note: {{type: string, required: false}}
errors: {{default: retry}}
{extra}"""


def _validate(folder: Path) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["validate", "--check-imports", str(folder / "jobdefs")])
    return code, out.getvalue()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """An empty project folder (the working directory) and a package name of its own."""
    (tmp_path / "jobdefs").mkdir()
    (tmp_path / "pyproject.toml").write_text("[tool.jobdef]\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path, f"shop_{uuid.uuid4().hex[:8]}"


def _celery_app(folder: Path, package: str, tasks: str) -> None:
    """docs/runtimes.md's layout: the app in <package>/celery.py, its tasks included."""
    (folder / package).mkdir()
    (folder / package / "__init__.py").write_text("", encoding="utf-8")
    (folder / package / "celery.py").write_text(
        textwrap.dedent(f"""\
            from celery import Celery
            from jobdef.adapters.celery import configure

            app = Celery("shop", broker="redis://127.0.0.1:6379/0", include=["{package}.tasks"])
            configure(app, sheets="jobdefs", database="sqlite:///jobdef.db")
            """),
        encoding="utf-8",
    )
    head = (
        "from jobdef.adapters.celery import SheetTask, sheet_task\n"
        f"from {package}.celery import app\n"
    )
    (folder / package / "tasks.py").write_text(head + textwrap.dedent(tasks), encoding="utf-8")


def _sheet(folder: Path, name: str, handler: str, extra: str = "") -> None:
    text = SHEET.format(name=name, handler=handler, extra=extra)
    (folder / "jobdefs" / f"{name}.yaml").write_text(text, encoding="utf-8")


@pytest.mark.slow
def test_a_celery_task_is_checked_as_a_celery_worker_calls_it(project) -> None:
    folder, package = project
    _celery_app(
        folder,
        package,
        """
        @sheet_task(app, "send_mail")
        def send_mail(reservation_id: int, note: str | None = None) -> None: ...


        @sheet_task(app, "send_bound", bind=True)
        def send_bound(self, reservation_id, note=None): ...


        @app.task(base=SheetTask, name="send_old")
        def send_old(reservation_id, note=None): ...


        @sheet_task(app, "send_wrong")
        def send_wrong(order_id): ...
        """,
    )
    for name in ("send_mail", "send_bound", "send_old", "send_wrong"):
        _sheet(folder, name, f"{package}.tasks:{name}")
    code, out = _validate(folder)
    assert code == 1
    [finding] = [line for line in out.splitlines() if " JD303 " in line]
    assert finding.startswith("jobdefs/send_wrong.yaml:4:10: error JD303 ")
    assert (
        f"handler {package}.tasks:send_wrong is a Celery task, which a Celery worker calls as "
        "send_wrong(**args), and its parameters do not fit the args of job 'send_wrong': "
        "unexpected (args it does not take): note, reservation_id; missing (parameters no "
        "arg fills): order_id; write def send_wrong(reservation_id, note=None), or add "
        "**kwargs"
    ) in finding
    for name in ("send_mail", "send_bound", "send_old"):
        assert (
            f"handler {package}.tasks:{name} imports and takes its args: a Celery task, which "
            "a Celery worker calls with the args alone\n"
        ) in out


@pytest.mark.slow
def test_a_task_that_takes_ctx_fails_as_celery_would_call_it(project) -> None:
    folder, package = project
    _celery_app(
        folder,
        package,
        """
        @sheet_task(app, "send_mail")
        def send_mail(ctx, reservation_id, note=None): ...
        """,
    )
    _sheet(folder, "send_mail", f"{package}.tasks:send_mail")
    code, out = _validate(folder)
    assert code == 1
    assert "missing (parameters no arg fills): ctx" in out
    assert "write def send_mail(reservation_id, note=None)" in out


@pytest.mark.slow
def test_a_job_that_names_runtime_rq_is_checked_as_rq_calls_it(project) -> None:
    folder, package = project
    (folder / f"{package}.py").write_text(
        "def sync_stock(reservation_id, note=None): ...\n"
        "def on_worker(ctx, reservation_id, note=None): ...\n",
        encoding="utf-8",
    )
    _sheet(folder, "sync_stock", f"{package}:sync_stock")
    code, out = _validate(folder)
    assert code == 1  # as jobdef's worker calls it, with ctx first, it does not fit
    assert (
        f"handler {package}:sync_stock is called as sync_stock(ctx, **args), but its "
        "parameters do not fit"
    ) in out
    assert (
        "; it fits the args alone, as Celery and RQ call: if RQ runs this job, say so in the "
        "sheet (runtime: {rq: {}}) or, for every job, in the Defaults; if Celery does, name "
        "its task (module:task) as handler\n"
    ) in out

    # Said once, for every job, in the Defaults: checked as RQ calls it.
    (folder / "jobdefs" / "defaults.yaml").write_text(
        "apiVersion: jobdef/v1\nkind: Defaults\nruntime: {rq: {accept: [on_reclaim]}}\n",
        encoding="utf-8",
    )
    code, out = _validate(folder)
    assert code == 0, out
    assert (
        f"handler {package}:sync_stock imports and takes its args: a function that RQ calls "
        "with the args alone (its job names runtime.rq)\n"
    ) in out

    # A handler written for jobdef's worker, in a job RQ runs, fails as RQ would call it.
    _sheet(folder, "on_worker", f"{package}:on_worker")
    code, out = _validate(folder)
    assert code == 1
    assert (
        f"handler {package}:on_worker is called as on_worker(**args) by RQ (the job names "
        "runtime.rq, jobdefs/defaults.yaml:3), and its parameters do not fit the args of job "
        "'on_worker': missing (parameters no arg fills): ctx; write def "
        "on_worker(reservation_id, note=None), or add **kwargs"
    ) in out


def test_a_sheet_run_by_jobdefs_worker_and_by_celery_checks_each_call(
    project, redis_url: str, prefix: str
) -> None:
    """The sheet's handler is the function jobdef's worker runs (ctx first); the Celery
    task of the same job is matched by name: validate checks the one, `jobdef check
    --runtime celery --app` the other."""
    folder, package = project
    (folder / f"{package}_jobs.py").write_text(
        "def send_mail(ctx, reservation_id, note=None): ...\n", encoding="utf-8"
    )
    _celery_app(
        folder,
        package,
        """
        @sheet_task(app, "send_mail")
        def send_mail_task(reservation_id): ...
        """,
    )
    celery_py = folder / package / "celery.py"
    celery_py.write_text(
        celery_py.read_text("utf-8")
        .replace("redis://127.0.0.1:6379/0", redis_url)
        .replace(
            'database="sqlite:///jobdef.db"', f'database="sqlite:///jobdef.db", prefix={prefix!r}'
        ),
        encoding="utf-8",
    )
    _sheet(folder, "send_mail", f"{package}_jobs:send_mail")
    code, out = _validate(folder)
    assert code == 0, out
    assert f"handler {package}_jobs:send_mail imports and takes its args: a plain function" in out

    out_text = io.StringIO()
    with contextlib.redirect_stdout(out_text), contextlib.redirect_stderr(io.StringIO()):
        code = main(["check", "--runtime", "celery", "--app", f"{package}.celery:app"])
    assert code == 1
    assert (
        f"infrastructure: task {package}.tasks.send_mail_task (job send_mail): a Celery "
        "worker calls "
        "send_mail_task(**args), and its parameters do not fit the sheet's args: unexpected "
        "(args it does not take): note; write def send_mail_task(reservation_id, note=None), "
        "or add **kwargs\n"
    ) in out_text.getvalue()


def test_jobdefs_worker_says_which_runtime_runs_a_handler_it_cannot_call(
    project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker serving every queue of a folder shared with Celery or RQ refuses to start
    (each line naming the job), and says whose handler it met and what to serve."""
    from jobdef.sheets.handlers import handler_problems
    from jobdef.sheets.pipeline import load_registry

    folder, package = project
    _celery_app(
        folder,
        package,
        '@sheet_task(app, "send_mail")\ndef send_mail(reservation_id, note=None): ...\n',
    )
    (folder / f"{package}_rq.py").write_text(
        "def sync_stock(reservation_id, note=None): ...\n", encoding="utf-8"
    )
    _sheet(folder, "send_mail", f"{package}.tasks:send_mail", "queue: mail\n")
    _sheet(folder, "sync_stock", f"{package}_rq:sync_stock", "runtime: {rq: {}}\n")
    monkeypatch.syspath_prepend(str(folder))
    problems = handler_problems(load_registry([folder / "jobdefs"]))
    assert len(problems) == 2
    assert problems[0].endswith(
        "; it is a Celery task, which a Celery worker runs: leave queue 'mail' to that "
        "runtime (jobdef worker --queues)"
    )
    assert problems[1].endswith(
        "; its job names runtime.rq, so RQ runs it: leave queue 'default' to that runtime "
        "(jobdef worker --queues)"
    )


DOCS = Path(__file__).resolve().parents[2] / "docs" / "runtimes.md"


def _block(language: str, first_line: str) -> str:
    """docs/runtimes.md's fenced ``language`` block that starts with ``first_line``."""
    text = DOCS.read_text("utf-8")
    for found in re.finditer(rf"^```{language}\n(.*?)^```$", text, re.M | re.S):
        if found.group(1).startswith(first_line):
            return found.group(1)
    raise AssertionError(f"docs/runtimes.md has no {language} block starting {first_line!r}")


def _validate_process(folder: Path) -> subprocess.CompletedProcess[str]:
    """`jobdef validate --strict --check-imports` run as a user runs it, in ``folder``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBDEF_")}
    env["PYTHONPATH"] = str(DOCS.parents[1] / "src")
    argv = [sys.executable, "-m", "jobdef", "validate", "--strict", "--check-imports"]
    return subprocess.run(
        argv, cwd=folder, env=env, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.slow
def test_docs_runtimes_shows_what_validate_prints_for_its_celery_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["init"]) == 0
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("", encoding="utf-8")
    for name in ("celery", "tasks"):
        code = _block("python", f"# shop/{name}.py\n")
        (tmp_path / "shop" / f"{name}.py").write_text(code, encoding="utf-8")
    (tmp_path / "jobdefs" / "send_reservation_mail.yaml").write_text(
        "apiVersion: jobdef/v1\nkind: Job\nname: send_reservation_mail\n"
        "title: Send the reservation mail\nhandler: shop.tasks:send_reservation_mail\n"
        "args:\n  reservation_id: {type: integer, minimum: 1}\n"
        'idempotency: {key: "{reservation_id}:reservation-mail"}\n',
        encoding="utf-8",
    )
    done = _validate_process(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = _block("console", "$ jobdef validate --strict --check-imports\n")
    assert "$ jobdef validate --strict --check-imports\n" + done.stdout == shown

    tasks = tmp_path / "shop" / "tasks.py"
    tasks.write_text(
        tasks.read_text("utf-8").replace("(reservation_id: int)", "(ctx, reservation_id: int)"),
        encoding="utf-8",
    )
    done = _validate_process(tmp_path)
    assert done.returncode == 1
    finding = _block("console", "jobdefs/send_reservation_mail.yaml:5:10: error JD303 ")
    assert done.stdout.startswith(finding)


@pytest.mark.slow
def test_a_flow_step_whose_job_is_a_celery_task_is_refused_in_one_line(project) -> None:
    """A flow runs only on jobdef's worker, which leaves a Celery task to Celery."""
    folder, package = project
    _celery_app(
        folder,
        package,
        """
        @sheet_task(app, "send_mail")
        def send_mail(reservation_id: int, note: str | None = None) -> None: ...
        """,
    )
    _sheet(folder, "send_mail", f"{package}.tasks:send_mail")
    (folder / "jobdefs" / "mail_flow.yaml").write_text(
        "apiVersion: jobdef/v1\nkind: Workflow\nname: mail_flow\n"
        "args: {reservation_id: {type: integer}}\n"
        "steps:\n  mail:\n    job: send_mail\n"
        "    args: {reservation_id: {from: args.reservation_id}}\n",
        encoding="utf-8",
    )
    code, out = _validate(folder)
    assert code == 1
    [finding] = [line for line in out.splitlines() if " JD372 " in line]
    assert finding == (
        "jobdefs/mail_flow.yaml:7:10: error JD372 step 'mail' of workflow 'mail_flow' runs "
        f"job 'send_mail', but its handler {package}.tasks:send_mail is a Celery task, which "
        "a Celery worker runs, and a flow's steps run only on jobdef's worker; give the step "
        "a job whose handler jobdef's worker calls, handler(ctx, **args) (the same code, its "
        "own sheet)"
    )
