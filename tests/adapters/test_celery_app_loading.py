"""``--app`` loads a Celery app as ``celery -A`` does (``include=[...]`` tasks too), and
``jobdef check --runtime celery --app`` checks what really runs: the queues the running
workers consume, a task per sheet, and no Celery retry setting left on a sheet task.

The application is a package written into the test's folder in the standard layout
(``shop/celery.py`` with ``Celery(..., include=["shop.tasks"])``); its workers are real
``celery worker`` processes. Each app has a control exchange of its own, so the workers
of other tests on the same broker never answer its ``inspect``.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from jobdef.adapters.infra import load_object
from jobdef.backends import open_backend
from jobdef.backends.elsewhere import AttemptElsewhere, DeadElsewhere, record_dead_elsewhere
from jobdef.backends.records import ErrorInfo
from jobdef.cli import main
from support.polling import eventually
from support.workers import SRC, Processes, WorkerProcess

SHEET = """\
apiVersion: jobdef/v1
kind: Job
name: {name}
handler: {handler}
queue: {queue}
max_attempts: 3
backoff: {{strategy: fixed, initial: 1s, jitter: none}}
timeout: 30s
errors: {{default: retry}}
args:
  to: {{type: string, required: true}}
"""

TASKS = """\
from pathlib import Path

from jobdef.adapters.celery import SheetTask, sheet_task

from {package}.celery import app


@sheet_task(app, "send_mail")
def send_mail(to: str) -> None:
    Path({marker!r}).write_text(to, encoding="utf-8")
