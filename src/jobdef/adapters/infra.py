"""What the sheets need of a runtime's infrastructure, checked against the live one.

``jobdef check --runtime ... --app APP`` loads the application's object (a configured
Celery app, or a :class:`~jobdef.adapters.rq.SheetQueue`; see :func:`load_object`)
and asks:

- Celery: is the app configured for jobdef, does the run store answer, has every
  sheet a task in the app (and does no task keep a Celery retry or ack setting that
  fights its sheet), does a running worker consume every sheet's queue (as
  ``celery inspect active_queues`` tells), and does the broker's
  ``visibility_timeout`` (Redis, SQS) outlast the worst timeout plus the longest
  countdown of the sheets (else a held retry is delivered twice)?
- RQ: does the SheetQueue's own Redis connection answer, does every sheet's queue
  have a worker, and does one of them run the scheduler (retries with a wait need it)?

Each problem is one line saying what to change.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from jobdef.errors import UsageError
from jobdef.policy.backoff import delay_range
from jobdef.policy.durations import format_duration
from jobdef.policy.model import JobPolicy
from jobdef.redact import redact
from jobdef.sheets.files import shown_path
from jobdef.sheets.words import did_you_mean

INSPECT_TIMEOUT = 3.0
"""Seconds the running Celery workers have to say which queues they consume."""

APP_FORMS = "module:app, module.app or module (as celery -A takes it)"


def load_object(spec: str, option: str = "--app") -> Any:
    """The object ``--app spec`` names, loaded from the current folder and the path;
    ``option``: where ``spec`` was written (``[tool.jobdef] celery_app``), which the
    one line of a spec that does not load names.

    A Celery app is found and loaded as ``celery -A spec`` does: ``module:attr``,
    ``module.attr``, or a module (its ``app`` or ``celery``, its ``.celery`` submodule,
    or the one Celery app in it: Celery's own ``find_app``); then the modules the app
    names (``include``, ``imports``, ``autodiscover_tasks``) are imported, as a worker
    imports them at start, so every task they register is in ``app.tasks``.
    """
    try:
        return _load_object(spec)
    except UsageError as exc:
        if option == "--app":
            raise
        message = exc.message.replace(f"--app {spec!r}", f"{option} = {spec!r}", 1)
        raise UsageError(message) from None


def _load_object(spec: str) -> Any:
    if not spec or spec.startswith((":", ".")) or spec.endswith((":", ".")):
        raise UsageError(f"--app {spec!r}: write {APP_FORMS}, e.g. --app shop.celery:app")
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    module, attribute = _import_named(spec)
    try:
        from celery import Celery
        from celery.app.utils import find_app
    except ImportError:  # Celery not installed: module:attribute, looked up here
        return _attribute(spec, module, attribute)
    try:
        found = find_app(spec)
    except (AttributeError, ImportError):
        if attribute:
            raise UsageError(f"--app {spec!r}: {module} has no {attribute}") from None
        raise UsageError(
            f"--app {spec!r}: {module} has no Celery app (no app, no celery, no "
            f"{module}.celery); name the object: --app {module}:app"
        ) from None
    except (Exception, SystemExit) as exc:  # an import it makes may fail in any way
        raise UsageError(_failed(spec, module, exc)) from None
    if isinstance(found, Celery):
        _import_tasks(spec, found)
    return found


def _import_named(spec: str) -> tuple[str, str]:
    """Import the module of ``spec``; ``(module, attribute)`` (attribute may be empty)."""
    module, sep, attribute = spec.partition(":")
    if not sep and "." in spec:
        try:
            importlib.import_module(spec)
        except ModuleNotFoundError as exc:
            if exc.name != spec:
                raise UsageError(_failed(spec, spec, exc)) from None
            module, _, attribute = spec.rpartition(".")
        except (Exception, SystemExit) as exc:  # the application's import may fail in any way
            raise UsageError(_failed(spec, spec, exc)) from None
        else:
            return spec, ""
    try:
        importlib.import_module(module)
    except (Exception, SystemExit) as exc:  # the application's import may fail in any way
        raise UsageError(_failed(spec, module, exc)) from None
    return module, attribute


def _failed(spec: str, module: str, exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"--app {spec!r}: importing {module} called sys.exit({redact(str(exc.code))})"
    if isinstance(exc, ModuleNotFoundError) and exc.name == module.partition(".")[0]:
        return (
            f"--app {spec!r}: no module named {module}; run from the project's folder "
            "or put it on PYTHONPATH"
        )
    return f"--app {spec!r}: importing {module} failed: {redact(str(exc))}"


def _attribute(spec: str, module: str, attribute: str) -> Any:
    if not attribute:
        raise UsageError(f"--app {spec!r}: write module:attribute, e.g. --app shop.tasks:app")
    obj: Any = sys.modules[module]
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UsageError(f"--app {spec!r}: {module} has no {attribute}") from None
    return obj


def _import_tasks(spec: str, app: Any) -> None:
    """Import the task modules of ``app`` as ``celery worker`` does at start."""
    try:
        app.loader.import_default_modules()
    except (Exception, SystemExit) as exc:  # a task module's import may fail in any way
        what = f"sys.exit({exc.code})" if isinstance(exc, SystemExit) else str(exc)
        raise UsageError(
            f"--app {spec!r}: importing the app's task modules (include, imports, "
            f"autodiscover_tasks) failed: {redact(what)}"
        ) from None


def longest_countdown(job: JobPolicy) -> float:
    """The longest wait a retry of ``job`` is held for, in seconds."""
    return max((delay_range(job.backoff, n)[1] for n in range(1, job.max_attempts)), default=0.0)


def _ping(url: str) -> str | None:
    try:
        import redis

        redis.Redis.from_url(url, socket_connect_timeout=3).ping()
    except Exception as exc:  # any failure to reach it is the finding
        return f"the run store at {redact(url)} does not answer: {redact(str(exc))}"
    return None


def celery_problems(app: Any, jobs: Sequence[JobPolicy], spec: str = "APP") -> list[str]:
    """What falls short for ``jobs`` in the Celery app ``app`` (``--app spec``)."""
    from celery import Celery

    from jobdef.adapters.celery import SheetTask, settings_of, visibility_timeout

    if not isinstance(app, Celery):
        return [f"--app must name a Celery app (celery.Celery), not {type(app).__name__}"]
    try:
        settings = settings_of(app)
    except UsageError as exc:
        return [str(exc)]
    tasks = {name: task for name, task in app.tasks.items() if not name.startswith("celery.")}
    served: dict[str, list[Any]] = {}
    for task in tasks.values():
        if isinstance(task, SheetTask):
            served.setdefault(task.jobdef_job or task.name, []).append(task)
    problems = [_no_task(job, spec, tasks, served) for job in jobs if job.name not in served]
    sheets = {job.name: job for job in jobs}
    for name, found in sorted(served.items()):
        for task in found:
            if name in sheets:
                problems.extend(_overrides(task, sheets[name]))
                problems.extend(_parameters(task, sheets[name]))
    # The checks below concern the jobs the app runs (all of them, when it has none).
    jobs = [job for job in jobs if job.name in served] or list(jobs)
    if (problem := _ping(settings.redis)) is not None:
        problems.append(problem)
    problems.extend(_unconsumed(app, jobs, spec))
    limit = visibility_timeout(app)
    if limit is not None and jobs:
        worst = max(jobs, key=lambda j: j.timeout + longest_countdown(j))
        need = worst.timeout + longest_countdown(worst)
        if limit <= need:
            problems.append(
                f"the broker's visibility_timeout is {format_duration(limit)}, not longer than "
                f"{worst.name}'s timeout plus its longest countdown ({format_duration(need)}): "
                "the broker would deliver a held retry a second time; raise "
                "broker_transport_options['visibility_timeout'] above it"
            )
    return problems


def _no_task(job: JobPolicy, spec: str, tasks: Mapping[str, Any], served: Mapping[str, Any]) -> str:
    """The line for ``job``, which no sheet task of the app runs."""
    where = f"job {job.name} ({shown_path(job.file)}) has no task in the Celery app {spec}"
    for name in served:
        if name.rpartition(".")[2] == job.name:
            # @app.task(base=SheetTask) without name=: Celery names it module.function.
            return (
                f"{where}: its task is named {name}, after its module: give it "
                f"name={job.name!r} (or jobdef_job={job.name!r})"
            )
    return (
        f"{where}: define it with @sheet_task(app, {job.name!r}) in a module the app "
        f"includes{did_you_mean(job.name, tasks)}"
    )


# Celery's own retry settings: the sheet decides every retry, so any of these left on
# a sheet task is at best dead and at worst (autoretry_for) a second retry policy.
_CELERY_RETRY = ("retry_backoff", "retry_backoff_max", "retry_jitter", "retry_kwargs")


def _overrides(task: Any, job: JobPolicy) -> Iterator[str]:
    """One line per setting of ``task`` that fights (or pretends to set) its sheet."""
    from jobdef.adapters.celery import time_limits

    declared = _declared(task)
    where = f"task {task.name} (job {job.name})"
    if declared.get("autoretry_for"):
        yield (
            f"{where}: autoretry_for={declared['autoretry_for']!r} makes Celery retry on its "
            "own, beside the sheet's retries: remove autoretry_for (the sheet's errors and "
            "max_attempts decide)"
        )
    for name in _CELERY_RETRY:
        if name in declared:
            yield (
                f"{where}: {name}={declared[name]!r} is Celery's retry policy, which the sheet "
                f"replaces: remove {name} (the sheet's backoff decides)"
            )
    if "default_retry_delay" in declared:
        yield (
            f"{where}: default_retry_delay={declared['default_retry_delay']!r} is never used: "
            "remove it (the sheet's backoff decides)"
        )
    retries = declared.get("max_retries", job.max_attempts - 1)
    if retries != job.max_attempts - 1:
        yield (
            f"{where}: max_retries={retries!r} disagrees with the sheet's max_attempts "
            f"{job.max_attempts}: remove max_retries (the sheet's max_attempts decides)"
        )
    for name in ("acks_late", "reject_on_worker_lost"):
        if not getattr(task, name, True):
            yield (
                f"{where}: {name}=False loses the message when a worker dies mid-attempt, "
                f"and the sheet's retry with it: remove {name}=False"
            )
    soft, hard = time_limits(job)
    for name, sheet_value in (("soft_time_limit", soft), ("time_limit", hard)):
        value = declared.get(name)
        if value is not None and value != sheet_value:
            timeout = format_duration(job.timeout)
            yield (
                f"{where}: {name}={value!r} is not the sheet's ({format_duration(sheet_value)}"
                f" from timeout {timeout}), which every message carries: remove {name}"
            )
    queue = declared.get("queue")
    if queue is not None and queue != job.queue:
        yield (
            f"{where}: queue={queue!r} is not the sheet's queue {job.queue!r}, where every "
            "message goes: remove queue, or change the sheet's queue"
        )


def _parameters(task: Any, job: JobPolicy) -> Iterator[str]:
    """A line when a Celery worker's call of ``task``, its function with the args alone,
    does not fit the sheet's args. ``jobdef validate --check-imports`` checks the task
    when the sheet's handler names it; this checks it when the handler names another
    function (one jobdef's worker runs, the same sheet run on both)."""
    from jobdef.sheets.handlers import fit_problem

    function = getattr(task.run, "__name__", task.name)
    problem = fit_problem(task.run, f"{task.name}:{function}", job.args_schema, ctx=False)
    if problem is not None:
        yield (
            f"task {task.name} (job {job.name}): a Celery worker calls {function}(**args), "
            f"and its parameters do not fit the sheet's args: {problem}"
        )


def _declared(task: Any) -> Mapping[str, Any]:
    """The attributes set on ``task``'s own classes (``@app.task(...)`` options, a
    subclass of SheetTask), not inherited from SheetTask or Celery's Task."""
    from jobdef.adapters.celery import SheetTask

    found: dict[str, Any] = {}
    for cls in type(task).__mro__:
        if cls is SheetTask or not issubclass(cls, SheetTask):
            break
        for name, value in vars(cls).items():
            found.setdefault(name, value)
    return found


def _unconsumed(app: Any, jobs: Sequence[JobPolicy], spec: str) -> list[str]:
    """The sheets' queues that no running worker of ``app``'s broker consumes, as
    ``celery inspect active_queues`` tells."""
    queues = sorted({job.queue for job in jobs})
    start = f"`celery -A {spec} worker -Q {','.join(queues)}`"
    try:
        with app.connection_for_read() as connection:
            connection.ensure_connection(max_retries=1, timeout=INSPECT_TIMEOUT)
            replies = app.control.inspect(
                timeout=INSPECT_TIMEOUT, connection=connection
            ).active_queues()
    except Exception as exc:  # any failure to reach it is the finding
        return [
            f"the Celery broker at {redact(str(app.conf.broker_url))} does not answer: "
            f"{redact(str(exc))}"
        ]
    if not replies:
        return [
            f"no Celery worker answered within {format_duration(INSPECT_TIMEOUT)}, so no worker "
            f"consumes queue(s) {', '.join(map(repr, queues))}: start one with {start}"
        ]
    consumed: dict[str, list[str]] = {}
    for worker, answer in sorted(replies.items()):
        for queue in answer or ():
            consumed.setdefault(str(queue.get("name")), []).append(worker)
    taken = ", ".join(sorted(consumed)) or "no queue"
    answered = f"{len(replies)} worker{'s' if len(replies) != 1 else ''} answered"
    return [
        f"no running Celery worker consumes queue {queue!r} ({answered}, consuming {taken}): "
        f"start one with `celery -A {spec} worker -Q {queue}`, or add {queue} to a worker's -Q"
        for queue in queues
        if queue not in consumed
    ]


def rq_problems(target: Any, jobs: Sequence[JobPolicy]) -> list[str]:
    from rq import Queue, Worker

    from jobdef.adapters.rq import SheetQueue

    if not isinstance(target, SheetQueue):
        return [f"--app must name a jobdef.adapters.rq.SheetQueue, not {type(target).__name__}"]
    connection = target.connection
    try:
        connection.ping()
    except Exception as exc:  # any failure to reach it is the finding
        return [f"the SheetQueue's Redis does not answer: {redact(str(exc))}"]
    problems: list[str] = []
    for name in sorted({job.queue for job in jobs}):
        queue = Queue(name, connection=connection)
        if not Worker.all(connection=connection, queue=queue):
            problems.append(
                f"no RQ worker listens on queue {name!r}: start "
                f"`rq worker --with-scheduler -w jobdef.adapters.rq.SheetWorker {name}`"
            )
            continue
        waits = any(job.max_attempts > 1 for job in jobs if job.queue == name)
        if waits and not connection.exists(f"rq:scheduler-lock:{name}"):
            problems.append(
                f"no RQ worker on queue {name!r} runs the scheduler, so retries after a wait "
                "never start: start one with --with-scheduler"
            )
    return problems
