"""The enqueue counters of the process that enqueues, in prometheus_client's default registry.

Every enqueue through :class:`jobdef.runtime.queue.Queue` (``enqueue``,
``enqueue_many``, ``jobdef enqueue``, and what is built on them) is counted
here, in the process that made it, so an application that serves its own
``/metrics`` from prometheus_client's default registry (``generate_latest()``,
``make_asgi_app()``, ``start_http_server()``) shows it, and so does
prometheus_client's multiprocess mode (``PROMETHEUS_MULTIPROC_DIR`` set before
the first enqueue, one file per process, summed by a ``MultiProcessCollector``
at scrape time: gunicorn's workers, for one):

- ``jobdef_jobs_enqueued_total{job, queue}``: jobs this process stored (new rows);
- ``jobdef_jobs_enqueue_deduplicated_total{job, queue}``: enqueues that stored
  nothing because an active job with the same idempotency key was there (the call
  returned that job, ``created=False``).

Two counters rather than a label on one: ``jobdef_jobs_enqueued_total`` keeps the
meaning and the labels it has on a worker's ``/metrics`` (the scheduler's slots,
new rows only), so a sum across the application and its workers is the number of
rows stored, and ``rate()`` of it is the load the workers see.

prometheus_client is imported at the first enqueue, not at import (``import
jobdef`` loads nothing of it). Without it, each enqueue costs two attribute
lookups and two tests.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol


class _Stored(Protocol):
    @property
    def created(self) -> bool: ...


_ENQUEUED = "jobdef_jobs_enqueued"
_DEDUPLICATED = "jobdef_jobs_enqueue_deduplicated"
_ENQUEUED_HELP = "Jobs this process enqueued (new rows stored)."
_DEDUPLICATED_HELP = (
    "Enqueues that stored nothing: an active job with the same idempotency key was returned."
)


class _State:
    """The two counters once made (None: not yet, or no prometheus_client); ``looked``:
    whether prometheus_client was looked for."""

    __slots__ = ("children", "counters", "looked")

    def __init__(self) -> None:
        self.counters: tuple[Any, Any] | None = None
        self.looked = False
        # The counters' series by (job, queue): bounded, the names come from the sheets.
        self.children: dict[tuple[str, str], tuple[Any, Any]] = {}


_state = _State()
# Set while the CLI enqueues (from_the_cli).
_FROM_THE_CLI: ContextVar[bool] = ContextVar("jobdef_enqueue_from_the_cli", default=False)
_lock = threading.Lock()


def _load() -> None:
    """Make the two counters in the default registry, once per process, if it can."""
    with _lock:
        if _state.looked:
            return
        try:
            from prometheus_client import Counter
        except ImportError:
            pass
        else:
            labels = ["job", "queue"]
            try:
                _state.counters = (
                    Counter(_ENQUEUED, _ENQUEUED_HELP, labels),
                    Counter(_DEDUPLICATED, _DEDUPLICATED_HELP, labels),
                )
            except ValueError as exc:
                # The names are taken in the default registry (this module reloaded, or
                # the application's own metric): the job is stored, only not counted.
                import logging  # here: only this warning needs it

                logging.getLogger("jobdef.telemetry").warning(
                    "jobdef's enqueue counters are not counted: %s", exc
                )
        _state.looked = True


@contextmanager
def from_the_cli() -> Iterator[None]:
    """While the block runs (``jobdef enqueue``), an enqueue is counted only where a
    scrape can see it: in multiprocess mode (``PROMETHEUS_MULTIPROC_DIR`` set), whose
    files outlive the process, or in a process that imported prometheus_client
    already (one that calls the CLI's ``main`` and serves its own /metrics). A
    process that enqueues and exits has a default registry nobody scrapes, so it
    does not import prometheus_client (a tenth of the command's time). Scoped to
    the block, not the process: whatever enqueues afterwards counts as usual."""
    token = _FROM_THE_CLI.set(True)
    try:
        yield
    finally:
        _FROM_THE_CLI.reset(token)


def _unseen() -> bool:
    """Whether this enqueue, made by the CLI, would be counted where no scrape sees it."""
    return (
        _FROM_THE_CLI.get()
        and not os.environ.get("PROMETHEUS_MULTIPROC_DIR")
        and "prometheus_client" not in sys.modules
    )


def count(job: str, queue: str, results: Sequence[_Stored]) -> None:
    """Count what one enqueue of ``job`` on ``queue`` stored (``results``: one per call)."""
    if not _state.looked:
        if _unseen():
            return
        _load()
    counters = _state.counters
    if counters is None:
        return
    created = sum(1 for result in results if result.created)
    children = _state.children.get((job, queue))
    if children is None:  # labels() costs a lock and a lookup: once per (job, queue)
        enqueued, deduplicated = counters
        children = (enqueued.labels(job, queue), deduplicated.labels(job, queue))
        _state.children[(job, queue)] = children
    if created:
        children[0].inc(created)
    if created != len(results):
        children[1].inc(len(results) - created)