"""


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


class Project:
    """The application package ``package`` in ``folder``: its sheets, database, queue."""

    def __init__(self, folder: Path, prefix: str, broker: str, redis_url: str) -> None:
        self.folder = folder
        self.package = f"{prefix.replace('-', '_')}_shop"
        self.queue = f"{prefix}-mail"
        self.sheets = folder / "jobdefs"
        self.db = f"sqlite:///{folder / 'jobdef.db'}"
        self.marker = folder / "sent.txt"
        self.sheets.mkdir()
        self.sheet("send_mail")
        root = folder / self.package
        root.mkdir()
        (root / "__init__.py").write_text("", encoding="utf-8")
        (root / "celery.py").write_text(
            textwrap.dedent(f"""\
                from celery import Celery
                from jobdef.adapters.celery import configure

                app = Celery("shop", broker={broker!r}, include=["{self.package}.tasks"])
                app.conf.update(
                    control_exchange={prefix!r},
                    broker_connection_retry_on_startup=True,
                    task_ignore_result=True,
                )
                configure(app, sheets={str(self.sheets)!r}, database={self.db!r},
                          redis={redis_url!r}, prefix={prefix!r})
                app.autodiscover_tasks(["{self.package}.audit"])
                """),
            encoding="utf-8",
        )
        (root / "audit").mkdir()
        (root / "audit" / "__init__.py").write_text("", encoding="utf-8")
        (root / "audit" / "tasks.py").write_text(
            f"from {self.package}.celery import app\n\n\n@app.task\ndef audit() -> None: ...\n",
            encoding="utf-8",
        )
        self.tasks(TASKS)
        open_backend(self.db).close()

    def sheet(self, name: str) -> None:
        text = SHEET.format(name=name, handler=f"shop.tasks:{name}", queue=self.queue)
        (self.sheets / f"{name}.yaml").write_text(text, encoding="utf-8")

    def tasks(self, text: str) -> None:
        code = text.format(package=self.package, marker=str(self.marker))
        (self.folder / self.package / "tasks.py").write_text(code, encoding="utf-8")

    def jobdef(self, *argv: str) -> subprocess.CompletedProcess[str]:
        """``jobdef ARGV`` as a user runs it in the project's folder (a process of its
        own: Celery shares a task among every app of a process)."""
        command = [sys.executable, "-m", "jobdef", *argv]
        env = os.environ | {"PYTHONPATH": str(SRC)}
        return subprocess.run(
            command,
            check=False,
            cwd=self.folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def check(self) -> tuple[int, str]:
        spec = f"{self.package}.celery:app"
        done = self.jobdef("check", "--runtime", "celery", "--sheets", "jobdefs", "--app", spec)
        assert not done.stderr, done.stderr
        return done.returncode, done.stdout

    def worker(self, processes: Processes, name: str, *options: str) -> WorkerProcess:
        command = [
            sys.executable, "-m", "celery", "-A", self.package, "worker", "--pool", "solo",
            "--without-gossip", "--without-mingle", "--without-heartbeat",
            "--loglevel", "INFO", "--hostname", f"{name}@%h", *options,
        ]  # fmt: skip
        path = os.pathsep.join([str(self.folder), str(SRC)])
        started = processes.start(name, command, env={"PYTHONPATH": path})
        eventually(lambda: "ready." in started.log(), 60, f"{name} to be ready")
        return started


def test_check_names_a_broker_that_does_not_answer_without_its_password(
    tmp_path: Path, prefix: str, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    project = Project(tmp_path, prefix, f"redis://:s3cret@127.0.0.1:{port}/0", redis_url)
    code, out = project.check()
    assert code == 1
    assert (
        f"infrastructure: the Celery broker at redis://:***@127.0.0.1:{port}/0 does not answer: "
        in out
    )
    assert "s3cret" not in out


@pytest.fixture(params=["redis", "amqp"])
def broker(request: pytest.FixtureRequest, redis_url: str) -> str:
    if request.param == "amqp":
        return str(request.getfixturevalue("amqp_url"))
    return redis_url


@pytest.fixture
def project(
    tmp_path: Path, prefix: str, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> Project:
    monkeypatch.chdir(tmp_path)
    return Project(tmp_path, prefix, redis_url, redis_url)


@pytest.fixture
def project_on_broker(
    tmp_path: Path, prefix: str, redis_url: str, broker: str, monkeypatch: pytest.MonkeyPatch
) -> Project:
    """The project with its broker on Redis, then on RabbitMQ (its run store on Redis)."""
    monkeypatch.chdir(tmp_path)
    return Project(tmp_path, prefix, broker, redis_url)


def test_every_form_of_celery_a_loads_the_tasks_the_app_includes(project: Project) -> None:
    package = project.package
    for spec in (f"{package}.celery:app", f"{package}.celery.app", f"{package}.celery", package):
        app = load_object(spec)
        assert app.main == "shop", spec
        assert f"{package}.tasks.send_mail" in app.tasks, spec  # include=[...]
        assert f"{package}.audit.tasks.audit" in app.tasks, spec  # autodiscover_tasks
    code, _, err = _run(["check", "--runtime", "celery", "--app", f"{package}.celery:nothing"])
    assert (code, err.strip()) == (
        2,
        f"jobdef check: error: --app '{package}.celery:nothing': {package}.celery has no nothing",
    )


def test_a_job_dead_in_celery_goes_back_through_an_app_whose_tasks_it_includes(
    project: Project, processes: Processes
) -> None:
    backend = open_backend(project.db)
    dead = DeadElsewhere(
        runtime="celery",
        task_id="0b1c-dead",
        job="send_mail",
        queue=project.queue,
        args={"to": "ann@example.com"},
        max_attempts=3,
        created_at=1_800_000_000.0,
        error=ErrorInfo("ConnectionError", "down"),
        attempts=[AttemptElsewhere(1, "w", 1_800_000_000.0, 1_800_000_001.0, "dead")],
    )
    record = record_dead_elsewhere(backend, dead, lambda r: [])
    backend.close()
    app = f"{project.package}.celery:app"
    done = project.jobdef("requeue", str(record.id), "--db", project.db, "--app", app)
    assert (done.returncode, done.stdout, done.stderr) == (0, "requeued 1 job\n", "")
    project.worker(processes, "mailer", "-Q", project.queue)
    eventually(project.marker.exists, 60, "the requeued job to run")
    assert project.marker.read_text(encoding="utf-8") == "ann@example.com"


def test_check_names_each_sheet_queue_no_running_worker_consumes(
    project_on_broker: Project, processes: Processes
) -> None:
    project = project_on_broker
    spec = f"{project.package}.celery:app"
    code, out = project.check()
    assert code == 1
    assert (
        f"infrastructure: no Celery worker answered within 3s, so no worker consumes "
        f"queue(s) '{project.queue}': start one with "
        f"`celery -A {spec} worker -Q {project.queue}`\n"
    ) in out
    assert "infrastructure: ok" not in out

    # A worker started without -Q consumes only Celery's default queue.
    project.worker(processes, "plain")
    code, out = project.check()
    assert code == 1
    assert (
        f"infrastructure: no running Celery worker consumes queue '{project.queue}' (1 worker "
        f"answered, consuming celery): start one with `celery -A {spec} worker -Q "
        f"{project.queue}`, or add {project.queue} to a worker's -Q\n"
    ) in out

    project.worker(processes, "mailer", "-Q", f"{project.queue},celery")
    code, out = project.check()
    assert out.endswith(
        "infrastructure: ok\n1 job(s) checked on celery: 0 with fields not accepted\n"
    )
    assert code == 0


def test_check_names_a_sheet_without_a_task_and_each_celery_setting_that_fights_a_sheet(
    project: Project, processes: Processes
) -> None:
    project.sheet("send_receipt")
    project.tasks(
        TASKS.replace(
            '@sheet_task(app, "send_mail")',
            "@app.task("
            'base=SheetTask, name="send_mail", autoretry_for=(OSError,), retry_backoff=True, '
            "retry_kwargs={{'max_retries': 5}}, max_retries=9, acks_late=False)",
        )
        + '\n\n@app.task(name="send_reciept")\ndef send_reciept() -> None:\n    pass\n'
        # A sheet task without name=: Celery names it after its module.
        + "\n\n@app.task(base=SheetTask)\ndef send_refund(to: str) -> None:\n    pass\n"
    )
    project.sheet("send_refund")
    project.worker(processes, "mailer", "-Q", project.queue)
    code, out = project.check()
    assert code == 1
    found = [line for line in out.splitlines() if line.startswith("infrastructure:")]
    task = "task send_mail (job send_mail)"
    assert found == [
        "infrastructure: job send_receipt (jobdefs/send_receipt.yaml) has no task "
        f"in the Celery app {project.package}.celery:app: define it with "
        "@sheet_task(app, 'send_receipt') in a module the app includes; did you mean "
        "'send_reciept'?",
        "infrastructure: job send_refund (jobdefs/send_refund.yaml) has no task in the Celery "
        f"app {project.package}.celery:app: its task is named {project.package}.tasks."
        "send_refund, after its module: give it name='send_refund' (or "
        "jobdef_job='send_refund')",
        f"infrastructure: {task}: autoretry_for=(<class 'OSError'>,) makes Celery retry on its "
        "own, beside the sheet's retries: remove autoretry_for (the sheet's errors and "
        "max_attempts decide)",
        f"infrastructure: {task}: retry_backoff=True is Celery's retry policy, which the sheet "
        "replaces: remove retry_backoff (the sheet's backoff decides)",
        f"infrastructure: {task}: retry_kwargs={{'max_retries': 5}} is Celery's retry policy, "
        "which the sheet replaces: remove retry_kwargs (the sheet's backoff decides)",
        f"infrastructure: {task}: max_retries=9 disagrees with the sheet's max_attempts 3: "
        "remove max_retries (the sheet's max_attempts decides)",
        f"infrastructure: {task}: acks_late=False loses the message when a worker dies "
        "mid-attempt, and the sheet's retry with it: remove acks_late=False",
    ]


DOCS = Path(__file__).resolve().parents[2] / "docs" / "runtimes.md"


def _block(text: str, first_line: str) -> str:
    """The fenced code block of docs/runtimes.md that starts with ``first_line``."""
    for block in re.findall(r"```\w*\n(.*?)```", text, re.S):
        if block.startswith(first_line):
            return str(block)
    raise AssertionError(f"docs/runtimes.md has no code block starting {first_line!r}")


def test_docs_runtimes_shows_what_check_prints_for_its_layout(
    tmp_path: Path, prefix: str, redis_url: str, processes: Processes
) -> None:
    """The docs' shop/celery.py and shop/tasks.py as they are (on the test's broker, with
    a control exchange of its own), a task left with Celery retry settings, a sheet
    without a task, a worker without -Q: the check prints the docs' lines."""
    docs = DOCS.read_text(encoding="utf-8")
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "__init__.py").write_text("", encoding="utf-8")
    app = _block(docs, "# shop/celery.py\n").replace('"redis://127.0.0.1:6379/0"', repr(redis_url))
    app += f"app.conf.control_exchange = {prefix!r}\n"
    (tmp_path / "shop" / "celery.py").write_text(app, encoding="utf-8")
    tasks = _block(docs, "# shop/tasks.py\n").replace(
        "import sheet_task", "import SheetTask, sheet_task"
    )
    tasks += (
        '\n\n@app.task(base=SheetTask, name="sync_stock", autoretry_for=(OSError,), '
        "retry_backoff=True)\ndef sync_stock() -> None: ...\n"
    )
    (tmp_path / "shop" / "tasks.py").write_text(tasks, encoding="utf-8")
    (tmp_path / "jobdefs").mkdir()
    for name, queue, args in (
        ("send_reservation_mail", "mail", "args:\n  reservation_id: {{type: integer}}\n"),
        ("sync_stock", "default", ""),
        ("send_receipt", "mail", ""),
    ):
        # Each sheet's args fit its task as the docs write it (check compares the two).
        text = SHEET.replace("args:\n  to: {{type: string, required: true}}\n", args)
        (tmp_path / "jobdefs" / f"{name}.yaml").write_text(
            text.format(name=name, handler=f"shop.tasks:{name}", queue=queue), encoding="utf-8"
        )
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(SRC)])}
    command = [sys.executable, "-m", "jobdef", "check", "--runtime", "celery", "--app", "shop"]

    def check() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            command, check=False, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )

    def lines(block: str) -> list[str]:
        return [line for line in block.splitlines() if line.startswith("infrastructure:")]

    done = check()
    (alone,) = lines(_block(docs, "infrastructure: no Celery worker answered"))
    assert alone in done.stdout.splitlines()
    started = processes.start(
        "plain",
        [sys.executable, "-m", "celery", "-A", "shop", "worker", "--pool", "solo",
         "--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", "INFO"],
        env={"PYTHONPATH": env["PYTHONPATH"]},
    )  # fmt: skip
    eventually(lambda: "ready." in started.log(), 60, "the worker to be ready")
    done = check()
    shown = _block(docs, "$ jobdef check --runtime celery --app shop\n")
    assert lines(done.stdout) == lines(shown)
    last = shown.split("\n$ echo")[0].splitlines()[-1]
    assert done.stdout.splitlines()[-1] == last
    assert done.returncode == 1


