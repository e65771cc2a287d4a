"""The worker's side of finding handlers: the check at start, and a handler gone at runtime.

Handlers are imported from ``sys.path`` as the process has it; the commands put
the configured ``pythonpath`` first (:func:`jobdef.project.use_pythonpath`), and
a worker's child processes start with the worker's ``sys.path``, so the worker's
check, its children and ``jobdef validate --check-imports`` find the same modules.

At start, :func:`check_handlers` refuses a worker whose served queues hold a job
whose handler does not import, is not callable or does not fit its args: every
attempt of those jobs would fail. A handler that disappears later (the code was
changed on disk under a running worker, and a new child no longer imports it) is
the deployment's fault, not the job's: the child reports
:class:`~jobdef.runtime.errors.HandlerUnavailable`, and the worker releases the
job (the attempt is not counted) and drains, saying why in one line per job.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from jobdef.backends.records import ErrorInfo, JobRecord
from jobdef.errors import HandlerError
from jobdef.policy.model import JobPolicy
from jobdef.policy.registry import Registry
from jobdef.runtime.classify import class_name
from jobdef.runtime.errors import HandlerUnavailable
from jobdef.sheets.handlers import handler_problems

UNAVAILABLE = class_name(HandlerUnavailable)


def served(registry: Registry, queues: Sequence[str] | None) -> list[JobPolicy]:
    """The jobs of ``registry`` in ``queues`` (``None``: every queue)."""
    return [p for p in registry if queues is None or p.queue in queues]


def jobless_queues(registry: Registry, queues: Sequence[str] | None) -> list[str]:
    """The named ``queues`` on which no job of ``registry`` runs: a worker takes nothing
    from them (its sheets have no policy for what may be there), most often a typo."""
    used = {policy.queue for policy in registry}
    return sorted({q for q in queues or () if q not in used})


def check_handlers(registry: Registry, queues: Sequence[str] | None) -> None:
    """Raise :class:`HandlerError`, one line per job, when a handler of a served queue
    cannot be called as the worker calls it."""
    lines = []
    for policy in served(registry, queues):
        for problem in handler_problems([policy]):
            lines.append(f"{policy.file}: {problem}" if policy.file else problem)
    if not lines:
        return
    noun = "handler" if len(lines) == 1 else "handlers"
    raise HandlerError(
        f"the worker does not start: {len(lines)} {noun} of the queues it serves cannot be "
        f"called (imported from sys.path, which starts with {sys.path[0] or '.'}):\n"
        + "\n".join(lines)
        + "\nfix the handler, or where handlers are imported from: --pythonpath or "
        "[tool.jobdef] pythonpath (`jobdef validate --check-imports` checks the same)"
    )


def is_unavailable(names: Sequence[str]) -> bool:
    """Whether a failed attempt's error is a handler that no longer imports."""
    return bool(names) and names[0] == UNAVAILABLE


def unavailable_line(record: JobRecord, error: ErrorInfo) -> str:
    """The one log line that says why a job was released instead of failed."""
    return (
        f"job {record.id} ({record.job}) released, attempt not counted: {error.message}; "
        "the code under this worker changed since it started, so it drains and stops; "
        "restart it once the deployment is whole (it checks every handler at start)"
    )
