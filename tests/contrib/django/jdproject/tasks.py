"""The test project's tasks; each runs under the sheet of the same name in jobdefs/."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from django.db import connections, transaction

from jobdef import first_run
from jobdef.contrib.django import JobContext, current_context
from jobdef.contrib.django.compat import PACKAGE

task = __import__(PACKAGE, fromlist=["task"]).task
TaskContext = __import__(PACKAGE, fromlist=["TaskContext"]).TaskContext


def _log(line: str) -> None:
    """One line in the file the test reads (JDPROJECT_LOG), so it sees what ran."""
    with open(os.environ["JDPROJECT_LOG"], "a", encoding="utf-8") as out:
        out.write(line + "\n")


@task()
def send_confirmation(reservation_id: int) -> str:
    ctx = current_context()
    _log(f"confirm {reservation_id} job={ctx.job_id} attempt={ctx.attempt}")
    return "sent"


@task()
def flaky(item: int) -> None:
    _log(f"flaky {item} attempt={current_context().attempt}")
    raise ConnectionError("the mail server at smtp://mailer:hunter2@10.0.0.1 is down")


@task()
def forbidden(item: int) -> None:
    _log(f"forbidden {item}")
    raise PermissionError("the account is closed")


@task(takes_context=True)
def award(context: JobContext, order_id: int, points: int) -> None:
    """Award points once: the key and the points commit together; a re-run does nothing."""
    alias = os.environ.get("JDPROJECT_DB", "default")
    with transaction.atomic(using=alias):
        if not first_run(context, connections[alias]):
            _log(f"award {order_id} skipped attempt={context.attempt}")
            return
        with connections[alias].cursor() as cursor:
            cursor.execute(
                "INSERT INTO jdproject_points (order_id, points) VALUES (%s, %s)",
                [order_id, points],
            )
    _log(f"award {order_id} done attempt={context.attempt}")
    hang = os.environ.get("JDPROJECT_HANG")
    if hang:  # the committed attempt's worker is to be killed before it reports back
        Path(hang).touch()
        time.sleep(60)


@task()
async def ping(item: int) -> None:
    _log(f"ping {item} job={current_context().job_id}")


@task()
def report(item: int, size: int) -> dict[str, object]:
    """Returns a dict: its ``text`` is ``size`` characters long."""
    return {"item": item, "counts": (1, 2), "text": "x" * size, "note": "é"}


@task()
def tally(*counts: int, label: str = "") -> dict[str, object]:
    """Takes ``*args``: its sheet declares them as the one arg ``counts``, a list."""
    return {"label": label, "total": sum(counts)}


@task(takes_context=True)
def introspect(context: TaskContext) -> dict[str, object]:
    """What its context is, as Django's tasks framework defines it."""
    return {
        "task_context": isinstance(context, TaskContext),
        "attempt": context.attempt,
        "result_id": context.task_result.id,
    }


@task()
def unstorable(item: int) -> object:
    """Returns a set, which is not JSON."""
    return {item}


def _signalled(name: str) -> object:
    def receiver(sender: type, task_result: object, **kwargs: object) -> None:
        result: Any = task_result
        value = result.return_value if result.status == "SUCCESSFUL" else None
        errors = [e.exception_class_path for e in result.errors]
        _log(
            f"signal {name} {result.task.name} job={result.backend}:{result.id} "
            f"status={result.status} "
            f"attempts={result.attempts} sender={sender.__name__} "
            f"return={json.dumps(value, sort_keys=True)} errors={','.join(errors)}"
        )
        if os.environ.get("JDPROJECT_SIGNALS") == "raise":
            raise RuntimeError(f"the {name} receiver is broken")

    return receiver


if os.environ.get("JDPROJECT_SIGNALS"):  # set in a worker's environment by a test
    _receivers = [_signalled("started"), _signalled("finished")]
    __import__(f"{PACKAGE}.signals", fromlist=["task_started"]).task_started.connect(_receivers[0])
    __import__(f"{PACKAGE}.signals", fromlist=["task_finished"]).task_finished.connect(
        _receivers[1]
    )


@task()
def shown(month: str, note: str) -> dict[str, object]:
    """Its receipt shows ``month`` and the result's ``file``, never ``note`` or ``path``."""
    return {"file": f"{month}.csv", "path": f"/srv/{note}"}