def test_a_django_project_s_app_loads_the_tasks_of_its_installed_apps(
    tmp_path: Path, prefix: str, redis_url: str
) -> None:
    """Celery's Django layout: ``proj/celery.py`` reads Django's settings and
    ``autodiscover_tasks()`` finds ``tasks.py`` in each installed app; ``--app proj``
    loads them as ``celery -A proj`` does (Django set up first)."""
    pytest.importorskip("django")
    for folder in ("proj", "mailapp", "jobdefs"):
        (tmp_path / folder).mkdir()
    files = {
        "proj/__init__.py": "from .celery import app as celery_app\n",
        "proj/settings.py": (
            f'SECRET_KEY = "test"\nINSTALLED_APPS = ["mailapp"]\nDATABASES = {{}}\n'
            f"CELERY_BROKER_URL = {redis_url!r}\nCELERY_CONTROL_EXCHANGE = {prefix!r}\n"
        ),
        "proj/celery.py": textwrap.dedent(f"""\
            import os

            from celery import Celery
            from jobdef.adapters.celery import configure

            os.environ.setdefault("DJANGO_SETTINGS_MODULE", "proj.settings")
            app = Celery("proj")
            app.config_from_object("django.conf:settings", namespace="CELERY")
            configure(app, sheets="jobdefs", database="sqlite:///jobdef.db", prefix={prefix!r})
            app.autodiscover_tasks()
            """),
        "mailapp/__init__.py": "",
        "mailapp/tasks.py": textwrap.dedent("""\
            from celery import shared_task
            from jobdef.adapters.celery import SheetTask


            @shared_task(base=SheetTask, name="send_mail")
            def send_mail(to: str) -> None: ...
            """),
        "jobdefs/send_mail.yaml": SHEET.format(
            name="send_mail", handler="mailapp.tasks:send_mail", queue=f"{prefix}-mail"
        ),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "jobdef", "check", "--runtime", "celery", "--app", "proj"],
        check=False,
        cwd=tmp_path,
        env=os.environ | {"PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stderr == ""
    found = [line for line in done.stdout.splitlines() if line.startswith("infrastructure:")]
    assert found == [
        f"infrastructure: no Celery worker answered within 3s, so no worker consumes queue(s) "
        f"'{prefix}-mail': start one with `celery -A proj worker -Q {prefix}-mail`"
    ]
