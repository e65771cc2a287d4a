"""Sending a job that died in Celery or RQ back through its runtime (``jobdef requeue``,
the dashboard), through the application's object: the one ``--app`` names, else the
one ``[tool.jobdef] celery_app`` or ``rq_app`` names (:class:`Targets`).

jobdef's own requeue leaves such a row alone: jobdef's worker must not run a task
written for another runtime. Instead the job is enqueued again through the
adapter (its args checked by the sheet, a new run under the key's task id), and
its dead row is resolved with a note naming the new run, so the history stays.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jobdef.backends.elsewhere import elsewhere
from jobdef.backends.protocol import Backend
from jobdef.backends.records import JobRecord
from jobdef.errors import UsageError
from jobdef.project import Config, use_pythonpath

APP_HINT = "module:obj (the Celery app, or the jobdef.adapters.rq.SheetQueue)"
# Per runtime: the [tool.jobdef] key that names its application object, and that object.
APP_KEYS = {"celery": "celery_app", "rq": "rq_app"}
APP_OBJECTS = {
    "celery": ("module:app", "the Celery app", " (as celery -A takes it)"),
    "rq": ("module:obj", "the jobdef.adapters.rq.SheetQueue", ""),
}


class Targets:
    """The application objects that jobs which died in Celery or RQ go back through: the
    one ``--app`` names (for either runtime), else per runtime the one ``[tool.jobdef]
    celery_app`` or ``rq_app`` names; each loaded when first asked for."""

    def __init__(self, app: str | None, config: Config) -> None:
        self.app = app
        self.config = config
        self._loaded: dict[str, Any] = {}

    def named(self, runtime: str) -> tuple[str, str] | None:
        """``(spec, where it is written)`` of ``runtime``'s object, or None."""
        if self.app is not None:
            return self.app, "--app"
        key = APP_KEYS.get(runtime)
        spec = getattr(self.config, key) if key is not None else None
        return (spec, f"[tool.jobdef] {key}") if spec else None

    def get(self, runtime: str) -> Any | None:
        """The object of ``runtime`` (imported as ``celery -A`` imports an app), or None
        when nothing names one."""
        if runtime not in self._loaded:
            named = self.named(runtime)
            if named is None:
                return None
            from jobdef.adapters.infra import load_object

            use_pythonpath(self.config)  # the project's folder, wherever the command runs
            spec, option = named
            found = load_object(spec, option)
            check_target(found, spec, option)
            self._loaded[runtime] = found
        return self._loaded[runtime]

    def load(self) -> Targets:
        """Load every object named now (a server loads them at start, once)."""
        for runtime in APP_KEYS:
            self.get(runtime)
        return self


def target_for(through: object | None, runtime: str) -> object | None:
    """The object a job that died in ``runtime`` goes back through: ``through`` itself, or
    its object of ``runtime`` when it is :class:`Targets`."""
    return through.get(runtime) if isinstance(through, Targets) else through


def resubmit(target: Any, record: JobRecord) -> str:
    """Enqueue ``record`` again through ``target`` (a configured Celery app, a
    :class:`~jobdef.adapters.rq.SheetQueue`, or :class:`Targets`); the new task or job
    id."""
    found = elsewhere(record)
    if found is None:
        raise UsageError(f"job {record.id} ran on jobdef's worker; requeue it without --app")
    runtime = found[0]
    target = target_for(target, runtime)
    if target is None:
        raise UsageError(needs_app(record, f"jobdef requeue {record.id}"))
    if runtime == "rq":
        from jobdef.adapters.rq import SheetQueue

        if not isinstance(target, SheetQueue):
            raise UsageError(f"job {record.id} died in RQ: --app must name a SheetQueue")
        return str(target.enqueue(record.job, **dict(record.args)).id)
    if runtime == "celery":
        from jobdef.adapters.celery import SheetTask

        tasks = getattr(target, "tasks", None)
        if tasks is None:
            raise UsageError(f"job {record.id} died in Celery: --app must name the Celery app")
        for task in tasks.values():
            if isinstance(task, SheetTask) and (task.jobdef_job or task.name) == record.job:
                return str(task.apply_async(kwargs=dict(record.args)).id)
        raise UsageError(f"the Celery app has no sheet task for job {record.job!r}")
    raise UsageError(f"job {record.id} died in {runtime!r}, which jobdef has no adapter for")


def check_target(target: Any, spec: str, option: str = "--app") -> None:
    """Refuse, in one line, an ``--app`` object no job can be requeued through."""
    try:
        from jobdef.adapters.rq import SheetQueue

        if isinstance(target, SheetQueue):
            return
    except ImportError:  # RQ not installed: the object is not a SheetQueue
        pass
    try:
        from celery import Celery

        if isinstance(target, Celery):
            return
    except ImportError:  # Celery not installed: the object is not a Celery app
        pass
    where = f"--app {spec!r}" if option == "--app" else f"{option} = {spec!r}"
    raise UsageError(f"{where} is a {type(target).__name__}; name {APP_HINT}")


def requeue_through(
    target: Any, record: JobRecord, resolve: Callable[[int, str], object], by: str = ""
) -> str:
    """Resubmit ``record`` through ``target``, then resolve its dead row (``resolve``, the
    backend's verb) with a note naming the new run and ``by`` whom; the new id."""
    runtime = (elsewhere(record) or ("?", ""))[0]
    new_id = resubmit(target, record)
    resolve(record.id, f"requeued to {runtime} as {new_id}{f' by {by}' if by else ''}")
    return new_id


def needs_app(record: JobRecord, where: str) -> str:
    """Why ``record`` (a job that died in another runtime) was not requeued: no
    application object to send it through; ``where`` says how to give one once (such as
    ``jobdef requeue 12``), beside ``[tool.jobdef]`` for good."""
    runtime, _, task_id = (record.worker_id or "").partition("/")
    gone = f"job {record.id} died in {runtime} (task {task_id}) and goes back only through"
    if runtime not in APP_KEYS:
        return f"{gone} {runtime}: {where} --app {APP_HINT}"
    form, what, how = APP_OBJECTS[runtime]
    return (
        f"{gone} {runtime}: name {what} in pyproject.toml, [tool.jobdef] "
        f'{APP_KEYS[runtime]} = "{form}"{how}, or {where} --app {form}'
    )


def requeue_elsewhere(backend: Backend, target: Any, records: list[JobRecord]) -> int:
    """Resubmit each record and resolve its dead row; how many went back."""
    for record in records:
        requeue_through(target, record, backend.resolve)
    return len(records)
